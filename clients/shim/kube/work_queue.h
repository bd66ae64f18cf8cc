// A work queue keyed by object, as controllers use one: a key added several times before a
// worker takes it is processed once; a key added while a worker holds it is processed again
// after that worker is done (never by two workers at once); a failed key is retried after a
// per-key exponential backoff that a success resets.
//
//   WorkQueue q;
//   q.Add("ns/job");
//   std::string key;
//   while (q.Get(&key)) { absl::Status s = Reconcile(key); s.ok() ? q.Forget(key)
//                                                             : q.AddRateLimited(key);
//                          q.Done(key); }
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_CLIENTS_SHIM_KUBE_WORK_QUEUE_H_
#define ADMITD_CLIENTS_SHIM_KUBE_WORK_QUEUE_H_

#include <deque>
#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace admitd::shim {

struct WorkQueueOptions {
  absl::Duration base_delay = absl::Milliseconds(5);  // the first retry's wait
  absl::Duration max_delay = absl::Seconds(60);       // retries double up to this
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {}) : options_(options) {}

  void Add(const std::string& key);
  // Adds `key` once `delay` has passed (at once when it is not positive).
  void AddAfter(const std::string& key, absl::Duration delay);
  // Adds `key` after its next backoff: base, 2×base, 4×base … up to the maximum.
  void AddRateLimited(const std::string& key);
  // Resets `key`'s backoff (call after a success).
  void Forget(const std::string& key);
  // Waits for a key that no worker holds, and hands it to the caller until Done. False once
  // ShutDown was called.
  bool Get(std::string* key);
  void Done(const std::string& key);
  void ShutDown();

  size_t Len() const;         // keys waiting (not counting delayed ones)
  int Retries(const std::string& key) const;

 private:
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the delayed keys whose time came into the queue.
  void PromoteLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkQueueOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);       // queued, or to requeue after Done
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);  // held by a worker
  std::multimap<absl::Time, std::string> delayed_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_WORK_QUEUE_H_
