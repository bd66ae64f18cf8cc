// admitd-shim, wired: per integration (framework/integration.h) an informer of its objects and
// one of their pods, a work queue and its workers running the generic Reconciler (on the leader
// only, once every cache has synced); the namespace informer and the NamespaceSync that gives
// admitd the namespaces' labels; the pod sync of the pod integration; the MultiKueue worker; the
// link to admitd; leader election; the event recorder; the admission webhook (on every replica);
// and the /healthz, /readyz and /metrics endpoint.
//
//   absl::StatusOr<std::unique_ptr<Shim>> shim = Shim::Start(config);
//   ... (*shim)->Stop();
//
// Thread safety: Stop and the accessors from any thread.
#ifndef ADMITD_CLIENTS_SHIM_SHIM_H_
#define ADMITD_CLIENTS_SHIM_SHIM_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/webhook/admitd_webhook_context.h"
#include "clients/shim/kube/event_recorder.h"
#include "clients/shim/kube/informer.h"
#include "clients/shim/framework/integration.h"
#include "clients/shim/framework/pod_parent_reconciler.h"
#include "clients/shim/framework/reconciler.h"
#include "clients/shim/kube/kube_client.h"
#include "clients/shim/kube/leader_election.h"
#include "clients/shim/multikueue_worker.h"
#include "clients/shim/namespace_sync.h"
#include "clients/shim/integrations/pod/pod_multikueue.h"
#include "clients/shim/integrations/pod/pod_sync.h"
#include "clients/shim/shim_config.h"
#include "clients/shim/webhook/webhook_server.h"
#include "clients/shim/workload_mirror.h"
#include "clients/shim/kube/work_queue.h"
#include "common/http_endpoint.h"
#include "common/metrics_registry.h"
#include "common/trace/tracer.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace admitd::shim {

class Shim {
 public:
  // Errors: the Kubernetes configuration cannot be read, or an address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Shim>> Start(const ShimConfig& config);
  ~Shim();

  // Stops every thread; returns once they ended. Idempotent.
  void Stop();
  // Blocks until Stop, or until this replica lost the leadership it held (then true: a replica
  // that lost it exits, as Kubernetes controllers do, and is restarted as a follower).
  bool Wait();

  int health_port() const { return health_ ? health_->port() : 0; }
  bool Synced() const;
  bool Leading() const { return leading_.load(); }

 private:
  // One integration's informers, queue and reconciler.
  struct Controller {
    const Integration* integration = nullptr;
    // In --integrations: its objects' changes are reconciled. The Job controller runs without
    // (its Workloads' changes still are: a MultiKueue worker's Jobs, Jobs left from before).
    bool enabled = false;
    std::unique_ptr<Informer> objects;
    std::unique_ptr<Informer> pods;  // null for a kind whose reconcile needs none
    std::unique_ptr<Informer> children;  // null for a kind without children_path
    WorkQueue queue;
    // The kind's reconciles: the generic one (a kind admitted as pods: its elastic objects'),
    // and, for a kind admitted as pods whose pods take labels from it, the pod labelling.
    std::unique_ptr<Reconciler> reconciler;
    std::unique_ptr<PodParentReconciler> pod_parent;
    std::atomic<int64_t> errors{0};
  };

  explicit Shim(const ShimConfig& config, KubeConfig kube);
  // Whether pods are admitted as pods: `pod` enabled, or a kind admitted as pods (Deployment,
  // StatefulSet), which enables the pod integration for its pods.
  bool PodsAdmitted() const;
  // The controllers of the registered integrations: every enabled one, and the Job's always.
  void AddControllers(const FrameworkOptions& options);
  Controller* ControllerOf(const std::string& kind) const;  // by owner kind; nullptr: none
  void OnObject(Controller& c, const nlohmann::json& object);
  void OnWorkload(const v1::Workload& workload);
  void OnEvent(const v1::Event& event);
  void Lead();       // on becoming leader
  void StartWork();  // once the caches have synced: the workers and the periodic resync
  // Takes keys from `queue` and reconciles them until the queue shuts down; failures are
  // retried with the queue's backoff and counted in `errors`. With tracing, each reconcile is a
  // span in the trace of the object `uid_of(key)` names (see StartReconcileSpan).
  void Worker(WorkQueue& queue, const std::function<absl::Status(const std::string&)>& reconcile,
              std::atomic<int64_t>& errors, const char* kind,
              const std::function<std::string(const std::string&)>& uid_of);
  // The span of one reconcile of `kind` `key`: a child of the object's root span, whose ids
  // derive from the object's UID (recorded once per object by this process), so every
  // reconcile of one object, by any replica, joins one trace. Not recording when tracing is off
  // or the object's trace is not sampled.
  tracing::Span StartReconcileSpan(const char* kind, const std::string& key,
                                   const std::string& uid);
  void NamespaceWorker();
  void Resync();  // every key once more
  std::string Metrics() const { return metrics_.Render(); }
  // The counters and gauges kept elsewhere (atomics of the reconcilers and syncs), read at each
  // scrape.
  std::vector<prometheus::MetricFamily> CollectCounters() const;
  HttpReply Healthz() const;
  HttpReply Readyz() const;

  const ShimConfig config_;
  KubeClient kube_;
  std::unique_ptr<EventRecorder> events_;
  std::unique_ptr<IntegrationRegistry> registry_;
  std::vector<std::unique_ptr<Controller>> controllers_;  // constant once started
  Controller* jobs_ = nullptr;                            // batch/job's, always there
  std::unique_ptr<Informer> namespaces_;
  std::unique_ptr<Informer> managed_pods_;  // with the pod integration only
  std::unique_ptr<PodSync> pod_sync_;
  std::unique_ptr<WorkloadMirror> mirror_;  // with --mirror-workloads
  std::unique_ptr<NamespaceSync> namespace_sync_;
  WorkQueue namespace_queue_;
  std::unique_ptr<AdmitdLink> admitd_;
  // With --multikueue-worker only: creates the Jobs of winning copies (keys: the copies').
  WorkQueue copy_queue_;
  std::unique_ptr<MultiKueueWorker> multikueue_worker_;
  // With the pod integration: a dispatched pod Workload's manifest and its pods' status.
  WorkQueue pod_multikueue_queue_;
  std::unique_ptr<PodMultiKueue> pod_multikueue_;
  std::atomic<int64_t> pod_multikueue_errors_{0};
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<HttpEndpoint> health_;
  std::unique_ptr<AdmitdWebhookContext> webhook_context_;
  std::unique_ptr<WebhookServer> webhook_;
  std::vector<std::thread> threads_;  // started by Start (constant afterwards)
  absl::Mutex workers_mu_;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(workers_mu_);  // started on leading
  std::atomic<bool> stopping_{false};
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_leadership_{false};
  std::atomic<int64_t> copy_reconcile_errors_{0};
  MetricsRegistry metrics_;
  std::unique_ptr<tracing::Tracer> tracer_;
  absl::Mutex traced_mu_;
  // Objects whose root span this process recorded (cleared when it grows past 100,000).
  absl::flat_hash_set<std::string> traced_objects_ ABSL_GUARDED_BY(traced_mu_);
  absl::Notification done_;
  absl::Mutex stop_mu_;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_SHIM_H_
