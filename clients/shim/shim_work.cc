// admitd-shim's work while it leads (Shim's half in shim.h): once every cache has synced, the
// workers of each kind's queue running its reconciler, the periodic resync, and the worker that
// applies namespaces to admitd.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/framework/reconcile_util.h"
#include "clients/shim/shim.h"
#include "common/log.h"

namespace admitd::shim {

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
  log::Fields cached = {{"identity", config_.identity}};
  for (const auto& c : controllers_) {
    cached.emplace_back(c->integration->info().resource, absl::StrCat(c->objects->Size()));
  }
  ADMITD_LOG(kInfo, "leading", cached);
  for (const auto& c : controllers_) {
    const IntegrationInfo& info = c->integration->info();
    if (info.custom_resource && c->objects->missing()) {
      ADMITD_LOG(kWarning,
                 absl::StrCat(info.resource, ".", info.api_version.substr(0, info.api_version.find('/')),
                              " is not installed: no ", info.kind, " is managed until it is"),
                 {});
    }
  }
  Resync();
  for (const auto& c : controllers_) {
    Controller* raw = c.get();
    for (int i = 0; i < config_.workers; ++i) {
      workers_.emplace_back([this, raw] {
        Worker(raw->queue,
               [raw](const std::string& key) {
                 absl::Status status = absl::OkStatus();
                 if (raw->reconciler) status = raw->reconciler->Reconcile(key);
                 if (raw->pod_parent) status.Update(raw->pod_parent->Reconcile(key));
                 return status;
               },
               raw->errors, raw->integration->info().short_name.c_str(),
               [raw](const std::string& key) {
                 std::optional<nlohmann::json> object = raw->objects->Get(key);
                 return object ? Str(Field(*object, "metadata"), "uid") : std::string();
               });
      });
    }
  }
  // Queues keyed by a Workload's "namespace/name": its uid roots the reconcile's trace.
  auto workload_uid = [this](const std::string& key) {
    const size_t slash = key.find('/');
    if (slash == std::string::npos) return std::string();
    std::optional<v1::Workload> wl = admitd_->Workload(key.substr(0, slash), key.substr(slash + 1));
    return wl ? wl->metadata().uid() : std::string();
  };
  if (multikueue_worker_) {
    workers_.emplace_back([this, workload_uid] {
      Worker(copy_queue_,
             [this](const std::string& key) { return multikueue_worker_->Reconcile(key); },
             copy_reconcile_errors_, "multikueue copy", workload_uid);
    });
  }
  if (pod_multikueue_) {
    workers_.emplace_back([this, workload_uid] {
      Worker(pod_multikueue_queue_,
             [this](const std::string& key) { return pod_multikueue_->Reconcile(key); },
             pod_multikueue_errors_, "multikueue pods", workload_uid);
    });
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
  for (const auto& c : controllers_) {
    if (c->enabled) {
      for (const std::string& key : c->objects->Keys()) c->queue.Add(key);
    }
    for (const std::string& key : admitd_->OwnerKeys(c->integration->info().kind)) {
      c->queue.Add(key);
    }
  }
  if (multikueue_worker_) {
    for (const std::string& key : multikueue_worker_->Keys()) copy_queue_.Add(key);
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

}  // namespace admitd::shim
