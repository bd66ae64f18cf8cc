#include "server/ha/replicated_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "store/contract.h"

namespace admitd::ha {

ReplicatedStore::ReplicatedStore(std::unique_ptr<store::Store> local, ReplicatedLog* log)
    : local_(std::move(local)), log_(log) {}

absl::Status ReplicatedStore::Commit(const store::Batch& batch) {
  absl::MutexLock lock(&mu_);
  if (absl::Status valid = store::CheckBatch(batch, local_->revision()); !valid.ok()) return valid;
  const bool changes = !batch.writes.empty() || !batch.events.empty();
  if (changes && batch.revision <= local_->revision()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch that changes something must reach a revision above ",
                     local_->revision(), " (the replicated log is keyed by revision); it reaches ",
                     batch.revision));
  }
  if (!broken_.ok()) return broken_;
  if (changes) {
    if (absl::Status appended = log_->Append(batch); !appended.ok()) {
      broken_ = absl::UnavailableError(absl::StrCat(
          "the replicated log in etcd did not take batch ", batch.revision, ": ",
          appended.message()));
      return broken_;
    }
  }
  if (absl::Status local = local_->Commit(batch); !local.ok()) {
    // The log has the batch, this replica's disk does not: Recover applies it from the log.
    broken_ = local;
    return local;
  }
  return absl::OkStatus();
}

absl::Status ReplicatedStore::Recover() {
  absl::MutexLock lock(&mu_);
  // A no-op on a healthy local store; needed after its own failure, or one TakeOver met.
  if (absl::Status local = local_->Recover(); !local.ok()) return local;
  if (absl::Status taken = log_->TakeOver(local_.get()); !taken.ok()) {
    if (absl::IsUnavailable(taken)) return taken;
    return absl::UnavailableError(
        absl::StrCat("the replicated log in etcd cannot be taken over: ", taken.message()));
  }
  broken_ = absl::OkStatus();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReplicatedStore::Checkpoint(const std::string& dir) const {
  absl::MutexLock lock(&mu_);
  return local_->Checkpoint(dir);
}

}  // namespace admitd::ha
