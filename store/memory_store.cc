#include "store/memory_store.h"

#include <utility>

#include "absl/time/clock.h"
#include "common/status.h"
#include "store/contract.h"
#include "store/keys.h"

namespace admitd::store {

MemoryStore::MemoryStore(StoreOptions options) : options_(std::move(options)) {}

absl::Status MemoryStore::Commit(const Batch& batch) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return StoreClosed(options_.path);
    ADMITD_RETURN_IF_ERROR(CheckBatch(batch, revision_));
    if (!unwritable_.ok()) {
      ++failed_commits_;
      return unwritable_;
    }
    if (failures_left_ > 0) {
      --failures_left_;
      ++failed_commits_;
      return failure_;
    }
  }
  // The "fsync" happens before the batch becomes visible, as with RocksDB, where readers see
  // nothing above the revision of the last Commit that returned. Commit calls are serialized by
  // the caller, so the checks above still hold after the sleep.
  if (options_.sync && options_.injected_sync_delay > absl::ZeroDuration()) {
    absl::SleepFor(options_.injected_sync_delay);
  }
  absl::MutexLock lock(&mu_);
  for (const ObjectWrite& w : batch.writes) {
    std::map<std::string, std::string>& family = objects_[w.kind];
    if (w.deleted) {
      family.erase(w.key);
    } else {
      family[w.key] = w.value;
    }
  }
  for (const LoggedEvent& e : batch.events) {
    events_.emplace_hint(events_.end(), e.revision, e.value);
  }
  revision_ = batch.revision;
  ++commits_;
  return absl::OkStatus();
}

absl::Status MemoryStore::ForEachObject(
    const std::function<absl::Status(v1::ObjectKind, absl::string_view, absl::string_view)>& fn)
    const {
  absl::MutexLock lock(&mu_);
  if (closed_) return StoreClosed(options_.path);
  for (v1::ObjectKind kind : kStoredKinds) {
    for (const auto& [key, value] : objects_[kind]) ADMITD_RETURN_IF_ERROR(fn(kind, key, value));
  }
  return absl::OkStatus();
}

uint64_t MemoryStore::revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

uint64_t MemoryStore::oldest_event_revision() const {
  absl::MutexLock lock(&mu_);
  return event_floor_;
}

absl::Status MemoryStore::ReadEvents(uint64_t after, size_t limit,
                                     std::vector<LoggedEvent>* out) const {
  absl::MutexLock lock(&mu_);
  if (closed_) return StoreClosed(options_.path);
  if (after + 1 < event_floor_) return CompactedAway(after, event_floor_);
  size_t n = 0;
  for (auto it = events_.upper_bound(after); it != events_.end() && n < limit; ++it, ++n) {
    out->push_back({it->first, it->second});
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryStore::CompactEvents() {
  absl::MutexLock lock(&mu_);
  if (closed_) return StoreClosed(options_.path);
  if (events_.size() <= options_.event_retention) return 0;
  const uint64_t excess = events_.size() - options_.event_retention;
  auto cut = events_.begin();
  std::advance(cut, excess);
  event_floor_ = std::prev(cut)->first + 1;
  events_.erase(events_.begin(), cut);
  return excess;
}

absl::Status MemoryStore::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  return absl::OkStatus();
}

absl::Status MemoryStore::Recover() {
  absl::MutexLock lock(&mu_);
  if (closed_) return StoreClosed(options_.path);
  ++recovers_;
  return unwritable_;
}

void MemoryStore::SetUnwritable(absl::Status status) {
  absl::MutexLock lock(&mu_);
  unwritable_ = std::move(status);
}

uint64_t MemoryStore::recover_count() const {
  absl::MutexLock lock(&mu_);
  return recovers_;
}

void MemoryStore::FailNextCommits(int n, absl::Status status) {
  absl::MutexLock lock(&mu_);
  failures_left_ = n;
  failure_ = status.ok() ? absl::InternalError("FailNextCommits was given an OK status")
                         : std::move(status);
}

uint64_t MemoryStore::commit_count() const {
  absl::MutexLock lock(&mu_);
  return commits_;
}

uint64_t MemoryStore::failed_commit_count() const {
  absl::MutexLock lock(&mu_);
  return failed_commits_;
}

uint64_t MemoryStore::logged_events() const {
  absl::MutexLock lock(&mu_);
  return events_.size();
}

}  // namespace admitd::store
