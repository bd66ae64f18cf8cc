#include "server/ha/replicated_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "store/contract.h"

namespace admitd::ha {

ReplicatedStore::ReplicatedStore(std::unique_ptr<store::Store> local, ReplicatedLog* log,
                                 int depth)
    : local_(std::move(local)), log_(log), depth_(std::max(1, depth)) {}

ReplicatedStore::~ReplicatedStore() {
  // The log's answers name entries of started_: wait for every one.
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::deque<std::shared_ptr<Started>>* started) {
        return std::all_of(started->begin(), started->end(),
                           [](const std::shared_ptr<Started>& s) { return s->answered; });
      },
      &started_));
}

absl::Status ReplicatedStore::Check(const store::Batch& batch, uint64_t revision) {
  if (absl::Status valid = store::CheckBatch(batch, revision); !valid.ok()) return valid;
  const bool changes = !batch.writes.empty() || !batch.events.empty();
  if (changes && batch.revision <= revision) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch that changes something must reach a revision above ", revision,
                     " (the replicated log is keyed by revision); it reaches ", batch.revision));
  }
  return absl::OkStatus();
}

absl::Status ReplicatedStore::Commit(const store::Batch& batch) {
  absl::Notification ready;
  Start(std::make_shared<const store::Batch>(batch), [&ready] { ready.Notify(); });
  ready.WaitForNotification();
  return Finish();
}

void ReplicatedStore::Start(std::shared_ptr<const store::Batch> batch,
                            std::function<void()> ready) {
  auto started = std::make_shared<Started>();
  started->batch = std::move(batch);
  {
    absl::MutexLock lock(&mu_);
    const uint64_t revision = started_.empty() ? local_->revision() : started_revision_;
    started->status = Check(*started->batch, revision);
    if (started->status.ok() && !broken_.ok()) started->status = broken_;
    started->changes = !started->batch->writes.empty() || !started->batch->events.empty();
    if (started->status.ok()) started_revision_ = std::max(revision, started->batch->revision);
    // Refused, or nothing for the log: answered already.
    started->answered = !started->status.ok() || !started->changes;
    started_.push_back(started);
  }
  if (started->answered) {
    ready();
    return;
  }
  log_->AppendAsync(*started->batch, [this, started, ready = std::move(ready)](absl::Status s) {
    {
      absl::MutexLock lock(&mu_);
      started->status = std::move(s);
      started->answered = true;
    }
    ready();
  });
}

absl::Status ReplicatedStore::Finish() {
  absl::MutexLock lock(&mu_);
  if (started_.empty()) return absl::FailedPreconditionError("no batch was started");
  mu_.Await(absl::Condition(
      +[](std::deque<std::shared_ptr<Started>>* started) { return started->front()->answered; },
      &started_));
  const std::shared_ptr<Started> started = std::move(started_.front());
  started_.pop_front();
  const store::Batch& batch = *started->batch;
  if (absl::IsInvalidArgument(started->status)) return started->status;  // refused: no harm done
  if (!broken_.ok()) return broken_;  // a batch before it failed: it may not count
  if (!started->status.ok()) {
    broken_ = absl::UnavailableError(absl::StrCat(
        "the replicated log in etcd did not take batch ", batch.revision, ": ",
        started->status.message()));
    return broken_;
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
  if (!started_.empty()) {
    return absl::FailedPreconditionError("batches are still on their way to the log");
  }
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
