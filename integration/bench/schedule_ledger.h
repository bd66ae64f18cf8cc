// The bookkeeping of one scheduled run of a generator config, shared by the run against a
// server (schedule_run) and the one through the engine in virtual time (simulate_run): the
// requests that set up the queues and submit and release each workload, each workload's
// lifecycle as read from its observed states, the quota invariants and the run's report.
//
// Thread safety: none; the run against a server calls it under its own lock.
#ifndef ADMITD_INTEGRATION_BENCH_SCHEDULE_LEDGER_H_
#define ADMITD_INTEGRATION_BENCH_SCHEDULE_LEDGER_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/queue_service.pb.h"
#include "integration/bench/bench_common.h"
#include "integration/bench/bench_config.h"

namespace admitd::bench {

// The conditions the ledger reads off a workload, for ADMITD_BENCH_TRACE: Q (quota reserved,
// with an admission), E (evicted), F (finished), "-" for none, then "@" and when the
// reservation's condition last changed.
std::string LedgerFlags(const v1::Workload& wl);

struct ClassReport {
  std::string name;
  int count = 0;
  int admissions = 0;
  int evictions = 0;
  Summary time_to_admission_ms;
};

struct CqClassReport {
  std::string name;
  int cluster_queues = 0;
  double usage_percent = 0;
  int64_t peak_milli = 0;  // highest usage of one ClusterQueue of the class
};

struct RunReport {
  int workloads = 0;
  int finished = 0;
  double scale = 1;
  double wall_ms = 0;
  double work_bound_ms = 0;     // scaled
  double arrival_bound_ms = 0;  // scaled
  double lower_bound_ms() const { return std::max(work_bound_ms, arrival_bound_ms); }
  double ratio() const { return lower_bound_ms() > 0 ? wall_ms / lower_bound_ms() : 0; }
  double setup_ms = 0;
  std::vector<CqClassReport> cq_classes;
  std::vector<ClassReport> classes;
  Summary submit_rpc_ms;
  Summary release_rpc_ms;
  int64_t rpc_errors = 0;
  int64_t refused_retried = 0;  // calls admitd refused unrun (overloaded), sent again
  int watch_reconnects = 0;
  int64_t events = 0;
  int64_t quota_checks = 0;  // commits at whose end the quota invariants were checked
  int64_t violation_count = 0;
  std::vector<std::string> violations;  // the first few
  // A run through the engine alone in virtual time (wall_ms is then virtual): no RPCs, no
  // watch; instead the CPU time it took and how many batches and scheduling cycles it ran.
  bool simulated = false;
  double cpu_ms = 0;
  int64_t batches = 0;
  int64_t cycles = 0;
  bool ok() const { return violation_count == 0 && finished == workloads && rpc_errors == 0; }
};

// Prints the report of a run (against a server, or simulated) and whether its invariants held
// ("invariants: OK" or "invariants: FAILED").
void PrintRunReport(const RunReport& report);

// The requests of a run, named for error messages: the ResourceFlavor, the cohorts, and each
// ClusterQueue followed by its LocalQueue, in the order they are applied.
std::vector<std::pair<std::string, v1::ApplyRequest>> SetupRequests(const Plan& plan);
// Workload i of the plan, submitted to its ClusterQueue's LocalQueue.
v1::SubmitRequest SubmitRequestFor(const Plan& plan, int i);
// Its end: finished (succeeded), or stopped after an eviction so that it requeues.
v1::ReleaseQuotaRequest ReleaseRequestFor(const Plan& plan, int i, bool finished);

// What one observed state of a workload asks of the run.
struct Observation {
  bool admitted = false;    // a new admission: finish it after its runtime (this generation)
  uint32_t generation = 0;
  bool stop = false;        // its admission was evicted: release it with `stopped`
};

class ScheduleLedger {
 public:
  explicit ScheduleLedger(const Plan& plan);

  // The plan's index of workload "namespace/name", or -1 when it is not this run's.
  int Find(const std::string& key) const;

  // Workload i was submitted at `at`.
  void Submitted(int i, absl::Time at);
  // Reads the state of workload i as one commit left it, seen at `at`. States are
  // level-triggered: several transitions may show as one, so they are derived from the
  // conditions; a new admission is recognised by a new QuotaReserved transition time.
  Observation Observe(int i, const v1::Workload& wl, absl::Time at);
  // The finish timer of admission `generation` of workload i fired: true (and the admission is
  // marked finishing) when it is still the current one and was not evicted.
  bool BeginFinish(int i, uint32_t generation);
  // ReleaseQuota(stopped) of workload i was applied: the next state observed is after it, so
  // one that holds quota again is a new admission even at the same transition time (in
  // virtual time the readmission may happen at the very instant of the release).
  void StopApplied(int i);

  // Checks the quota of every ClusterQueue (and its cohort) changed since the last check. To be
  // called at the end of each commit: only there do the states observed add up to a server's.
  void CheckQuota();
  void Violation(std::string what);

  size_t finished() const { return finished_; }
  absl::Time last_finish() const { return last_finish_; }
  int64_t quota_checks() const { return checks_; }
  int64_t violation_count() const { return violation_count_; }
  const std::vector<std::string>& violations() const { return violations_; }

  // Checks the lifecycle invariants over the whole run and fills `report`'s finished count,
  // quota checks, workload and ClusterQueue classes and violations; report->wall_ms must be set.
  void Report(RunReport* report);

 private:
  struct WorkloadRun {
    enum Phase : uint8_t { kNew, kPending, kHeld, kDone };
    Phase phase = kNew;
    bool evicted = false;    // the current admission was evicted
    bool finishing = false;  // Finished was sent for the current admission
    bool stopped = false;    // ReleaseQuota(stopped) of the current admission was applied
    uint32_t generation = 0;  // admissions so far; a finish timer names the one it belongs to
    int admissions = 0;
    int evictions = 0;
    int requeues = 0;
    int finishes = 0;
    absl::Time submitted;
    absl::Time admitted;
    int64_t stamp = 0;  // QuotaReserved transition time of the current admission, ns
    double time_to_admission_ms = -1;  // of the last admission, as Kueue's recorder counts it
  };

  void Charge(int i, int sign, absl::Time at);

  const Plan& plan_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int> cq_cohort_;
  std::vector<int64_t> cq_limit_;
  std::vector<WorkloadRun> runs_;
  std::vector<int64_t> cq_used_, cq_peak_, cohort_used_, cohort_limit_;
  std::vector<double> cq_cpu_ms_;
  std::vector<int> dirty_;  // ClusterQueues whose usage changed since the last check
  absl::Time last_finish_ = absl::InfinitePast();
  size_t finished_ = 0;
  int64_t checks_ = 0;
  int64_t violation_count_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SCHEDULE_LEDGER_H_
