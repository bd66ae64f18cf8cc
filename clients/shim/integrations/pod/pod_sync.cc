#include "clients/shim/integrations/pod/pod_sync.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/integrations/pod/pod_observation.h"
#include "common/log.h"

namespace admitd::shim {
namespace {


std::string PodPath(const std::string& ns, const std::string& name) {
  return absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name);
}

std::string Now() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

void SetDeadline(grpc::ClientContext* ctx, absl::Duration d) {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + d));
}

}  // namespace

PodSync::PodSync(const KubeClient& kube, AdmitdLink& admitd, const Informer& pods,
                 EventRecorder& events, std::string cluster)
    : kube_(kube),
      admitd_(admitd),
      pods_(pods),
      events_(events),
      cluster_(std::move(cluster)),
      stub_(v1::PodService::NewStub(admitd.channel())) {}

void PodSync::OnPod(const std::string& type, const nlohmann::json& pod) {
  const std::string key = ObjectKey(pod);
  absl::MutexLock lock(&mu_);
  if (type == "DELETED") {
    const std::string uid = Str(Field(pod, "metadata"), "uid");
    changed_[key] = uid;
    const std::string prefix = uid + "/";
    for (auto it = applied_.lower_bound(prefix);
         it != applied_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = applied_.erase(it);
    }
    refused_.erase(uid);
  } else {
    changed_[key] = std::nullopt;
  }
}

absl::Status PodSync::Send(v1::ReportPodsRequest& request) {
  request.set_cluster(cluster_);
  v1::ReportPodsResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, absl::Seconds(60));
  if (!Track(&ctx)) return absl::CancelledError("stopping");
  grpc::Status s = stub_->ReportPods(&ctx, request, &resp);
  Untrack(&ctx);
  if (stopped_.load()) return absl::CancelledError("stopping");
  admitd_.ReportCall(s);
  if (!s.ok()) {
    ++counters_.report_errors;
    return absl::UnavailableError(absl::StrCat("report pods: ", s.error_message()));
  }
  ++counters_.reports;
  counters_.reported_pods += request.pods_size() + request.deleted_size();
  if (log::GetLevel() <= log::Level::kDebug) {
    std::string what;
    for (const v1::PodObservation& p : request.pods()) {
      absl::StrAppend(&what, p.name(), "@", p.resource_version(), ":",
                      v1::PodPhase_Name(p.phase()), " ");
    }
    ADMITD_LOG(kDebug, "pods reported",
               {{"pods", what},
                {"accepted", absl::StrCat(resp.accepted())},
                {"stale", absl::StrCat(resp.stale())},
                {"errors", absl::StrCat(resp.errors_size())},
                {"directives", absl::StrCat(resp.directives_size())}});
  }
  for (const v1::PodReportError& e : resp.errors()) RecordRefusal(e);
  for (const v1::PodEvent& e : resp.events()) Record(e);
  for (const v1::PodDirective& d : resp.directives()) ApplyOrRetry(d);
  return absl::OkStatus();
}

void PodSync::ApplyOrRetry(const v1::PodDirective& d) {
  absl::Status st = Apply(d);
  if (st.ok()) return;
  ++counters_.directive_errors;
  ADMITD_LOG(kDebug, "directive not applied", {{"pod", d.pod().name()}, {"error", st.ToString()}});
  // Report the pod again in a second: the answer lists what is still outstanding for it.
  absl::MutexLock lock(&mu_);
  retry_[absl::StrCat(d.pod().namespace_(), "/", d.pod().name())] = absl::Now() + absl::Seconds(1);
}

absl::Status PodSync::ReportAll() {
  {
    absl::MutexLock lock(&mu_);
    changed_.clear();  // the snapshot covers them
  }
  v1::ReportPodsRequest req;
  req.set_full_snapshot(true);
  for (const nlohmann::json& pod : pods_.Select([](const nlohmann::json&) { return true; })) {
    absl::StatusOr<v1::PodObservation> obs = PodObservationFromJson(pod, cluster_);
    if (obs.ok()) *req.add_pods() = *std::move(obs);
  }
  return Send(req);
}

absl::Status PodSync::ReportChanged() {
  std::map<std::string, std::optional<std::string>> changed;
  {
    absl::MutexLock lock(&mu_);
    changed.swap(changed_);
    const absl::Time now = absl::Now();
    for (auto it = retry_.begin(); it != retry_.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      changed.emplace(it->first, std::nullopt);
      it = retry_.erase(it);
    }
  }
  if (changed.empty()) return absl::OkStatus();
  v1::ReportPodsRequest req;
  for (const auto& [key, deleted_uid] : changed) {
    std::optional<nlohmann::json> pod = pods_.Get(key);
    if (pod) {
      absl::StatusOr<v1::PodObservation> obs = PodObservationFromJson(*pod, cluster_);
      if (obs.ok()) *req.add_pods() = *std::move(obs);
    } else {
      const size_t slash = key.find('/');
      v1::PodDeletion* d = req.add_deleted();
      d->set_namespace_(key.substr(0, slash));
      d->set_name(key.substr(slash + 1));
      if (deleted_uid) d->set_uid(*deleted_uid);
    }
  }
  absl::Status s = Send(req);
  if (!s.ok()) {  // report them again with the next batch (newer changes win)
    absl::MutexLock lock(&mu_);
    for (auto& [key, uid] : changed) changed_.emplace(key, uid);
  }
  return s;
}

void PodSync::RecordRefusal(const v1::PodReportError& e) {
  ADMITD_LOG(kWarning, "pod refused by admitd",
             {{"pod", absl::StrCat(e.namespace_(), "/", e.name())}, {"error", e.message()}});
  std::optional<nlohmann::json> pod = pods_.Get(absl::StrCat(e.namespace_(), "/", e.name()));
  if (!pod) return;  // a group's error, or the pod is gone
  const std::string uid = Str(Field(*pod, "metadata"), "uid");
  {
    absl::MutexLock lock(&mu_);
    std::string& last = refused_[uid];
    if (last == e.message()) return;  // said already (the pod is reported again and again)
    last = e.message();
  }
  const nlohmann::json involved = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"namespace", e.namespace_()}, {"name", e.name()}, {"uid", uid}}}};
  events_.Record(involved, "Warning", kPodRefusedReason, e.message(), kPodController);
}

void PodSync::Record(const v1::PodEvent& e) {
  if (e.pod().name().empty()) return;  // about the Workload: it is not an object of the cluster
  const nlohmann::json involved = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"namespace", e.pod().namespace_()}, {"name", e.pod().name()}, {"uid", e.pod().uid()}}}};
  events_.Record(involved, e.type() == v1::PodEvent::WARNING ? "Warning" : "Normal", e.reason(),
                 e.message(), kPodController);
}

absl::Status PodSync::Apply(const v1::PodDirective& d) {
  const std::string ns = d.pod().namespace_(), name = d.pod().name();
  std::optional<nlohmann::json> pod = pods_.Get(ns + "/" + name);
  if (!pod) return absl::OkStatus();  // gone already
  const nlohmann::json& meta = Field(*pod, "metadata");
  if (!d.pod().uid().empty() && Str(meta, "uid") != d.pod().uid()) return absl::OkStatus();
  const std::string uid = Str(meta, "uid");
  const std::string rv = Str(meta, "resourceVersion");
  const nlohmann::json& spec = Field(*pod, "spec");
  // A directive comes again until a report shows it done: in the report's answer and on the
  // watch both (on two threads), and after every commit of its Workload. It is applied once to a
  // version of the pod: not while it is being applied, nor while the informer shows no version
  // newer than those its writes made.
  const std::string applied_key =
      absl::StrCat(uid, "/", v1::PodDirective::Action_Name(d.action()), "/", d.scheduling_gate());
  int64_t version = -1;
  if (!absl::SimpleAtoi(rv, &version)) version = -1;  // not an integer: no such check
  bool claimed = false;
  const auto claim = [&] {
    if (version < 0) return true;
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = applied_.try_emplace(applied_key, Applied{version, true});
    if (!inserted) {
      if (it->second.busy || version <= it->second.version) return false;
      it->second = Applied{version, true};
    }
    claimed = true;
    return true;
  };
  const auto wrote = [&](const absl::StatusOr<nlohmann::json>& r) {
    int64_t written = -1;
    if (!claimed || !r.ok() ||
        !absl::SimpleAtoi(Str(Field(*r, "metadata"), "resourceVersion"), &written)) {
      return;
    }
    absl::MutexLock lock(&mu_);
    if (auto it = applied_.find(applied_key); it != applied_.end()) {
      it->second.version = std::max(it->second.version, written);
    }
  };
  bool succeeded = false;
  // Whatever way Apply returns: done (its writes' versions kept), or failed (forgotten).
  absl::Cleanup release = [&] {
    if (!claimed) return;
    absl::MutexLock lock(&mu_);
    auto it = applied_.find(applied_key);
    if (it == applied_.end()) return;
    if (succeeded) {
      it->second.busy = false;
    } else {
      applied_.erase(it);
    }
  };

  switch (d.action()) {
    case v1::PodDirective::UNGATE: {
      const std::string gate = d.scheduling_gate().empty() ? kAdmissionGate : d.scheduling_gate();
      nlohmann::json remaining = nlohmann::json::array();
      bool gated = false;
      if (Field(spec, "schedulingGates").is_array()) {
        for (const nlohmann::json& g : spec["schedulingGates"]) {
          // With the admission gate goes the topology gate the webhook adds (TAS on): admitd
          // assigns no topology, so a pod admitted without one must not wait for it (Kueue's
          // pod controller ungates both likewise).
          if (Str(g, "name") == gate ||
              (gate == kAdmissionGate && Str(g, "name") == kTopologyGate)) {
            gated = true;
          } else {
            remaining.push_back(g);
          }
        }
      }
      if (!gated) return absl::OkStatus();  // done already
      nlohmann::json patch = {
          {"metadata", {{"resourceVersion", rv}}},
          {"spec", {{"schedulingGates", remaining.empty() ? nlohmann::json(nullptr) : remaining}}}};
      if (gate == kAdmissionGate) {
        // In the same patch as the gate's removal: Kubernetes lets a pod's node selector grow
        // only while the pod is gated.
        for (const auto& [k, v] : d.node_selector()) patch["spec"]["nodeSelector"][k] = v;
        for (const auto& [k, v] : d.labels()) patch["metadata"]["labels"][k] = v;
        for (const auto& [k, v] : d.annotations()) patch["metadata"]["annotations"][k] = v;
      }
      if (!claim()) return absl::OkStatus();
      absl::StatusOr<nlohmann::json> r = kube_.Patch(PodPath(ns, name), patch);
      if (!r.ok()) return r.status();
      wrote(r);
      ++counters_.ungated;
      break;
    }
    case v1::PodDirective::DELETE: {
      if (!Field(meta, "deletionTimestamp").is_null()) return absl::OkStatus();
      if (!claim()) return absl::OkStatus();
      if (!d.termination_reason().empty()) {
        // With the uid: a new pod that took the name refuses the patch (and is not deleted).
        const nlohmann::json patch = {
            {"metadata", {{"uid", uid}}},
            {"status",
             {{"conditions",
               {{{"type", "TerminationTarget"},
                 {"status", "True"},
                 {"reason", d.termination_reason()},
                 {"message", d.termination_message()},
                 {"lastTransitionTime", Now()}}}}}}};
        absl::StatusOr<nlohmann::json> r = kube_.Patch(PodPath(ns, name) + "/status", patch,
                                                       "application/strategic-merge-patch+json");
        if (!r.ok()) {
          if (r.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
          return r.status();
        }
        wrote(r);
      }
      // With the uid too: a pod that took the name since is not deleted (409: nothing to do).
      absl::StatusOr<nlohmann::json> r = kube_.DeleteUid(PodPath(ns, name), uid);
      if (!r.ok()) {
        const absl::StatusCode code = r.status().code();
        if (code == absl::StatusCode::kNotFound || code == absl::StatusCode::kAborted) {
          return absl::OkStatus();
        }
        return r.status();
      }
      wrote(r);
      ++counters_.deleted;
      break;
    }
    case v1::PodDirective::REMOVE_FINALIZER: {
      nlohmann::json remaining = nlohmann::json::array();
      bool has = false;
      if (Field(meta, "finalizers").is_array()) {
        for (const nlohmann::json& f : meta["finalizers"]) {
          if (f.is_string() && f.get<std::string>() == kManagedLabel) {
            has = true;
          } else {
            remaining.push_back(f);
          }
        }
      }
      if (!has) return absl::OkStatus();
      // Guarded by the resourceVersion (Kueue's strict patch): a 409 retries from fresh state.
      const nlohmann::json patch = {
          {"metadata",
           {{"resourceVersion", rv},
            {"finalizers", remaining.empty() ? nlohmann::json(nullptr) : remaining}}}};
      if (!claim()) return absl::OkStatus();
      absl::StatusOr<nlohmann::json> r = kube_.Patch(PodPath(ns, name), patch);
      if (!r.ok()) {
        if (r.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
        return r.status();
      }
      wrote(r);
      ++counters_.finalizers_removed;
      break;
    }
    default:
      return absl::OkStatus();
  }
  succeeded = true;
  if (d.has_event() && !d.event().reason().empty()) Record(d.event());
  return absl::OkStatus();
}

void PodSync::WatchDirectives() {
  absl::Duration backoff = absl::Milliseconds(500);
  while (!stopped_.load()) {
    // List, apply, then watch from the list's revision (docs/shim-protocol.md §4).
    v1::ListDirectivesRequest list_req;
    list_req.set_cluster(cluster_);
    v1::ListDirectivesResponse listed;
    grpc::ClientContext list_ctx;
    SetDeadline(&list_ctx, absl::Seconds(30));
    if (!Track(&list_ctx)) return;
    grpc::Status s = stub_->ListDirectives(&list_ctx, list_req, &listed);
    Untrack(&list_ctx);
    if (stopped_.load()) return;
    admitd_.ReportCall(s);
    if (s.ok()) {
      for (const v1::PodDirective& d : listed.directives()) {
        ApplyOrRetry(d);
      }
      v1::WatchRequest req;
      req.set_since_revision(listed.revision());
      req.add_kinds(v1::OBJECT_KIND_POD_DIRECTIVE);
      req.set_cluster(cluster_);
      grpc::ClientContext ctx;
      if (!Track(&ctx)) return;
      std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader =
          admitd_.admission().Watch(&ctx, req);
      v1::WatchEvent ev;
      while (reader->Read(&ev)) {
        backoff = absl::Milliseconds(500);
        // Commits between the list and the watch's start are not sent: list again.
        if (ev.type() == v1::WatchEvent::SYNCED && ev.revision() > listed.revision()) {
          ctx.TryCancel();
          break;
        }
        if (ev.has_directive()) ApplyOrRetry(ev.directive());
      }
      s = reader->Finish();
      Untrack(&ctx);
      if (s.error_code() == grpc::StatusCode::CANCELLED) continue;  // list again at once
    }
    if (stopped_.load()) return;
    for (absl::Time until = absl::Now() + backoff; absl::Now() < until && !stopped_.load();) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    backoff = std::min(backoff * 2, absl::Seconds(30));
  }
}

void PodSync::Run() {
  std::thread watcher([this] { WatchDirectives(); });
  bool snapshot_sent = false;
  while (!stopped_.load()) {
    absl::Status s = snapshot_sent ? ReportChanged() : ReportAll();
    if (s.ok()) snapshot_sent = true;
    absl::SleepFor(s.ok() ? absl::Milliseconds(20) : absl::Milliseconds(500));
  }
  watcher.join();
}

bool PodSync::Track(grpc::ClientContext* ctx) {
  absl::MutexLock lock(&mu_);
  if (stopped_.load()) return false;
  calls_.insert(ctx);
  return true;
}

void PodSync::Untrack(grpc::ClientContext* ctx) {
  absl::MutexLock lock(&mu_);
  calls_.erase(ctx);
}

void PodSync::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_.store(true);
  for (grpc::ClientContext* ctx : calls_) ctx->TryCancel();
}

}  // namespace admitd::shim
