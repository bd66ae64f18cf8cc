// WorkerLink: a MultiKueue manager's connection to one worker cluster's admitd.
//
// It lists the worker's workloads, keeps those carrying this manager's origin label
// (kueue.x-k8s.io/multikueue-origin) in a cache, and follows them with a Watch. The worker is
// "connected" only once the list is in and the watch has replayed up to it (Kueue marks a
// client connected only after all its watches are open); any end of the watch disconnects it
// and it connects again: at once after a watch that ran, then after 5 s × 2^(n−1), capped, for
// failed attempts. Writes to the worker (Submit of a copy, Delete, SetActive, UpdateRemoteJob)
// run on the link's own threads, several at once but in order for any one copy, so a slow
// worker never blocks the dispatcher or the other workers.
//
// Thread safety: every method may be called from any thread. Callbacks run on the link's
// threads, without its locks held; they must not block.
#ifndef ADMITD_SERVER_MULTIKUEUE_WORKER_LINK_H_
#define ADMITD_SERVER_MULTIKUEUE_WORKER_LINK_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/objects.pb.h"
#include "common/kueue_keys.h"

namespace admitd {
class Metrics;
}  // namespace admitd

namespace admitd::multikueue {

// Label on every object a manager creates in a worker (Kueue's MultiKueueOriginLabel).

struct WorkerLinkOptions {
  std::string name;  // the MultiKueueCluster's
  v1::WorkerAdmitd endpoint;
  std::string origin = "multikueue";
  // Reconnection after failed attempts: base × 2^(n−1), capped at `max_backoff`.
  absl::Duration backoff_base = absl::Seconds(5);
  absl::Duration max_backoff = absl::Seconds(320);
  absl::Duration call_timeout = absl::Seconds(10);
  // The link connected (true) or lost its worker (false, with why).
  std::function<void(bool connected, const std::string& message)> on_state;
  // A copy changed or went away (namespace/name), or a write to it failed.
  std::function<void(const std::string& key)> on_copy;
  // Counts kueue_multikueue_workloads_dispatched_total{cluster_queue,cluster}; may be null.
  Metrics* metrics = nullptr;
};

class WorkerLink {
 public:
  explicit WorkerLink(WorkerLinkOptions options);
  ~WorkerLink();  // Stop()s
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;

  void Start();
  void Stop();

  const std::string& name() const { return options_.name; }
  const v1::WorkerAdmitd& endpoint() const { return options_.endpoint; }
  bool connected() const { return connected_.load(); }

  // The copy of namespace/name as last seen (kept while disconnected: the last known state).
  std::optional<v1::Workload> Copy(const std::string& key) const;
  // Every cached copy's key.
  std::vector<std::string> Keys() const;

  // Writes, run in order. Submit is idempotent (same UID); Delete and Deactivate carry the
  // copy's UID, so they never touch another object of the same name.
  // `cluster_queue`: the manager's ClusterQueue of the workload (the metric's label).
  void Submit(v1::Workload copy, const std::string& cluster_queue = "");
  void Delete(const std::string& ns, const std::string& name, const std::string& uid);
  void Deactivate(const std::string& ns, const std::string& name, const std::string& uid);
  // Gives the winning copy the job's manifest (UpdateRemoteJob): the worker cluster's shim then
  // creates the job.
  void HandOverJob(const std::string& ns, const std::string& name, const std::string& uid,
                   const std::string& manifest);
  // An elastic copy scaled down in place (Resize by name) to the manager's counts.
  void ScaleDown(const std::string& ns, const std::string& name,
                 const google::protobuf::RepeatedPtrField<v1::PodSet>& pod_sets);

 private:
  struct Op {
    enum class Kind { kSubmit, kDelete, kDeactivate, kHandOver, kScaleDown } kind;
    v1::Workload copy;  // kSubmit; kScaleDown: its spec's pod sets
    std::string ns, name, uid;
    std::string manifest;       // kHandOver
    std::string cluster_queue;  // kSubmit
    std::string key = "";       // namespace/name of the copy, set by Enqueue
  };

  void RunWatch();
  void RunOps();
  // One list-then-watch session; returns when the watch ends.
  grpc::Status Session();
  void Apply(const v1::Workload& wl, bool deleted);
  void SetConnected(bool connected, const std::string& message);
  bool Mine(const v1::Workload& wl) const;
  void Enqueue(Op op);
  // Waits `d` or until stopped.
  void Sleep(absl::Duration d);

  const WorkerLinkOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AdmissionService::Stub> stub_;
  std::atomic<bool> connected_{false};
  std::atomic<bool> stopped_{false};

  mutable absl::Mutex mu_;
  std::map<std::string, v1::Workload> copies_ ABSL_GUARDED_BY(mu_);
  std::deque<Op> ops_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int, std::string>> queued_ ABSL_GUARDED_BY(mu_);  // (kind, key) in ops_
  std::set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);  // keys of the writes being made
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool reported_ ABSL_GUARDED_BY(mu_) = false;  // a state was reported at least once
  bool last_connected_ ABSL_GUARDED_BY(mu_) = false;

  std::thread watch_thread_;
  std::vector<std::thread> ops_threads_;
};

}  // namespace admitd::multikueue

#endif  // ADMITD_SERVER_MULTIKUEUE_WORKER_LINK_H_
