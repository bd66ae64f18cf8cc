// The leader's store in an HA group (docs/high-availability.md): a store::Store whose Commit
// appends the batch to the replicated log in etcd first and to the replica's local store (its
// RocksDB) second, so that a batch is acknowledged only once a majority of etcd's members has it,
// and the local store never holds a batch the log lacks.
//
// Failures follow the Store contract, so the sequencer's repair loop (refuse calls, Recover with
// backoff, reload the engine from the store) serves HA too:
// - etcd unreachable or without quorum: Commit answers UNAVAILABLE; the batch may have reached
//   the log. Recover() takes the log over again (ReplicatedLog::TakeOver): the fence moves, what
//   landed is applied locally, the rest can never land. Until etcd answers, Recover fails and the
//   calls stay refused; they are taken again by themselves once it does.
// - this replica deposed: Commit and Recover answer UNAVAILABLE ("not the leader"); the process
//   steps down (LeaderElection's on_lost).
// - the local disk refuses: as for RocksDB alone; Recover() recovers the local store, then takes
//   the log over (which applies the batch the log has and the disk refused).
//
// Commit also refuses (INVALID_ARGUMENT, nothing written anywhere) a batch that changes something
// without a revision above revision(): the log is keyed by revision. The engine gives every change
// a new revision, so the sequencer never sends one.
//
// The sequencer commits through pipeline() (store::CommitPipeline): up to `depth` batches are on
// their way to etcd at once (ReplicatedLog::AppendAsync), and each is written to the local store
// when it is finished, in order, once etcd has it and every batch before it.
//
//   ReplicatedStore store(std::move(rocksdb), &log, /*depth=*/8);  // the log taken over
//   ADMITD_RETURN_IF_ERROR(store.Commit(batch));
//
// Thread safety: as store::Store's and store::CommitPipeline's.
#ifndef ADMITD_SERVER_HA_REPLICATED_STORE_H_
#define ADMITD_SERVER_HA_REPLICATED_STORE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/ha/replicated_log.h"
#include "store/store.h"

namespace admitd::ha {

class ReplicatedStore final : public store::Store, private store::CommitPipeline {
 public:
  // `log` outlives the store and has been taken over onto `local` (ReplicatedLog::TakeOver).
  // `depth`: batches on their way to etcd at once (at least 1).
  ReplicatedStore(std::unique_ptr<store::Store> local, ReplicatedLog* log, int depth = 8);
  ~ReplicatedStore() override;  // waits for the answers of batches still on their way

  absl::Status Commit(const store::Batch& batch) override;
  // FAILED_PRECONDITION while a started batch is not finished.
  absl::Status Recover() override;
  store::CommitPipeline* pipeline() override { return this; }

  absl::Status ForEachObject(
      const std::function<absl::Status(v1::ObjectKind kind, absl::string_view key,
                                       absl::string_view value)>& fn) const override {
    return local_->ForEachObject(fn);
  }
  uint64_t revision() const override { return local_->revision(); }
  uint64_t oldest_event_revision() const override { return local_->oldest_event_revision(); }
  absl::Status ReadEvents(uint64_t after, size_t limit,
                          std::vector<store::LoggedEvent>* out) const override {
    return local_->ReadEvents(after, limit, out);
  }
  absl::StatusOr<uint64_t> CompactEvents() override { return local_->CompactEvents(); }
  std::vector<std::pair<std::string, uint64_t>> Health() const override {
    return local_->Health();
  }
  absl::Status Close() override { return local_->Close(); }
  // The local store's copy, between two commits.
  absl::StatusOr<uint64_t> Checkpoint(const std::string& dir) const override;

 private:
  // One started batch.
  struct Started {
    std::shared_ptr<const store::Batch> batch;
    bool changes = false;  // it goes to the log (else only to the local store)
    bool answered = false;  // the log's answer (or the refusal) is in `status`
    absl::Status status;
  };

  int depth() const override { return depth_; }
  void Start(std::shared_ptr<const store::Batch> batch, std::function<void()> ready) override;
  absl::Status Finish() override;
  // Why `batch` may not follow a store at `revision`: the Store contract's rules and the log's.
  static absl::Status Check(const store::Batch& batch, uint64_t revision);

  std::unique_ptr<store::Store> local_;
  ReplicatedLog* const log_;
  const int depth_;
  // Serializes the committer's local writes, Recover, and Checkpoint (a snapshot's).
  mutable absl::Mutex mu_;
  // Why commits are refused until Recover succeeds; OK while it takes writes.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  // Started and not finished, oldest first; and the revision the newest of them reaches.
  std::deque<std::shared_ptr<Started>> started_ ABSL_GUARDED_BY(mu_);
  uint64_t started_revision_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_REPLICATED_STORE_H_
