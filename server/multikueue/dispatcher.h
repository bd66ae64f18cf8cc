// Dispatcher: the MultiKueue manager inside admitd (docs/multikueue.md, multikueue.md §4–§14).
//
// For every workload that holds a reservation in a ClusterQueue with a kueue.x-k8s.io/multikueue
// AdmissionCheck, it nominates worker clusters (AllAtOnce or Incremental), submits a copy of the
// workload to each nominated worker's admitd, keeps the copy admitted first there and withdraws
// the others, marks the check Ready with status.clusterName, and follows the winner: an eviction
// there becomes a Retry here, its finish finishes the workload here, an eviction here
// deactivates it there, and a worker lost for longer than workerLostTimeout gives the workload
// back to the queue. Copies whose workload is gone are collected.
//
// It runs on its own thread, level-triggered: local changes come from the watch hub, remote
// ones from each worker's WorkerLink, and every decision about one workload is taken again from
// both sides' current state. Its writes on the manager go through the sequencer like any call,
// so everything it must remember (nominations and their time, the winner, each worker's
// connection state and loss time) is in the store and a restarted manager resumes from it.
//
// Thread safety: Start and Stop from one thread; the rest is internal.
#ifndef ADMITD_SERVER_MULTIKUEUE_DISPATCHER_H_
#define ADMITD_SERVER_MULTIKUEUE_DISPATCHER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/engine.h"
#include "server/multikueue/worker_link.h"

namespace admitd {
class Metrics;
class Sequencer;
class WatchHub;
class WatchSubscription;
}  // namespace admitd

namespace admitd::multikueue {

inline constexpr char kAllAtOnce[] = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
inline constexpr char kIncremental[] = "kueue.x-k8s.io/multikueue-dispatcher-incremental";
// Annotation on a copy: the manager reservation it was made for (its QuotaReserved time). A copy
// of an earlier reservation is stale and withdrawn.
inline constexpr char kReservationAnnotation[] = "admitd.io/multikueue-reservation";

struct DispatcherOptions {
  std::string origin = "multikueue";
  absl::Duration worker_lost_timeout = absl::Minutes(15);
  absl::Duration gc_interval = absl::Minutes(1);  // 0: no periodic collection
  std::string dispatcher_name = kAllAtOnce;
  int step_size = 3;  // Incremental: workers added per round
  absl::Duration round_timeout = absl::Minutes(5);
  // Worker reconnection backoff (5 s × 2^(n−1), capped at 320 s, by default).
  absl::Duration reconnect_backoff = absl::Seconds(5);
  absl::Duration max_reconnect_backoff = absl::Seconds(320);
  // kueue_multikueue_workloads_dispatched_total, kueue_multikueue_workloads_admitted_total and
  // admitd_multikueue_worker_connected; may be null.
  Metrics* metrics = nullptr;
};

class Dispatcher {
 public:
  // `sequencer` and `hub` must outlive the Dispatcher.
  Dispatcher(Sequencer* sequencer, WatchHub* hub, DispatcherOptions options);
  ~Dispatcher();  // Stop()s

  void Start();
  void Stop();

  // Per worker: connected or not (for metrics and tests).
  std::map<std::string, bool> WorkerStates() const;

 private:
  struct Local {
    std::map<std::string, v1::Workload> workloads;  // with a MultiKueue check
    std::map<std::string, v1::AdmissionCheck> checks;
    std::map<std::string, v1::MultiKueueConfig> configs;
    std::map<std::string, v1::MultiKueueCluster> clusters;
  };

  // Subscribes to the hub and reads the state it continues from (again after falling behind).
  void Subscribe();
  // Reads the workloads into `snapshot` a page at a time from `token`, then hands it to Run.
  void ReadWorkloadPage(std::shared_ptr<Local> snapshot, std::string token);
  void Run();
  // Applies the hub's events to the caches; marks what they touch.
  void DrainHub();
  void ApplyQueueObject(const v1::QueueObject& object, bool deleted);
  void ApplyWorkload(const v1::Workload& wl, bool deleted);
  // Links follow the MultiKueueCluster objects.
  void SyncLinks();
  void Reconcile(const std::string& key, absl::Time now);
  // The MultiKueue check of `wl` (by the AdmissionCheck objects), or "".
  std::string CheckOf(const v1::Workload& wl) const;
  // The clusters of check `check`'s MultiKueueConfig, in its order.
  std::vector<std::string> ClustersOf(const std::string& check) const;
  // When `cluster` was first seen out of reach (its stored disconnected_since), or `now`.
  absl::Time LostSince(const std::string& cluster, absl::Time now) const;
  v1::Workload MakeCopy(const v1::Workload& wl, const std::string& cluster) const;
  void DeleteCopy(WorkerLink& link, const v1::Workload& copy);
  void Mark(const std::string& key);
  void WakeAt(absl::Time at, const std::string& key);
  // Runs `write` on the manager's engine through the sequencer, once at a time per workload.
  void Write(const std::string& key,
             std::function<absl::Status(engine::Engine&, absl::Time)> write);
  WorkerLink* LinkOf(const std::string& cluster);
  // Whether `link` holds an unfinished copy that replaces the copy `key` (an elastic slice).
  bool HasReplacement(const WorkerLink& link, const std::string& key) const;

  Sequencer* const sequencer_;
  WatchHub* const hub_;
  const DispatcherOptions options_;

  std::shared_ptr<WatchSubscription> subscription_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};

  mutable absl::Mutex mu_;
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  bool hub_pending_ ABSL_GUARDED_BY(mu_) = false;
  // Workers whose state changed: connected, message.
  std::vector<std::tuple<std::string, bool, std::string>> states_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> writing_ ABSL_GUARDED_BY(mu_);  // keys with a local write in flight
  std::map<std::string, bool> worker_states_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Local> pending_snapshot_ ABSL_GUARDED_BY(mu_);

  // Owned by the dispatcher thread.
  Local local_;
  bool snapshot_loaded_ = false;
  std::map<std::string, std::unique_ptr<WorkerLink>> links_;
  std::multimap<absl::Time, std::string> timers_;
  absl::Time next_gc_;
};

}  // namespace admitd::multikueue

#endif  // ADMITD_SERVER_MULTIKUEUE_DISPATCHER_H_
