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
                                               .tls = config.admitd_tls,
                                               .ca_file = config.admitd_ca_file,
                                               .cert_file = config.admitd_cert_file,
                                               .key_file = config.admitd_key_file,
                                               .server_name = config.admitd_server_name,
                                               .token_file = config.admitd_token_file};
  if (absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
          Connect(admitd_connection);
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

void Shim::Lead() {
  // Returns at once (the elector renews the lease on its thread); the work starts on another.
  absl::MutexLock lock(&workers_mu_);
  if (stopping_.load()) return;
  workers_.emplace_back([this] { StartWork(); });
}

void Shim::StartWork() {
  // Reconcile only from complete caches: a Job missing from a half-listed cache would look
  // deleted.
  while (!stopping_.load() && !Synced()) absl::SleepFor(absl::Milliseconds(20));
  absl::MutexLock lock(&workers_mu_);
  if (stopping_.load()) return;  // Stop has taken (or will find) every thread started so far
  leading_.store(true);
  ADMITD_LOG(kInfo, "leading",
             {{"identity", config_.identity},
              {"jobs", absl::StrCat(jobs_->Size())},
              {"rayclusters", rayclusters_ ? absl::StrCat(rayclusters_->Size()) : "off"}});
  if (rayclusters_ && rayclusters_->missing()) {
    ADMITD_LOG(kWarning, "rayclusters.ray.io is not installed: no RayCluster is managed until it is",
               {});
  }
  Resync();
  for (int i = 0; i < config_.workers; ++i) {
    workers_.emplace_back([this] {
      Worker(queue_, [this](const std::string& key) { return reconciler_->Reconcile(key); },
             reconcile_errors_, "job", [this](const std::string& key) {
               std::optional<nlohmann::json> job = jobs_->Get(key);
               return job ? reconcile::Str(reconcile::Meta(*job), "uid") : std::string();
             });
    });
  }
  if (multikueue_worker_) {
    workers_.emplace_back([this] {
      Worker(copy_queue_,
             [this](const std::string& key) { return multikueue_worker_->Reconcile(key); },
             copy_reconcile_errors_, "multikueue copy", [this](const std::string& key) {
               const size_t slash = key.find('/');
               if (slash == std::string::npos) return std::string();
               std::optional<v1::Workload> copy =
                   admitd_->Workload(key.substr(0, slash), key.substr(slash + 1));
               return copy ? copy->metadata().uid() : std::string();
             });
    });
  }
  if (ray_reconciler_) {
    for (int i = 0; i < config_.workers; ++i) {
      workers_.emplace_back([this] {
        Worker(ray_queue_,
               [this](const std::string& key) { return ray_reconciler_->Reconcile(key); },
               ray_reconcile_errors_, "raycluster", [this](const std::string& key) {
                 std::optional<nlohmann::json> rc = rayclusters_->Get(key);
                 return rc ? reconcile::Str(reconcile::Meta(*rc), "uid") : std::string();
               });
      });
    }
  }
  workers_.emplace_back([this] { NamespaceWorker(); });
  if (pod_sync_) workers_.emplace_back([this] { pod_sync_->Run(); });
  if (mirror_) {
    if (absl::Status st = mirror_->Resync(); !st.ok()) {
      ADMITD_LOG(kWarning, "mirrored Workloads not listed", {{"error", st.ToString()}});
    }
    workers_.emplace_back([this] { mirror_->Run(); });
  }
  // Every Job again now and then, in case a change was missed.
  workers_.emplace_back([this] {
    absl::Time next = absl::Now() + config_.resync_period;
    while (!stopping_.load()) {
      absl::SleepFor(absl::Milliseconds(200));
      if (absl::Now() >= next) {
        Resync();
        next = absl::Now() + config_.resync_period;
      }
    }
  });
}

void Shim::Resync() {
  for (const std::string& name : namespaces_->Keys()) namespace_queue_.Add(name);
  if (config_.integrations.count("batch/job")) {
    for (const std::string& key : jobs_->Keys()) queue_.Add(key);
  }
  for (const std::string& key : admitd_->OwnerKeys(kJobOwnerKind)) queue_.Add(key);
  if (multikueue_worker_) {
    for (const std::string& key : multikueue_worker_->Keys()) copy_queue_.Add(key);
  }
  if (ray_reconciler_) {
    for (const std::string& key : rayclusters_->Keys()) ray_queue_.Add(key);
    for (const std::string& key : admitd_->OwnerKeys(kRayClusterOwnerKind)) ray_queue_.Add(key);
  }
}

tracing::Span Shim::StartReconcileSpan(const char* kind, const std::string& key,
                                       const std::string& uid) {
  if (!tracer_->enabled()) return tracing::Span();
  tracing::SpanStart how;
  tracing::SpanContext root;
  if (!uid.empty()) {
    const std::string object = absl::StrCat(kind, "/", uid);
    root.trace_id = tracing::TraceIdFromKey(object);
    root.span_id = tracing::SpanIdFromKey(object);
    root.sampled = tracer_->Sampled(root.trace_id);
    bool first = false;
    if (root.sampled) {
      absl::MutexLock lock(&traced_mu_);
      if (traced_objects_.size() >= 100000) traced_objects_.clear();
      first = traced_objects_.insert(uid).second;
    }
    if (first) {
      tracing::SpanStart root_start;
      root_start.trace_id = root.trace_id;
      root_start.span_id = root.span_id;
      root_start.sampled = true;
      tracing::Span object_span = tracer_->StartSpan(absl::StrCat(kind, " ", key), root_start);
      object_span.SetAttribute("k8s.object.uid", uid);
      object_span.SetAttribute("admitd.cluster", config_.cluster);
    }
    how.parent = &root;
  }
  tracing::Span span = tracer_->StartSpan(absl::StrCat("reconcile ", kind), how);
  span.SetAttribute("k8s.object", key);
  return span;
}

void Shim::Worker(WorkQueue& queue,
                  const std::function<absl::Status(const std::string&)>& reconcile,
                  std::atomic<int64_t>& errors, const char* kind,
                  const std::function<std::string(const std::string&)>& uid_of) {
  std::string key;
  prometheus::Histogram& latency = metrics_.Histogram(
      "admitd_shim_reconcile_seconds", "Time one reconcile took, per kind of object.",
      {{"kind", kind}}, kLatencyBuckets);
  while (queue.Get(&key)) {
    absl::Status s;
    const absl::Time start = absl::Now();
    tracing::Span span = StartReconcileSpan(kind, key, tracer_->enabled() ? uid_of(key) : "");
    {
      reconcile::ReconcileTrace traced(span.context());
      try {
        s = reconcile(key);
      } catch (const std::exception& e) {  // an object of an unexpected shape: retry, stay up
        s = absl::InternalError(absl::StrCat("unexpected object: ", e.what()));
      }
    }
    latency.Observe(absl::ToDoubleSeconds(absl::Now() - start));
    if (!s.ok()) span.SetStatus(tracing::StatusCode::kError, std::string(s.message()));
    span.End();
    if (s.ok()) {
      queue.Forget(key);
    } else {
      ++errors;
      if (queue.Retries(key) >= 3) {
        ADMITD_LOG(kWarning, "reconcile failed", {{kind, key}, {"error", s.ToString()}});
      } else {
        ADMITD_LOG(kDebug, "reconcile failed", {{kind, key}, {"error", s.ToString()}});
      }
      if (std::optional<absl::Duration> after = reconcile::RetryAfter(s)) {
        queue.AddAfter(key, *after);  // admitd refused a call unrun (overloaded): as it advised
      } else {
        queue.AddRateLimited(key);
      }
    }
    queue.Done(key);
  }
}

void Shim::NamespaceWorker() {
  std::string name;
  while (namespace_queue_.Get(&name)) {
    absl::Status s = namespace_sync_->Sync(name);
    if (s.ok()) {
      namespace_queue_.Forget(name);
    } else {
      ADMITD_LOG(kWarning, "namespace not synced", {{"namespace", name}, {"error", s.ToString()}});
      namespace_queue_.AddRateLimited(name);
    }
    namespace_queue_.Done(name);
  }
}

HttpReply Shim::Healthz() const {
  const std::string admitd = admitd_->UnreachableReason();
  return HttpReply{200, "text/plain",
                   absl::StrCat("[+]ping ok\n",
                                admitd.empty() ? "[+]admitd ok\n" : "[-]admitd " + admitd + "\n",
                                "healthz check passed\n")};
}

HttpReply Shim::Readyz() const {
  const std::string admitd = admitd_->UnreachableReason();
  const bool jobs = jobs_->lists() > 0, pods = pods_->lists() > 0, link = admitd_->Synced();
  const bool ready = Synced();
  std::string body = absl::StrCat(
      jobs ? "[+]informer-jobs synced\n" : "[-]informer-jobs not synced\n",
      pods ? "[+]informer-pods synced\n" : "[-]informer-pods not synced\n",
      namespaces_->lists() > 0 ? "[+]informer-namespaces synced\n"
                               : "[-]informer-namespaces not synced\n",
      !managed_pods_                ? ""
      : managed_pods_->lists() > 0 ? "[+]informer-managed-pods synced\n"
                                   : "[-]informer-managed-pods not synced\n",
      !rayclusters_                  ? ""
      : rayclusters_->lists() > 0    ? "[+]informer-rayclusters synced\n"
      : rayclusters_->missing()      ? "[+]informer-rayclusters: rayclusters.ray.io not installed\n"
                                     : "[-]informer-rayclusters not synced\n",
      !ray_pods_                    ? ""
      : ray_pods_->lists() > 0      ? "[+]informer-ray-pods synced\n"
                                    : "[-]informer-ray-pods not synced\n",
      link ? "[+]admitd synced\n" : "[-]admitd not synced\n",
      admitd.empty() ? "[+]admitd reachable\n" : "[-]admitd " + admitd + "\n",
      leading_.load() ? "[+]leader\n" : "[+]follower\n",
      ready ? "readyz check passed\n" : "readyz check failed\n");
  return HttpReply{ready ? 200 : 503, "text/plain", std::move(body)};
}

std::vector<prometheus::MetricFamily> Shim::CollectCounters() const {
  const JobReconcilerCounters& c = reconciler_->counters();
  std::vector<prometheus::MetricFamily> out;
  auto gauge = [&](const char* name, const char* help, double v) {
    out.push_back(MetricFamilyOf(name, help, prometheus::MetricType::Gauge));
    AddSample(&out.back(), {}, v);
  };
  auto counter = [&](const char* name, const char* help, int64_t v) {
    out.push_back(MetricFamilyOf(name, help, prometheus::MetricType::Counter));
    AddSample(&out.back(), {}, static_cast<double>(v));
  };
  gauge("admitd_shim_admitd_reachable", "1 while admitd answers, 0 while it cannot be reached.",
        admitd_->Reachable() ? 1 : 0);
  gauge("admitd_shim_leader", "1 while this replica leads (reconciles).", leading_.load() ? 1 : 0);
  gauge("admitd_shim_synced", "1 once the Kubernetes and admitd caches have synced.",
        Synced() ? 1 : 0);
  gauge("admitd_shim_workqueue_depth", "Jobs waiting to be reconciled.",
        static_cast<double>(queue_.Len()));
  gauge("admitd_shim_jobs_cached", "Jobs in the informer's cache.",
        static_cast<double>(jobs_->Size()));
  counter("admitd_shim_reconciles_total", "Job reconciles run.", c.reconciles.load());
  counter("admitd_shim_reconcile_errors_total", "Job reconciles that failed and were retried.",
          reconcile_errors_.load());
  // Workload-level counters add up both kinds' reconciles.
  const RayClusterReconcilerCounters* r = ray_reconciler_ ? &ray_reconciler_->counters() : nullptr;
  auto both = [&](const std::atomic<int64_t>& job,
                  std::atomic<int64_t> RayClusterReconcilerCounters::*ray) {
    return job.load() + (r != nullptr ? (r->*ray).load() : 0);
  };
  counter("admitd_shim_workloads_submitted_total", "Workloads created in admitd.",
          both(c.submits, &RayClusterReconcilerCounters::submits));
  counter("admitd_shim_jobs_started_total", "Jobs unsuspended on admission.", c.starts.load());
  counter("admitd_shim_jobs_stopped_total", "Jobs suspended (eviction, no admission).",
          c.stops.load());
  counter("admitd_shim_quota_releases_total", "ReleaseQuota calls (finished, stopped, reclaimable).",
          both(c.releases, &RayClusterReconcilerCounters::releases));
  counter("admitd_shim_workloads_deleted_total", "Workloads deleted in admitd.",
          both(c.deletes, &RayClusterReconcilerCounters::deletes));
  counter("admitd_shim_resizes_total", "Resize calls for elastic Jobs and RayClusters.",
          both(c.resizes, &RayClusterReconcilerCounters::resizes));
  counter("admitd_shim_pods_ungated_total", "Elastic Job and RayCluster pods ungated.",
          both(c.ungated, &RayClusterReconcilerCounters::ungated));
  counter("admitd_shim_multikueue_status_mirrored_total",
          "Manager Jobs whose status was set from their worker's Job.", c.mirrored.load());
  counter("admitd_shim_multikueue_status_reported_total",
          "Worker Job statuses reported to admitd for the manager.", c.reported.load());
  if (multikueue_worker_) {
    counter("admitd_shim_multikueue_jobs_created_total",
            "Jobs created in this worker cluster for winning MultiKueue copies.",
            multikueue_worker_->created());
    counter("admitd_shim_multikueue_jobs_withdrawn_total",
            "Worker Jobs deleted because the manager withdrew their copy.", c.withdrawn.load());
    counter("admitd_shim_multikueue_copy_reconcile_errors_total",
            "MultiKueue copy reconciles that failed and were retried.",
            copy_reconcile_errors_.load());
  }
  if (r != nullptr) {
    gauge("admitd_shim_raycluster_workqueue_depth", "RayClusters waiting to be reconciled.",
          static_cast<double>(ray_queue_.Len()));
    gauge("admitd_shim_rayclusters_cached", "RayClusters in the informer's cache.",
          static_cast<double>(rayclusters_->Size()));
    counter("admitd_shim_raycluster_reconciles_total", "RayCluster reconciles run.",
            r->reconciles.load());
    counter("admitd_shim_raycluster_reconcile_errors_total",
            "RayCluster reconciles that failed and were retried.", ray_reconcile_errors_.load());
    counter("admitd_shim_rayclusters_started_total", "RayClusters unsuspended on admission.",
            r->starts.load());
    counter("admitd_shim_rayclusters_stopped_total",
            "RayClusters suspended (eviction, no admission).", r->stops.load());
  }
  counter("admitd_shim_admitd_lists_total", "Full lists of admitd's Workloads (start, lost watch).",
          admitd_->lists());
  if (pod_sync_) {
    const PodSyncCounters& p = pod_sync_->counters();
    counter("admitd_shim_pod_reports_total", "ReportPods calls.", p.reports.load());
    counter("admitd_shim_pods_reported_total", "Pods reported (changed or deleted).",
            p.reported_pods.load());
    counter("admitd_shim_pod_report_errors_total", "ReportPods calls that failed.",
            p.report_errors.load());
    counter("admitd_shim_pods_ungated_by_directive_total", "Pods ungated on admitd's directive.",
            p.ungated.load());
    counter("admitd_shim_pods_deleted_total", "Pods deleted on admitd's directive.",
            p.deleted.load());
    counter("admitd_shim_pod_finalizers_removed_total", "Pod finalizers removed.",
            p.finalizers_removed.load());
    counter("admitd_shim_pod_directive_errors_total", "Directives that could not be applied yet.",
            p.directive_errors.load());
  }
  if (mirror_) {
    counter("admitd_shim_workload_mirror_writes_total",
            "Writes of mirrored Workload objects (create, update, status, delete).",
            mirror_->writes());
  }
  counter("admitd_shim_namespaces_applied_total", "Namespaces (labels) applied to admitd.",
          namespace_sync_->applied());
  counter("admitd_shim_namespaces_deleted_total", "Namespaces deleted in admitd.",
          namespace_sync_->deleted());
  counter("admitd_shim_events_recorded_total", "Kubernetes Events written.", events_->recorded());
  counter("admitd_shim_events_dropped_total", "Kubernetes Events that could not be written.",
          events_->dropped());
  return out;
}

}  // namespace admitd::shim
