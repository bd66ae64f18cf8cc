// The generic reconcile's steps (reconciler.h): each one write to admitd or to the API server,
// with its counter and event.
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/elastic_pods.h"
#include "clients/shim/framework/reconciler.h"
#include "clients/shim/framework/podset_info.h"
#include "clients/shim/framework/reconcile_util.h"

namespace admitd::shim {
namespace {

using reconcile::Admitted;
using reconcile::Meta;
using reconcile::Reserved;
using reconcile::SameContainers;
using reconcile::SameTolerations;

}  // namespace

void Reconciler::RecordEvent(const GenericJob& job, const std::string& reason,
                             const std::string& message) {
  events_.Record(job.Object(), "Normal", reason, message, integration_.info().controller);
}

absl::Status Reconciler::Submit(const GenericJob& job, const v1::Workload& built,
                                bool record_created) {
  v1::SubmitRequest req;
  *req.mutable_workload() = built;
  absl::StatusOr<v1::SubmitResponse> resp = admitd_.Submit(req);
  if (!resp.ok()) return resp.status();
  if (resp->created()) ++counters_.submits;
  if (resp->created() && record_created) {
    RecordEvent(job, "CreatedWorkload",
                absl::StrCat("Created Workload: ", built.metadata().namespace_(), "/",
                             built.metadata().name()));
  }
  return absl::OkStatus();
}

absl::Status Reconciler::Resize(const GenericJob& job, const v1::Workload& built) {
  const nlohmann::json meta = Meta(job.Object());
  v1::ResizeRequest req;
  req.set_namespace_(Str(meta, "namespace"));
  req.mutable_job()->set_api_version(integration_.info().api_version);
  req.mutable_job()->set_kind(integration_.info().kind);
  req.mutable_job()->set_name(Str(meta, "name"));
  req.mutable_job()->set_uid(Str(meta, "uid"));
  req.set_generation(meta.value("generation", int64_t{1}));
  for (const v1::PodSet& ps : built.spec().pod_sets()) {
    v1::PodSetCount* c = req.add_pod_sets();
    c->set_name(ps.name());
    c->set_count(ps.count());
  }
  absl::StatusOr<v1::ResizeResponse> resp = admitd_.Resize(req);
  if (!resp.ok()) return resp.status();
  ++counters_.resizes;
  return absl::OkStatus();  // the next reconcile sees the new counts
}

absl::Status Reconciler::DeleteWorkload(const v1::Workload& wl) {
  absl::Status s = admitd_.DeleteWorkload(wl);
  if (s.ok()) ++counters_.deletes;
  return s;
}

absl::Status Reconciler::ReleaseQuota(const v1::ReleaseQuotaRequest& req) {
  absl::Status s = admitd_.ReleaseQuota(req);
  if (s.ok()) ++counters_.releases;
  return s;
}

absl::Status Reconciler::Start(const GenericJob& job, const v1::Workload& wl, bool elastic) {
  absl::StatusOr<std::map<std::string, v1::ResourceFlavor>> flavors =
      reconcile::AdmittedFlavors(admitd_, wl);
  if (!flavors.ok()) return flavors.status();
  absl::StatusOr<std::vector<PodSetInfo>> infos = PodSetInfos(wl, *flavors);
  absl::StatusOr<nlohmann::json> patch = infos.ok()
                                             ? job.StartPatch(*infos, elastic)
                                             : absl::StatusOr<nlohmann::json>(infos.status());
  if (!patch.ok()) {
    // Permanent (Kueue finishes the Workload with reason FailedToStart); the job stays
    // suspended.
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(wl.metadata().namespace_());
    req.set_name(wl.metadata().name());
    req.set_uid(wl.metadata().uid());
    req.mutable_finished()->set_succeeded(false);
    req.mutable_finished()->set_message(std::string(patch.status().message()));
    return ReleaseQuota(req);
  }
  if (absl::StatusOr<nlohmann::json> r = PatchObject(job.Object(), *patch); !r.ok()) {
    return r.status();
  }
  ++counters_.starts;
  RecordEvent(job, "Started",
              absl::StrCat("Admitted by clusterQueue ", wl.status().admission().cluster_queue()));
  return absl::OkStatus();
}

absl::Status Reconciler::Stop(const GenericJob& job, const v1::Workload* wl,
                              const std::string& message) {
  const StopPlan plan = job.PlanStop(wl);
  // Each write from the object the previous one answered (its resourceVersion).
  nlohmann::json current = job.Object();
  auto apply = [&](const nlohmann::json& patch, bool status) -> absl::Status {
    if (patch.is_null()) return absl::OkStatus();
    absl::StatusOr<nlohmann::json> r = PatchObject(current, patch, status);
    if (!r.ok()) return r.status();
    current = *std::move(r);
    return absl::OkStatus();
  };
  if (!plan.suspend.is_null()) {
    nlohmann::json after = current;
    after.merge_patch(plan.suspend);
    if (after != current) {
      if (absl::Status s = apply(plan.suspend, false); !s.ok()) return s;
      ++counters_.stops;
      RecordEvent(job, "Stopped", message);
    }
  }
  if (absl::Status s = apply(plan.status, true); !s.ok()) return s;
  if (absl::Status s = apply(plan.restore, false); !s.ok()) return s;
  // A kind that cannot be suspended: its running pods go (its controller makes them again,
  // gated until the Workload is admitted again).
  for (const nlohmann::json& pod : plan.delete_pods) {
    const nlohmann::json meta = Meta(pod);
    absl::StatusOr<nlohmann::json> r = kube_.DeleteUid(
        absl::StrCat("/api/v1/namespaces/", Str(meta, "namespace"), "/pods/", Str(meta, "name")),
        Str(meta, "uid"));
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound &&
        r.status().code() != absl::StatusCode::kAborted) {
      return r.status();
    }
  }
  if (!plan.delete_pods.empty()) {
    ++counters_.stops;
    RecordEvent(job, "Stopped", message);
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> Reconciler::PatchObject(const nlohmann::json& object,
                                                       nlohmann::json patch, bool status) {
  nlohmann::json after = object;
  after.merge_patch(patch);
  if (after == object) return object;
  const nlohmann::json meta = Meta(object);
  patch["metadata"]["resourceVersion"] = Str(meta, "resourceVersion");
  std::string path = integration_.ObjectPath(Str(meta, "namespace"), Str(meta, "name"));
  if (status) path += "/status";
  return kube_.Patch(path, patch);
}

absl::Status Reconciler::Ungate(const GenericJob& job, const v1::Workload& slice) {
  auto chain_it = slice.metadata().annotations().find("kueue.x-k8s.io/workload-slice-name");
  // A kind that starts by ungating: its pods get the chain's annotation as they are ungated.
  const std::string chain = job.StartsByUngating() ? ""
                            : chain_it != slice.metadata().annotations().end()
                                ? chain_it->second
                                : slice.metadata().name();
  std::map<std::string, PodSetInfo> infos;
  if (job.StartsByUngating()) {
    absl::StatusOr<std::map<std::string, v1::ResourceFlavor>> flavors =
        reconcile::AdmittedFlavors(admitd_, slice);
    if (!flavors.ok()) return flavors.status();
    absl::StatusOr<std::vector<PodSetInfo>> list = PodSetInfos(slice, *flavors);
    if (!list.ok()) return list.status();
    for (PodSetInfo& info : *list) infos[info.name] = std::move(info);
  }
  const std::vector<nlohmann::json> pods = PodsOf(job.Object());
  std::map<std::string, int> admitted;
  for (const v1::PodSet& ps : slice.spec().pod_sets()) admitted[ps.name()] = ps.count();
  std::map<std::string, const nlohmann::json*> by_name;
  for (const nlohmann::json& pod : pods) by_name[Str(Meta(pod), "name")] = &pod;
  for (const std::string& name : PodsToUngate(pods, chain, admitted)) {
    const nlohmann::json& pod = *by_name[name];
    absl::StatusOr<nlohmann::json> patch = UngatePatch(pod);
    if (job.StartsByUngating()) {
      auto info = infos.find(Str(Field(Meta(pod), "labels"), "kueue.x-k8s.io/podset"));
      if (info == infos.end()) continue;
      patch = UngatePatchWithInfo(pod, info->second);
      if (!patch.ok()) return patch.status();
    }
    absl::StatusOr<nlohmann::json> r = kube_.Patch(
        absl::StrCat("/api/v1/namespaces/", Str(Meta(pod), "namespace"), "/pods/", name),
        *patch);
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
    ++counters_.ungated;
  }
  return absl::OkStatus();
}

bool Reconciler::Equivalent(const v1::Workload& built, const v1::Workload& wl) const {
  const v1::WorkloadSpec& a = built.spec();
  const v1::WorkloadSpec& b = wl.spec();
  if (a.has_maximum_execution_time_seconds() != b.has_maximum_execution_time_seconds() ||
      a.maximum_execution_time_seconds() != b.maximum_execution_time_seconds()) {
    return false;
  }
  if (a.pod_sets_size() != b.pod_sets_size()) return false;
  const bool reserved = Reserved(wl);
  for (int i = 0; i < a.pod_sets_size(); ++i) {
    const v1::PodSet& x = a.pod_sets(i);
    const v1::PodSet& y = b.pod_sets(i);
    bool count_ok = x.count() == y.count();
    // A partially admitted job runs with its admitted count.
    if (!count_ok && reserved && i < wl.status().admission().pod_set_assignments_size()) {
      count_ok = x.count() == wl.status().admission().pod_set_assignments(i).count();
    }
    if (!count_ok) return false;
    if (x.has_min_count() != y.has_min_count() || x.min_count() != y.min_count()) return false;
    if (!Admitted(wl) && !SameTolerations(x.template_().spec(), y.template_().spec())) {
      return false;
    }
  }
  // Containers and init containers, whole: by the digest recorded at submission when there is
  // one, else as far as the Workload keeps them.
  auto want = built.metadata().annotations().find(kContainersDigestAnnotation);
  auto have = wl.metadata().annotations().find(kContainersDigestAnnotation);
  if (have != wl.metadata().annotations().end()) {
    return want != built.metadata().annotations().end() && have->second == want->second;
  }
  for (int i = 0; i < a.pod_sets_size(); ++i) {
    const v1::PodSpec& x = a.pod_sets(i).template_().spec();
    const v1::PodSpec& y = b.pod_sets(i).template_().spec();
    if (!SameContainers(x.containers(), y.containers()) ||
        !SameContainers(x.init_containers(), y.init_containers())) {
      return false;
    }
  }
  return true;
}

}  // namespace admitd::shim
