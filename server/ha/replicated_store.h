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
//   ReplicatedStore store(std::move(rocksdb), &log);  // the log taken over by this leader
//   ADMITD_RETURN_IF_ERROR(store.Commit(batch));
//
// Thread safety: as store::Store's.
#ifndef ADMITD_SERVER_HA_REPLICATED_STORE_H_
#define ADMITD_SERVER_HA_REPLICATED_STORE_H_

#include <cstdint>
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

class ReplicatedStore final : public store::Store {
 public:
  // `log` outlives the store and has been taken over onto `local` (ReplicatedLog::TakeOver).
  ReplicatedStore(std::unique_ptr<store::Store> local, ReplicatedLog* log);

  absl::Status Commit(const store::Batch& batch) override;
  absl::Status Recover() override;

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
  std::unique_ptr<store::Store> local_;
  ReplicatedLog* const log_;
  // Serializes Commit and Recover (the committer's) with Checkpoint (a snapshot's).
  mutable absl::Mutex mu_;
  // Why Commit refuses until Recover succeeds; OK while it takes writes.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_REPLICATED_STORE_H_
