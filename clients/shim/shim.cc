#include "clients/shim/shim.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/integrations/builtin.h"
#include "clients/shim/integrations/pod/pod_webhook.h"
#include "clients/shim/framework/multikueue.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/framework/reconcile_util.h"
#include "common/log.h"

namespace admitd::shim {
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
  s->namespaces_ = std::make_unique<Informer>(
      s->kube_, "/api/v1/namespaces", [s](const std::string&, const nlohmann::json& ns) {
        s->namespace_queue_.Add(ObjectKey(ns));
      });
  s->registry_ = BuiltinIntegrations();
  std::set<std::pair<std::string, std::string>> owner_kinds;
  for (const Integration* i : s->registry_->All()) {
    owner_kinds.insert({i->info().api_version, i->info().kind});
  }
  s->admitd_ = std::make_unique<AdmitdLink>(
      AdmitdLinkOptions{.admitd = *admitd,
                        .cluster = config.cluster,
                        .pod_workloads = s->PodsAdmitted(),
                        // Another cluster's shim deleted a namespace this cluster still has.
                        .on_namespace_deleted =
                            [s](const std::string& name) {
                              if (!reconcile::Live(s->namespaces_->Get(name))) return;
                              s->namespace_sync_->Forget(name);
                              s->namespace_queue_.Add(name);
                            },
                        .owner_kinds = std::move(owner_kinds)},
      [s](const v1::Workload& wl, bool deleted) {
        s->OnWorkload(wl);
        if (s->mirror_) s->mirror_->OnWorkload(wl, deleted);
      },
      [s](const v1::Event& e) { s->OnEvent(e); });
  FrameworkOptions options;
  options.cluster = config.cluster;
  options.excluded_namespaces = config.excluded_namespaces;
  options.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
  options.elastic_jobs = config.elastic_jobs;
  options.enabled = config.integrations;
  s->namespace_sync_ = std::make_unique<NamespaceSync>(*s->admitd_, *s->namespaces_);
  if (config.mirror_workloads) s->mirror_ = std::make_unique<WorkloadMirror>(s->kube_, *s->events_);
  if (s->PodsAdmitted()) {
    // The pods the webhook took in (label kueue.x-k8s.io/managed=true), and those of a kind
    // admitted as pods (its template or its pod reconcile gives them the label).
    s->managed_pods_ = std::make_unique<Informer>(
        s->kube_, "/api/v1/pods?labelSelector=kueue.x-k8s.io%2Fmanaged%3Dtrue",
        [s](const std::string& type, const nlohmann::json& pod) {
          if (s->pod_sync_) s->pod_sync_->OnPod(type, pod);
        });
    s->pod_sync_ = std::make_unique<PodSync>(s->kube_, *s->admitd_, *s->managed_pods_,
                                             *s->events_, config.cluster);
    s->pod_multikueue_ = std::make_unique<PodMultiKueue>(s->kube_, *s->admitd_, *s->managed_pods_,
                                                         config.cluster);
  }
  s->AddControllers(options);
  if (config.multikueue_worker) {
    s->multikueue_worker_ = std::make_unique<MultiKueueWorker>(
        s->kube_, *s->admitd_, *s->registry_,
        [s](const Integration& integration) -> const ObjectCache* {
          for (const auto& c : s->controllers_) {
            if (c->integration == &integration && c->reconciler) return c->objects.get();
          }
          return nullptr;
        },
        s->managed_pods_.get());
  }

  if (!config.webhook_listen.empty()) {
    AdmitdWebhookContextOptions context_options;
    context_options.excluded_namespaces.assign(config.excluded_namespaces.begin(),
                                               config.excluded_namespaces.end());
    s->webhook_context_ =
        std::make_unique<AdmitdWebhookContext>(s->admitd_->queues(), context_options);
    JobWebhookOptions job_options;
    job_options.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
    job_options.elastic_jobs = config.elastic_jobs;
    // An object controlled by a kind of a registered integration (a JobSet's child Jobs) belongs
    // to its owner's Workload: neither defaulted nor suspended.
    std::vector<OwnerKind> managed_kinds = {{"v1", "Pod"}};
    for (const Integration* i : s->registry_->All()) {
      if (i->HasGenericJob()) managed_kinds.push_back({i->info().api_version, i->info().kind});
    }
    job_options.managed_owner_kinds = managed_kinds;
    std::vector<KindWebhook> webhooks;
    for (const Integration* i : s->registry_->All()) {
      webhooks.push_back(i->Webhook(*s->webhook_context_, job_options,
                                    config.integrations.count(i->info().name) > 0));
    }
    PodWebhookOptions pod_options;
    // Enabled with `pod`, or for a kind admitted as pods alone: then only the pods such a kind
    // marks are taken in (plain pods are left as they are).
    pod_options.integration_enabled = s->PodsAdmitted();
    pod_options.parent_pods_only = config.integrations.count("pod") == 0;
    pod_options.manage_jobs_without_queue_name = config.manage_jobs_without_queue_name;
    pod_options.elastic_jobs = config.elastic_jobs;
    pod_options.managed_owner_kinds = managed_kinds;
    // admitd reads a pod's group name from its label (the annotation form is not read there).
    pod_options.workload_identifier_annotations = false;
    webhooks.push_back(PodWebhook(*s->webhook_context_, pod_options));
    s->webhook_ = std::make_unique<WebhookServer>(config.webhook_listen, config.webhook_cert_dir,
                                                  std::move(webhooks));
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

  for (const auto& c : s->controllers_) {
    Controller* raw = c.get();
    s->threads_.emplace_back([raw] { raw->objects->Run(); });
    if (raw->pods) s->threads_.emplace_back([raw] { raw->pods->Run(); });
    if (raw->children) s->threads_.emplace_back([raw] { raw->children->Run(); });
  }
  s->threads_.emplace_back([s] { s->namespaces_->Run(); });
  if (s->managed_pods_) s->threads_.emplace_back([s] { s->managed_pods_->Run(); });
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
  for (const auto& c : controllers_) c->queue.ShutDown();
  copy_queue_.ShutDown();
  pod_multikueue_queue_.ShutDown();
  namespace_queue_.ShutDown();
  if (elector_) elector_->Stop();
  for (const auto& c : controllers_) {
    c->objects->Stop();
    if (c->pods) c->pods->Stop();
    if (c->children) c->children->Stop();
  }
  namespaces_->Stop();
  if (managed_pods_) managed_pods_->Stop();
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
  // A cluster without a custom resource's definition has none of its objects: that does not
  // hold up the other kinds.
  for (const auto& c : controllers_) {
    const bool listed = c->objects->lists() > 0 ||
                        (c->integration->info().custom_resource && c->objects->missing());
    if (!listed || (c->pods && c->pods->lists() == 0)) return false;
    if (c->children && c->children->lists() == 0 && !c->children->missing()) return false;
  }
  return namespaces_->lists() > 0 && (!managed_pods_ || managed_pods_->lists() > 0) &&
         admitd_->Synced();
}

bool Shim::PodsAdmitted() const {
  if (config_.integrations.count("pod")) return true;
  for (const Integration* i : registry_->All()) {
    if (i->info().admitted_as_pods && config_.integrations.count(i->info().name)) return true;
  }
  return false;
}

void Shim::AddControllers(const FrameworkOptions& options) {
  for (const Integration* integration : registry_->All()) {
    const IntegrationInfo& info = integration->info();
    const bool enabled = config_.integrations.count(info.name) > 0;
    if (!enabled && info.name != "batch/job") continue;
    // A kind admitted as pods has a controller only when its pods take labels from it.
    if (!integration->HasGenericJob() && !integration->pod_patch()) continue;
    auto c = std::make_unique<Controller>();
    Controller* raw = c.get();
    c->integration = integration;
    c->enabled = enabled;
    c->objects = std::make_unique<Informer>(
        kube_, integration->CollectionPath(),
        [this, raw](const std::string&, const nlohmann::json& object) { OnObject(*raw, object); });
    if (!info.children_path.empty()) {
      // A child's change is its owner's (an autoscaled RayCluster resizes its RayJob).
      c->children = std::make_unique<Informer>(
          kube_, info.children_path, [raw](const std::string&, const nlohmann::json& child) {
            if (std::string key = ControllerKeyOfPod(child, raw->integration->info().api_version,
                                                     raw->integration->info().kind);
                !key.empty()) {
              raw->queue.Add(key);
            }
          });
    }
    if (!info.pods_path.empty()) {
      c->pods = std::make_unique<Informer>(
          kube_, info.pods_path, [raw](const std::string&, const nlohmann::json& pod) {
            std::string key = raw->integration->OwnerKeyOfPod(pod);
            // An elastic job's pod controlled by one of its children (a RayJob's cluster's).
            if (key.empty() && raw->children && ElasticPod(pod)) {
              if (std::string child = ControllerKeyOfPod(pod, "", ""); !child.empty()) {
                if (std::optional<nlohmann::json> c = raw->children->Get(child)) {
                  key = ControllerKeyOfPod(*c, raw->integration->info().api_version,
                                           raw->integration->info().kind);
                }
              }
            }
            if (!key.empty()) raw->queue.Add(key);
          });
      // A kind whose pods are found by a label (a JobSet's, a RayJob's): an index, not a scan.
      if (!info.pods_by_label.empty()) c->pods->IndexLabel(info.pods_by_label);
    }
    if (integration->HasGenericJob()) {
      c->reconciler = std::make_unique<Reconciler>(
          *integration, *registry_, kube_, *admitd_, *c->objects,
          c->pods ? *c->pods : NoObjects(), *events_, options,
          c->children ? *c->children : NoObjects());
    }
    if (integration->pod_patch()) {
      c->pod_parent = std::make_unique<PodParentReconciler>(*integration, kube_, *c->objects,
                                                            *c->pods, options);
    }
    if (info.name == "batch/job") jobs_ = raw;
    controllers_.push_back(std::move(c));
  }
}

Shim::Controller* Shim::ControllerOf(const std::string& kind) const {
  for (const auto& c : controllers_) {
    if (c->integration->info().kind == kind) return c.get();
  }
  return nullptr;
}

void Shim::OnObject(Controller& c, const nlohmann::json& object) {
  if (c.enabled) c.queue.Add(ObjectKey(object));
  // A worker Job that goes may leave its copy waiting for a new one (the same name, after a
  // re-dispatch to this cluster).
  if (c.reconciler && multikueue_worker_ && IsMultiKueueWorkerJob(object)) {
    copy_queue_.Add(Str(Field(object, "metadata"), "namespace") + "/" +
                    PrebuiltWorkloadName(object));
  }
}

void Shim::OnWorkload(const v1::Workload& wl) {
  if (pod_multikueue_ && PodMultiKueue::Concerns(wl, config_.cluster)) {
    pod_multikueue_queue_.Add(wl.metadata().namespace_() + "/" + wl.metadata().name());
  }
  const v1::OwnerReference* owner = ControllerOwner(wl);
  // A copy not adopted yet, or one a worker's pods took (its manifest may list more pods).
  if (multikueue_worker_ && (owner == nullptr || owner->kind() == "Pod") &&
      wl.metadata().labels().count(kMultiKueueOriginLabel)) {
    copy_queue_.Add(wl.metadata().namespace_() + "/" + wl.metadata().name());
    // An object made from this copy that has not adopted it yet: it must hear of the copy too
    // (the manager may withdraw the copy first, and then the object goes with it).
    const std::string& ns = wl.metadata().namespace_();
    const std::string& name = wl.metadata().name();
    for (const auto& c : controllers_) {
      if (!c->reconciler) continue;
      for (const nlohmann::json& o : c->objects->Select([&](const nlohmann::json& object) {
             return Str(Field(object, "metadata"), "namespace") == ns &&
                    IsMultiKueueWorkerJob(object) && PrebuiltWorkloadName(object) == name;
           })) {
        c->queue.Add(ns + "/" + Str(Field(o, "metadata"), "name"));
      }
    }
  }
  if (owner == nullptr) return;
  if (Controller* c = ControllerOf(owner->kind())) {
    c->queue.Add(wl.metadata().namespace_() + "/" + owner->name());
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
  const Controller* owners = ControllerOf(owner->kind());
  if (owners == nullptr) return;
  std::optional<nlohmann::json> object =
      owners->objects->Get(r.namespace_() + "/" + owner->name());
  if (!object || Str((*object)["metadata"], "uid") != owner->uid()) return;
  events_->Record(*object, event.type(), event.reason(), event.note(), controller);
}

}  // namespace admitd::shim
