#include "clients/shim/shim.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/elastic_pods.h"
#include "clients/shim/job_multikueue.h"
#include "clients/shim/json_fields.h"
#include "clients/shim/reconcile_util.h"
#include "common/log.h"

namespace admitd::shim {
namespace {

// The Job that controls `pod`, as "ns/name", or "".
std::string OwnerJobKey(const nlohmann::json& pod) {
  const nlohmann::json meta = pod.value("metadata", nlohmann::json::object());
  for (const nlohmann::json& ref : meta.value("ownerReferences", nlohmann::json::array())) {
    if (ref.value("controller", false) && Str(ref, "kind") == "Job") {
      return Str(meta, "namespace") + "/" + Str(ref, "name");
    }
  }
  return "";
}

}  // namespace

Shim::Shim(const ShimConfig& config, KubeConfig kube)
    : config_(config), kube_(std::move(kube)) {}

absl::StatusOr<std::unique_ptr<Shim>> Shim::Start(const ShimConfig& config) {
  absl::StatusOr<KubeConfig> kube = config.kubeconfig.empty()
                                        ? KubeConfig::InCluster()
                                        : KubeConfig::FromKubeconfig(config.kubeconfig);
  if (!kube.ok()) return kube.status();
  // The credentials for admitd are checked now, so a missing file stops the start.
  ConnectionOptions admitd_connection{.target = config.admitd,
                                      .follow_leader = config.admitd_follow_leader,
                                      .tls = config.admitd_tls,
                                      .ca_file = config.admitd_ca_file,
                                      .cert_file = config.admitd_cert_file,
                                      .key_file = config.admitd_key_file,
                                      .server_name = config.admitd_server_name,
                                      .token_file = config.admitd_token_file};
  if (absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect(admitd_connection);
      !channel.ok()) {
    return absl::Status(channel.status().code(),
                        absl::StrCat("--admitd credentials: ", channel.status().message()));
  }
  const ConnectionOptions* admitd = &admitd_connection;
  std::unique_ptr<Shim> shim(new Shim(config, *std::move(kube)));
  Shim* s = shim.get();
  tracing::TracerOptions trace_options;
  trace_options.service_name = "admitd-shim";
  trace_options.endpoint = config.otlp_endpoint;
  trace_options.sample_ratio = config.trace_sample_ratio;
  trace_options.resource_attributes = {{"admitd.cluster", config.cluster}};
  s->tracer_ = tracing::Tracer::Create(std::move(trace_options));
  s->events_ = std::make_unique<EventRecorder>(s->kube_, config.identity);
  s->jobs_ = std::make_unique<Informer>(
      s->kube_, "/apis/batch/v1/jobs",
      [s](const std::string&, const nlohmann::json& job) { s->OnJob(job); });
  // Only the Job controller's pods: those of elastic Jobs are ungated by the shim.
  s->pods_ = std::make_unique<Informer>(
      s->kube_, "/api/v1/pods?labelSelector=batch.kubernetes.io/job-name",
      [s](const std::string&, const nlohmann::json& pod) { s->OnPod(pod); });
  s->namespaces_ = std::make_unique<Informer>(
      s->kube_, "/api/v1/namespaces", [s](const std::string&, const nlohmann::json& ns) {
        s->namespace_queue_.Add(ObjectKey(ns));
      });
  s->admitd_ = std::make_unique<AdmitdLink>(
      AdmitdLinkOptions{.admitd = *admitd,
                        .cluster = config.cluster,
                        .pod_workloads = config.integrations.count("pod") > 0,
                        // Another cluster's shim deleted a namespace this cluster still has.
                        .on_namespace_deleted =
                            [s](const std::string& name) {
                              if (!reconcile::Live(s->namespaces_->Get(name))) return;
                              s->namespace_sync_->Forget(name);
                              s->namespace_queue_.Add(name);
                            }},
      [s](const v1::Workload& wl, bool deleted) {
        s->OnWorkload(wl);
        if (s->mirror_) s->mirror_->OnWorkload(wl, deleted);
      },
      [s](const v1::Event& e) { s->OnEvent(e); });
  JobReconcilerOptions options;
  options.cluster = config.cluster;
  options.excluded_namespaces = config.excluded_namespaces;
  options.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
  options.workload.elastic_jobs = config.elastic_jobs;
  s->namespace_sync_ = std::make_unique<NamespaceSync>(*s->admitd_, *s->namespaces_);
  if (config.mirror_workloads) s->mirror_ = std::make_unique<WorkloadMirror>(s->kube_, *s->events_);
  if (config.integrations.count("pod")) {
    // The pods the webhook took in (label kueue.x-k8s.io/managed=true).
    s->managed_pods_ = std::make_unique<Informer>(
        s->kube_, "/api/v1/pods?labelSelector=kueue.x-k8s.io%2Fmanaged%3Dtrue",
        [s](const std::string& type, const nlohmann::json& pod) {
          if (s->pod_sync_) s->pod_sync_->OnPod(type, pod);
        });
    s->pod_sync_ = std::make_unique<PodSync>(s->kube_, *s->admitd_, *s->managed_pods_,
                                             *s->events_, config.cluster);
  }
  s->reconciler_ = std::make_unique<JobReconciler>(s->kube_, *s->admitd_, *s->jobs_, *s->pods_,
                                                   *s->events_, options);
  if (config.multikueue_worker) {
    s->multikueue_worker_ = std::make_unique<MultiKueueWorker>(s->kube_, *s->admitd_, *s->jobs_);
  }
  if (config.integrations.count("ray.io/raycluster")) {
    s->rayclusters_ = std::make_unique<Informer>(
        s->kube_, kRayClustersPath,
        [s](const std::string&, const nlohmann::json& rc) { s->ray_queue_.Add(ObjectKey(rc)); });
    // KubeRay's pods: the elastic ones are ungated, and a stopped cluster's quota goes back once
    // they are gone.
    s->ray_pods_ = std::make_unique<Informer>(
        s->kube_, kRayPodsPath,
        [s](const std::string&, const nlohmann::json& pod) { s->OnRayPod(pod); });
    RayClusterReconcilerOptions ray_options;
    ray_options.cluster = config.cluster;
    ray_options.excluded_namespaces = config.excluded_namespaces;
    ray_options.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
    ray_options.workload.elastic_jobs = config.elastic_jobs;
    s->ray_reconciler_ = std::make_unique<RayClusterReconciler>(
        s->kube_, *s->admitd_, *s->rayclusters_, *s->ray_pods_, *s->events_, ray_options);
  }

  if (!config.webhook_listen.empty()) {
    AdmitdWebhookContextOptions context_options;
    context_options.excluded_namespaces.assign(config.excluded_namespaces.begin(),
                                               config.excluded_namespaces.end());
    s->webhook_context_ =
        std::make_unique<AdmitdWebhookContext>(s->admitd_->queues(), context_options);
    WebhookServerOptions webhook_options;
    webhook_options.job.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
    webhook_options.job.elastic_jobs = config.elastic_jobs;
    webhook_options.pods = config.integrations.count("pod") > 0;
    webhook_options.rayclusters = config.integrations.count("ray.io/raycluster") > 0;
    webhook_options.pod.integration_enabled = webhook_options.pods;
    webhook_options.pod.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
    webhook_options.pod.elastic_jobs = config.elastic_jobs;
    // admitd reads a pod's group name from its label (the annotation form is not read there).
    webhook_options.pod.workload_identifier_annotations = false;
    s->webhook_ = std::make_unique<WebhookServer>(config.webhook_listen, config.webhook_cert_dir,
                                                  *s->webhook_context_, webhook_options);
    if (absl::Status st = s->webhook_->Start(); !st.ok()) return st;
  }

  HttpEndpoint::Routes routes;
  routes["/healthz"] = [s] { return s->Healthz(); };
  routes["/readyz"] = [s] { return s->Readyz(); };
  s->metrics_.AddCollector([s] { return s->CollectCounters(); });
  s->metrics_.AddCollector([s] {
    std::vector<prometheus::MetricFamily> out;
    out.push_back(MetricFamilyOf(
        "admitd_shim_kube_requests_total",
        "Requests to the Kubernetes API server, per verb and outcome (2xx, 3xx, 4xx, 5xx, or "
        "error: no answer).",
        prometheus::MetricType::Counter));
    for (int v = 0; v < 5; ++v) {
      for (int o = 0; o < 5; ++o) {
        const int64_t n = s->kube_.requests(v, o);
        if (n > 0) {
          AddSample(&out.back(), {{"verb", KubeClient::kVerbs[v]}, {"code", KubeClient::kOutcomes[o]}},
                    static_cast<double>(n));
        }
      }
    }
    if (!s->tracer_->enabled()) return out;
    out.push_back(MetricFamilyOf("admitd_shim_tracing_spans_exported_total",
                                 "Spans sent to the OTLP collector.",
                                 prometheus::MetricType::Counter));
    AddSample(&out.back(), {}, static_cast<double>(s->tracer_->spans_exported()));
    out.push_back(MetricFamilyOf("admitd_shim_tracing_spans_dropped_total",
                                 "Spans dropped: the export queue was full or the collector "
                                 "refused or missed them.",
                                 prometheus::MetricType::Counter));
    AddSample(&out.back(), {}, static_cast<double>(s->tracer_->spans_dropped()));
    return out;
  });
  routes["/metrics"] = [s] {
    return HttpReply{200, kPrometheusTextType, s->Metrics()};
  };
  absl::StatusOr<std::unique_ptr<HttpEndpoint>> health =
      HttpEndpoint::Start(config.health_listen, std::move(routes));
  if (!health.ok()) return health.status();
  s->health_ = *std::move(health);

  s->threads_.emplace_back([s] { s->jobs_->Run(); });
  s->threads_.emplace_back([s] { s->pods_->Run(); });
  s->threads_.emplace_back([s] { s->namespaces_->Run(); });
  if (s->managed_pods_) s->threads_.emplace_back([s] { s->managed_pods_->Run(); });
  if (s->rayclusters_) {
    s->threads_.emplace_back([s] { s->rayclusters_->Run(); });
    s->threads_.emplace_back([s] { s->ray_pods_->Run(); });
  }
  s->threads_.emplace_back([s] { s->admitd_->Run(); });
  if (config.leader_elect) {
    s->elector_ = std::make_unique<LeaderElector>(
        s->kube_, LeaderElectionConfig{.ns = config.leader_election_namespace,
                                       .name = config.leader_election_id,
                                       .identity = config.identity,
                                       .lease_duration = config.lease_duration,
                                       .renew_deadline = config.renew_deadline,
                                       .retry_period = config.retry_period});
    s->threads_.emplace_back([s] {
      s->elector_->Run([s] { s->Lead(); },
                       [s] {
                         if (s->stopping_.load()) return;
                         ADMITD_LOG(kError, "leader election lost", {{"identity", s->config_.identity}});
                         s->lost_leadership_.store(true);
                         s->done_.Notify();
                       });
    });
  } else {
    s->threads_.emplace_back([s] { s->Lead(); });
  }
  ADMITD_LOG(kInfo, "admitd-shim started",
             {{"cluster", config.cluster}, {"admitd", config.admitd},
              {"identity", config.identity},
              {"webhook", s->webhook_ ? absl::StrCat(s->webhook_->port()) : "off"},
              {"health", absl::StrCat(config.health_listen.substr(0, config.health_listen.rfind(':')),
                                      ":", s->health_port())}});
  return shim;
}

Shim::~Shim() { Stop(); }

void Shim::Stop() {
  absl::MutexLock lock(&stop_mu_);
  if (stopping_.exchange(true)) return;
  queue_.ShutDown();
  copy_queue_.ShutDown();
  ray_queue_.ShutDown();
  namespace_queue_.ShutDown();
  if (elector_) elector_->Stop();
  jobs_->Stop();
  pods_->Stop();
  namespaces_->Stop();
  if (managed_pods_) managed_pods_->Stop();
  if (rayclusters_) rayclusters_->Stop();
  if (ray_pods_) ray_pods_->Stop();
  if (pod_sync_) pod_sync_->Stop();
  if (mirror_) mirror_->Stop();
  admitd_->Stop();
  if (health_) health_->Stop();
  if (webhook_) webhook_->Stop();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&workers_mu_);  // Lead (on the elector's thread) has returned by now
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
  // Nothing reconciles any more: hand the lease over at once rather than after it expires.
  if (elector_ && leading_.load()) {
    if (absl::Status st = elector_->Release(); !st.ok()) {
      ADMITD_LOG(kWarning, "lease not released", {{"error", st.ToString()}});
    }
  }
  if (!done_.HasBeenNotified()) done_.Notify();
}

bool Shim::Wait() {
  done_.WaitForNotification();
  return lost_leadership_.load();
}

bool Shim::Synced() const {
  // A cluster without KubeRay's definition has no RayClusters: that does not hold up the Jobs.
  return jobs_->lists() > 0 && pods_->lists() > 0 && namespaces_->lists() > 0 &&
         (!managed_pods_ || managed_pods_->lists() > 0) &&
         (!rayclusters_ || ((rayclusters_->lists() > 0 || rayclusters_->missing()) &&
                            ray_pods_->lists() > 0)) &&
         admitd_->Synced();
}

void Shim::OnJob(const nlohmann::json& job) {
  if (config_.integrations.count("batch/job")) queue_.Add(ObjectKey(job));
  // A worker Job that goes may leave its copy waiting for a new one (the same name, after a
  // re-dispatch to this cluster).
  if (multikueue_worker_ && IsMultiKueueWorkerJob(job)) {
    copy_queue_.Add(reconcile::Str(reconcile::Meta(job), "namespace") + "/" +
                    PrebuiltWorkloadName(job));
  }
}

void Shim::OnPod(const nlohmann::json& pod) {
  const nlohmann::json annotations =
      pod.value("metadata", nlohmann::json::object()).value("annotations", nlohmann::json::object());
  if (!HasElasticGate(pod) && !annotations.contains("kueue.x-k8s.io/workload-slice-name")) return;
  if (std::string key = OwnerJobKey(pod); !key.empty()) queue_.Add(key);
}

void Shim::OnRayPod(const nlohmann::json& pod) {
  if (std::string key = OwnerRayClusterKey(pod); !key.empty()) ray_queue_.Add(key);
}

void Shim::OnWorkload(const v1::Workload& wl) {
  const v1::OwnerReference* owner = ControllerOwner(wl);
  if (multikueue_worker_ && owner == nullptr &&
      wl.metadata().labels().count(kMultiKueueOriginLabel)) {
    copy_queue_.Add(wl.metadata().namespace_() + "/" + wl.metadata().name());
    // A Job made from this copy that has not adopted it yet: it must hear of the copy too (the
    // manager may withdraw the copy first, and then the Job goes with it).
    const std::string& ns = wl.metadata().namespace_();
    const std::string& name = wl.metadata().name();
    for (const nlohmann::json& j : jobs_->Select([&](const nlohmann::json& job) {
           return reconcile::Str(reconcile::Meta(job), "namespace") == ns && IsMultiKueueWorkerJob(job) &&
                  PrebuiltWorkloadName(job) == name;
         })) {
      queue_.Add(ns + "/" + reconcile::Str(reconcile::Meta(j), "name"));
    }
  }
  if (owner == nullptr) return;
  const std::string key = wl.metadata().namespace_() + "/" + owner->name();
  if (owner->kind() == kJobOwnerKind) {
    queue_.Add(key);
  } else if (owner->kind() == kRayClusterOwnerKind && ray_reconciler_) {
    ray_queue_.Add(key);
  }
}

void Shim::OnEvent(const v1::Event& event) {
  // admitd's Workloads are not objects of this cluster: their events go on the owning Job or
  // RayCluster, or on the first pod (by name) of a pod Workload.
  if (!leading_.load()) return;
  if (mirror_) mirror_->OnEvent(event);
  const v1::ObjectReference& r = event.regarding();
  std::optional<v1::Workload> wl = admitd_->Workload(r.namespace_(), r.name());
  if (!wl) return;
  const std::string controller = event.reporting_controller().empty()
                                     ? "kueue-admission"
                                     : event.reporting_controller();
  if (managed_pods_ && wl->metadata().labels().count(kPodClusterLabel)) {
    const v1::OwnerReference* first = nullptr;
    for (const v1::OwnerReference& o : wl->metadata().owner_references()) {
      if (o.kind() == "Pod" && (first == nullptr || o.name() < first->name())) first = &o;
    }
    if (first == nullptr) return;
    std::optional<nlohmann::json> pod = managed_pods_->Get(r.namespace_() + "/" + first->name());
    if (!pod || Str((*pod)["metadata"], "uid") != first->uid()) return;
    events_->Record(*pod, event.type(), event.reason(), event.note(), controller);
    return;
  }
  const v1::OwnerReference* owner = ControllerOwner(*wl);
  if (owner == nullptr) return;
  const Informer* owners = owner->kind() == kJobOwnerKind          ? jobs_.get()
                           : owner->kind() == kRayClusterOwnerKind ? rayclusters_.get()
                                                                   : nullptr;
  if (owners == nullptr) return;
  std::optional<nlohmann::json> object = owners->Get(r.namespace_() + "/" + owner->name());
  if (!object || Str((*object)["metadata"], "uid") != owner->uid()) return;
  events_->Record(*object, event.type(), event.reason(), event.note(), controller);
}

}  // namespace admitd::shim
