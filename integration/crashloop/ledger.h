// What admitd-crashloop's clients know about the objects they drive, from the answers they got:
// for every object, the state its last acknowledged write left it in and, when a write was cut
// off (the server was killed, the call timed out), the state that write would have left it in.
// After a restart the checker accepts either, and the client goes on from the one it finds.
//
// Thread safety: a WorkerLedger belongs to one worker thread while a round's load runs; the
// checker reads and resolves all of them between rounds, when no worker runs.
#ifndef ADMITD_INTEGRATION_CRASHLOOP_LEDGER_H_
#define ADMITD_INTEGRATION_CRASHLOOP_LEDGER_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace admitd::crashloop {

inline constexpr char kNamespace[] = "crash";

// The writes the load makes, counted when acknowledged.
enum class Op { kSubmit, kImport, kResize, kFinish, kReclaim, kDelete, kReportPods, kCount };
const char* OpName(Op op);

struct OpCounts {
  std::array<int64_t, static_cast<size_t>(Op::kCount)> n{};
  int64_t& operator[](Op op) { return n[static_cast<size_t>(op)]; }
  int64_t operator[](Op op) const { return n[static_cast<size_t>(op)]; }
  void Add(const OpCounts& other);
  int64_t Total() const;
  // "submit 12, import 3, ..." (every kind, zeros included).
  std::string ToString() const;
};

// A workload the load submitted or imported.
struct WorkloadState {
  enum Phase { kAbsent, kLive, kFinished };
  Phase phase = kAbsent;
  int reclaimable = 0;       // pods of pod set "main" acknowledged reclaimable
  bool holds_quota = false;  // an answer showed it holding quota: it keeps it until finished
  bool operator==(const WorkloadState& o) const {
    return phase == o.phase && reclaimable == o.reclaimable && holds_quota == o.holds_quota;
  }
};

// An elastic Job (its workload chain).
struct JobState {
  bool exists = false;
  int count = 0;      // pods of the job's newest live workload
  std::string slice;  // the slice an acknowledged scale-up created, when known
  bool operator==(const JobState& o) const {
    return exists == o.exists && count == o.count && slice == o.slice;
  }
};

// A pod group reported through PodService, as its shim last reported its pods.
struct GroupState {
  enum Phase { kAbsent, kCreated, kRunning, kFinished };
  Phase phase = kAbsent;
  bool operator==(const GroupState& o) const { return phase == o.phase; }
};

template <typename State>
struct Tracked {
  State acked;
  std::optional<State> cut_off;  // a write whose answer never came
  bool done = false;             // nothing more to do with it (still checked)
  bool broken = false;           // a check failed: reported once, then left alone
  // Usable by the load: not waiting for a restart to say whether a write happened.
  bool Ready() const { return !done && !broken && !cut_off.has_value(); }
};

struct TrackedWorkload : Tracked<WorkloadState> {
  std::string name, uid, queue;
  bool imported = false;
  int count = 1;  // pods of "main"
};

struct TrackedJob : Tracked<JobState> {
  int number = 0;  // Job "job-<number>", uid "uid-<number>"
  std::string queue;
  int64_t generation = 1;  // the last generation sent (acknowledged or not)
};

struct TrackedGroup : Tracked<GroupState> {
  std::string name, queue;
  int pods = 2;
  bool ungate_seen = false;  // the server asked to ungate its pods (not kept across restarts)
};

// Everything one worker drives; it lives for the whole run.
struct WorkerLedger {
  int worker = 0;
  std::string prefix;   // makes the worker's names unique in the run
  std::string cluster;  // its pods' cluster (PodService)
  std::vector<TrackedWorkload> workloads;
  std::vector<TrackedJob> jobs;
  std::vector<TrackedGroup> groups;
  int64_t next_name = 0;
  int64_t resource_version = 0;  // of its pods; only grows

  // This round's figures, reset by the round.
  OpCounts acked;
  int64_t reads = 0;
  int64_t cut_off = 0;                // writes whose answer never came
  std::vector<std::string> refusals;  // valid writes the server refused
};

}  // namespace admitd::crashloop

#endif  // ADMITD_INTEGRATION_CRASHLOOP_LEDGER_H_
