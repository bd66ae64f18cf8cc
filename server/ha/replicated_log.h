// The replicated log of one admission domain, kept in etcd (docs/high-availability.md): the
// leader appends each committed batch under /admitd/<domain>/log/, fenced by its leadership and by
// a fence key of its own; every replica reads the log back and applies it to its local store.
//
// Fencing. Besides the leadership comparison (LeaderElection::FencedTxn), every append compares
// the mod revision of /admitd/<domain>/log-fence with the one this log last set there (TakeOver).
// A transaction whose answer never came (etcd lost quorum, the call timed out) may still be
// applied later; TakeOver moves the fence first, so such a transaction either landed before it
// (and TakeOver's read sees it) or fails its comparison: the log never gains a write its leader
// did not account for.
//
// Trimming. The leader deletes the batches every live replica has applied (Trim) and records how
// far in /admitd/<domain>/log-trimmed; a store whose revision is below that point cannot catch
// up from the log any more (CatchUp refuses with FAILED_PRECONDITION) and is bootstrapped from a
// snapshot of the leader's store. /admitd/<domain>/log-id names the log, set by its first
// leader: a store that followed another log (a data dir of another domain, an etcd started
// afresh) is refused the same way.
//
// A batch larger than one etcd request (max_chunk_bytes) is cut into parts written by several
// transactions; readers apply a batch only once all its parts are there, and TakeOver deletes
// the parts of a batch its leader left incomplete, which no caller was told had committed.
//
// Appends overlap (AppendAsync): the leader has several batches on their way to etcd at once, so
// that etcd, which commits concurrent requests together, takes more of them per second. etcd may
// take a later batch before an earlier one; each batch names the one before it, readers apply
// only a contiguous log and stop before a batch whose predecessor is missing, and TakeOver
// deletes such a batch (its predecessor failed, so no caller was told it had committed).
//
//   ReplicatedLog log(etcd, &election, {.domain = "prod"});
//   ADMITD_RETURN_IF_ERROR(log.TakeOver(local));  // once elected: the fence, then catch up
//   ADMITD_RETURN_IF_ERROR(log.Append(batch));     // then local->Commit(batch)
//   log.AppendAsync(next, [](absl::Status s) { ... });  // or without waiting
//   log.CatchUp(follower_store);                   // on the other replicas
//
// Thread safety: Append, AppendAsync and TakeOver are called by one thread (the leader's
// committer); Trim and ReadState from any; CatchUp from any thread on a store nobody else
// commits to.
#ifndef ADMITD_SERVER_HA_REPLICATED_LOG_H_
#define ADMITD_SERVER_HA_REPLICATED_LOG_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/ha/etcd_client.h"
#include "server/ha/leader_election.h"
#include "store/store.h"

namespace admitd::ha {

struct LogOptions {
  std::string domain;
  // etcd refuses requests over 1.5 MiB (--max-request-bytes) and transactions of more than 128
  // operations (--max-txn-ops) by default; one append's transaction stays below both.
  size_t max_chunk_bytes = 1 << 20;
  size_t max_txn_bytes = 1 << 20;
  size_t max_txn_ops = 64;
  // Keys read per etcd range while catching up: at most this many chunks' bytes in one answer.
  int64_t read_page_keys = 16;
};

class ReplicatedLog {
 public:
  // `etcd` and `election` outlive the log; `election` may be null on a replica that only reads.
  ReplicatedLog(EtcdClient* etcd, LeaderElection* election, LogOptions options);
  ReplicatedLog(ReplicatedLog&& other) noexcept
      : etcd_(other.etcd_),
        election_(other.election_),
        options_(other.options_),
        fence_revision_(other.fence_revision_.load()),
        previous_(other.previous_) {}

  // Makes this replica, which leads, the log's writer: moves the fence (see above), applies to
  // `local` every complete batch after its revision, and deletes what follows (parts of an
  // incomplete batch). Afterwards `local` holds exactly the log and Append may be called.
  // FAILED_PRECONDITION when this replica does not lead; ABORTED when it stopped leading;
  // UNAVAILABLE or DEADLINE_EXCEEDED when etcd did not answer; DATA_LOSS when the log cannot be
  // read back; a commit error of `local`.
  absl::Status TakeOver(store::Store* local);

  // Appends `batch` (its revision above everything appended before). OK once etcd has committed
  // every part. ABORTED (nothing of it will ever count) when this replica no longer leads or
  // another TakeOver moved the fence; otherwise, on an error, the batch may or may not be in the
  // log, and only TakeOver may be called next (every append still on its way fails, or lands
  // and is settled by TakeOver).
  absl::Status Append(const store::Batch& batch);
  // Append without waiting: `done` gets Append's answer once, on one of gRPC's threads or on the
  // calling one. The batch counts only once every batch appended before it has succeeded too.
  // A batch of several transactions is written once the appends before it have answered, and
  // the call returns after it.
  void AppendAsync(const store::Batch& batch, std::function<void(absl::Status)> done);

  // Applies to `local` every complete batch of the log after local->revision(), in order; the
  // number applied. A batch still incomplete at the end, and a batch whose predecessor is not
  // in the log (still on its way) with all that follows it, are left for a later call.
  // FAILED_PRECONDITION, with nothing applied, when the log was trimmed past local->revision()
  // or, with `log_id` given, when the log is another one: `local` must be bootstrapped.
  absl::StatusOr<uint64_t> CatchUp(store::Store* local, const std::string& log_id = "");

  // What names the log and how far it was trimmed.
  struct State {
    std::string id;        // "" before its first leader
    uint64_t trimmed = 0;  // batches up to this revision are gone from the log
  };
  absl::StatusOr<State> ReadState();

  // The leader, which took the log over: deletes the batches up to revision `upto` (every live
  // replica has them) and compacts etcd's history up to the deletion, so that etcd's size stays
  // bounded. ABORTED when another TakeOver moved the fence; an etcd error otherwise.
  absl::Status Trim(uint64_t upto);

  // The keys of `domain`'s fence, identity and trim point.
  static std::string FenceKey(const std::string& domain);
  static std::string IdKey(const std::string& domain);
  static std::string TrimmedKey(const std::string& domain);

 private:
  EtcdClient* const etcd_;
  LeaderElection* const election_;
  const LogOptions options_;
  // Reads the state at etcd's revision `at` (0: the latest); the revision read at.
  absl::StatusOr<State> ReadStateAt(int64_t at, int64_t* read_at);
  // An append's answer from etcd's answer to one of its transactions; a failure stops appends
  // until TakeOver.
  absl::Status Settle(const absl::StatusOr<etcdserverpb::TxnResponse>& answer, uint64_t revision);

  // The fence key's mod revision this log set; 0 before TakeOver. Read by Trim on another thread.
  std::atomic<int64_t> fence_revision_{0};
  // The revision of the last batch appended (the next one's predecessor); the committer's.
  uint64_t previous_ = 0;
  absl::Mutex mu_;
  int appending_ ABSL_GUARDED_BY(mu_) = 0;  // single-transaction appends not yet answered
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_REPLICATED_LOG_H_
