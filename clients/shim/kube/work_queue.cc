#include "clients/shim/kube/work_queue.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace admitd::shim {

void WorkQueue::AddLocked(const std::string& key) {
  if (shut_down_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (!processing_.count(key)) queue_.push_back(key);
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  if (delay <= absl::ZeroDuration()) return Add(key);
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  delayed_.emplace(absl::Now() + delay, key);
}

void WorkQueue::AddRateLimited(const std::string& key) {
  absl::Duration delay;
  {
    absl::MutexLock lock(&mu_);
    const int n = failures_[key]++;
    delay = options_.base_delay;
    for (int i = 0; i < n && delay < options_.max_delay; ++i) delay *= 2;
    delay = std::min(delay, options_.max_delay);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

int WorkQueue::Retries(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteLocked(absl::Time now) {
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    AddLocked(key);
  }
}

bool WorkQueue::Get(std::string* key) {
  absl::MutexLock lock(&mu_);
  while (true) {
    PromoteLocked(absl::Now());
    if (shut_down_) return false;
    if (!queue_.empty()) break;
    // Sleep until a key is added or the next delayed key is due.
    const absl::Duration wait =
        delayed_.empty() ? absl::Seconds(1) : delayed_.begin()->first - absl::Now();
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](WorkQueue* q) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                               return q->shut_down_ || !q->queue_.empty();
                             },
                             this),
                         std::max(wait, absl::Milliseconds(1)));
  }
  *key = queue_.front();
  queue_.pop_front();
  processing_.insert(*key);
  dirty_.erase(*key);
  return true;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.count(key)) queue_.push_back(key);
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
}

size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace admitd::shim
