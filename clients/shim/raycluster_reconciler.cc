#include "clients/shim/raycluster_reconciler.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/elastic_pods.h"
#include "clients/shim/job_reconciler.h"
#include "clients/shim/podset_info.h"
#include "clients/shim/reconcile_util.h"
#include "common/log.h"
#include "google/protobuf/util/message_differencer.h"

namespace admitd::shim {
namespace {

using google::protobuf::util::MessageDifferencer;
using reconcile::Admitted;
using reconcile::Finished;
using reconcile::FromGrpc;
using reconcile::Live;
using reconcile::Meta;
using reconcile::OwnedByManagedKind;
using reconcile::Reserved;
using reconcile::SameContainers;
using reconcile::SameTolerations;
using reconcile::SetDeadline;
using reconcile::Str;




std::string ClusterPath(const std::string& ns, const std::string& name) {
  return absl::StrCat("/apis/ray.io/v1/namespaces/", ns, "/rayclusters/", name);
}







bool SamePodSetNames(const v1::Workload& a, const v1::Workload& b) {
  if (a.spec().pod_sets_size() != b.spec().pod_sets_size()) return false;
  for (int i = 0; i < a.spec().pod_sets_size(); ++i) {
    if (a.spec().pod_sets(i).name() != b.spec().pod_sets(i).name()) return false;
  }
  return true;
}

v1::ReleaseQuotaRequest ReleaseOf(const v1::Workload& wl) {
  v1::ReleaseQuotaRequest req;
  req.set_namespace_(wl.metadata().namespace_());
  req.set_name(wl.metadata().name());
  req.set_uid(wl.metadata().uid());
  return req;
}

}  // namespace

std::string OwnerRayClusterKey(const nlohmann::json& pod) {
  const nlohmann::json meta = Meta(pod);
  for (const nlohmann::json& ref : meta.value("ownerReferences", nlohmann::json::array())) {
    if (ref.value("controller", false) && Str(ref, "kind") == kRayClusterKind &&
        Str(ref, "apiVersion") == kRayClusterApiVersion) {
      return Str(meta, "namespace") + "/" + Str(ref, "name");
    }
  }
  return "";
}

RayClusterReconciler::RayClusterReconciler(const KubeClient& kube, AdmitdLink& admitd,
                                           const Informer& clusters, const Informer& pods,
                                           EventRecorder& events,
                                           RayClusterReconcilerOptions options)
    : kube_(kube),
      admitd_(admitd),
      clusters_(clusters),
      pods_(pods),
      events_(events),
      options_(std::move(options)) {}

absl::Status RayClusterReconciler::Reconcile(const std::string& key) {
  ++counters_.reconciles;
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  std::optional<nlohmann::json> rc = clusters_.Get(key);
  std::vector<v1::Workload> workloads = admitd_.WorkloadsOf(kRayClusterOwnerKind, ns, name);
  if (!Live(rc)) {
    return Finalize(key, workloads);
  }
  if (options_.excluded_namespaces.count(ns)) return absl::OkStatus();
  const nlohmann::json labels = Meta(*rc).value("labels", nlohmann::json::object());
  if (Str(labels, "kueue.x-k8s.io/queue-name").empty() &&
      !options_.manage_jobs_without_queue_name) {
    return absl::OkStatus();
  }
  if (OwnedByManagedKind(*rc)) return absl::OkStatus();

  // Workloads of an earlier cluster of the same name go.
  const std::string uid = Str(Meta(*rc), "uid");
  std::vector<v1::Workload> owned;
  for (v1::Workload& wl : workloads) {
    if (ControllerOwner(wl)->uid() == uid) {
      owned.push_back(std::move(wl));
    } else if (absl::Status s = DeleteWorkload(wl); !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<v1::Workload> built = Build(key, *rc);
  if (!built.ok()) {
    ADMITD_LOG(kWarning, "raycluster cannot be read",
               {{"raycluster", key}, {"error", built.status().ToString()}});
    return absl::OkStatus();  // nothing to do until the cluster changes
  }
  const std::vector<nlohmann::json> pods = PodsOf(uid);
  if (RayClusterElastic(*rc, options_.workload.elastic_jobs)) {
    return ReconcileElastic(*rc, *built, owned, pods);
  }
  return ReconcileMatching(*rc, *built, owned, pods);
}

absl::StatusOr<v1::Workload> RayClusterReconciler::Build(const std::string& key,
                                                         const nlohmann::json& rc) {
  const std::string uid = Str(Meta(rc), "uid"), rv = Str(Meta(rc), "resourceVersion");
  {
    absl::MutexLock lock(&built_mu_);
    auto it = built_.find(key);
    if (it != built_.end() && it->second.uid == uid && it->second.resource_version == rv &&
        !rv.empty()) {
      return it->second.workload;
    }
  }
  absl::StatusOr<v1::Workload> built = WorkloadForRayCluster(rc, options_.workload);
  if (!built.ok()) return built;
  (*built->mutable_metadata()->mutable_labels())[kJobClusterLabel] = options_.cluster;
  // Every pod set's containers and init containers, as the Workload's templates have them.
  absl::StatusOr<nlohmann::json> pod_sets = RayClusterPodSets(rc);
  if (!pod_sets.ok()) return pod_sets.status();
  nlohmann::json containers = nlohmann::json::array(), init_containers = nlohmann::json::array();
  for (const nlohmann::json& ps : *pod_sets) {
    const nlohmann::json spec = ps["template"].value("spec", nlohmann::json::object());
    containers.push_back(spec.value("containers", nlohmann::json::array()));
    init_containers.push_back(spec.value("initContainers", nlohmann::json::array()));
  }
  (*built->mutable_metadata()->mutable_annotations())[kContainersDigestAnnotation] =
      ContainersDigest(
          {{"spec", {{"containers", containers}, {"initContainers", init_containers}}}});
  absl::MutexLock lock(&built_mu_);
  built_[key] = Built{uid, rv, *built};
  return built;
}

std::vector<nlohmann::json> RayClusterReconciler::PodsOf(const std::string& uid) const {
  return pods_.Select([&](const nlohmann::json& pod) {
    for (const nlohmann::json& ref : Meta(pod).value("ownerReferences", nlohmann::json::array())) {
      if (Str(ref, "uid") == uid && ref.value("controller", false)) return true;
    }
    return false;
  });
}

absl::Status RayClusterReconciler::Finalize(const std::string& key,
                                            const std::vector<v1::Workload>& workloads) {
  {
    absl::MutexLock lock(&built_mu_);
    built_.erase(key);
  }
  // Kueue finishes them (OwnerNotFound) and the garbage collector deletes them: here, at once.
  for (const v1::Workload& wl : workloads) {
    if (absl::Status s = DeleteWorkload(wl); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RayClusterReconciler::ReconcileMatching(const nlohmann::json& rc,
                                                     const v1::Workload& built,
                                                     const std::vector<v1::Workload>& owned,
                                                     const std::vector<nlohmann::json>& pods) {
  const std::string ns = Str(Meta(rc), "namespace");
  const v1::Workload* match = nullptr;
  std::vector<const v1::Workload*> others;
  for (const v1::Workload& wl : owned) {
    if (match == nullptr && Equivalent(built, wl)) {
      match = &wl;
    } else {
      others.push_back(&wl);
    }
  }
  const bool suspended = RayClusterSuspended(rc);
  if (match == nullptr && !others.empty()) {
    const v1::Workload& first = *others.front();
    if (suspended && !Reserved(first) && !Finished(first)) {
      // A pending Workload follows the suspended cluster's changes (Kueue updates it in place).
      if (absl::Status s = DeleteWorkload(first); !s.ok()) return s;
      absl::Status s = Submit(rc, built, /*record_created=*/false);
      if (s.ok()) {
        events_.Record(rc, "Normal", "UpdatedWorkload",
                       absl::StrCat("Updated not matching Workload for suspended job: ", ns, "/",
                                    built.metadata().name()),
                       kRayClusterController);
      }
      return s;
    }
  }
  // A running cluster without a matching Workload runs outside any quota: stop it; it is
  // submitted once its pods are gone.
  if (match == nullptr && !suspended) {
    const bool one = others.size() == 1;
    if (absl::Status s = Stop(rc, one ? others.front() : nullptr,
                              one ? "No matching Workload; restoring pod templates according "
                                    "to existent Workload"
                                  : "Missing Workload; unable to restore pod templates");
        !s.ok()) {
      return s;
    }
    if (others.empty()) return absl::OkStatus();  // submitted once no pod is active
  }
  for (const v1::Workload* wl : others) {
    if (absl::Status s = DeleteWorkload(*wl); !s.ok()) return s;
    events_.Record(rc, "Normal", "DeletedWorkload",
                   absl::StrCat("Deleted not matching Workload: ", ns, "/", wl->metadata().name()),
                   kRayClusterController);
  }
  if (match == nullptr && !others.empty()) {
    return absl::AbortedError("not matching Workloads deleted: reconcile again");
  }
  return ReconcileWith(rc, built, match, pods, /*elastic=*/false);
}

absl::Status RayClusterReconciler::ReconcileElastic(const nlohmann::json& rc,
                                                    const v1::Workload& built,
                                                    const std::vector<v1::Workload>& owned,
                                                    const std::vector<nlohmann::json>& pods) {
  std::vector<const v1::Workload*> live;
  for (const v1::Workload& wl : owned) {
    if (!Finished(wl)) live.push_back(&wl);
  }
  if (live.empty()) return ReconcileWith(rc, built, nullptr, pods, /*elastic=*/true);
  const v1::Workload& newest = *live.back();
  // Worker groups added, removed or renamed: not a resize; the Workload is replaced (§2.7).
  if (!SamePodSetNames(newest, built)) return ReconcileMatching(rc, built, owned, pods);
  bool same = true;
  for (int i = 0; same && i < built.spec().pod_sets_size(); ++i) {
    same = newest.spec().pod_sets(i).count() == built.spec().pod_sets(i).count();
  }
  // A replicas change resizes the chain: in place, or a new slice (admitd decides).
  if (!same) return Resize(rc, built);
  // The slice that counts: the newest holding a reservation (a scale-up waits behind it).
  const v1::Workload* current = live.back();
  for (auto it = live.rbegin(); it != live.rend(); ++it) {
    if (Reserved(**it)) {
      current = *it;
      break;
    }
  }
  if (absl::Status s = ReconcileWith(rc, built, current, pods, /*elastic=*/true); !s.ok()) {
    return s;
  }
  if (!RayClusterSuspended(rc) && Admitted(*current) && !ConditionTrue(*current, "Evicted")) {
    return Ungate(*current, pods);
  }
  return absl::OkStatus();
}

absl::Status RayClusterReconciler::ReconcileWith(const nlohmann::json& rc,
                                                 const v1::Workload& built, const v1::Workload* wl,
                                                 const std::vector<nlohmann::json>& pods,
                                                 bool elastic) {
  if (wl != nullptr && Finished(*wl)) return absl::OkStatus();
  // No "finished" step: a RayCluster never finishes (§4.3).
  if (wl == nullptr) {
    if (RayClusterActive(rc, pods) && !elastic) return absl::OkStatus();  // its pods go first
    return Submit(rc, built);
  }
  if (const v1::Condition* evicted = FindCondition(*wl, "Evicted");
      evicted != nullptr && evicted->status() == "True") {
    if (absl::Status s = Stop(rc, wl, evicted->message()); !s.ok()) return s;
    if (Reserved(*wl) && !RayClusterActive(rc, pods)) {
      v1::ReleaseQuotaRequest req = ReleaseOf(*wl);
      req.mutable_stopped();
      return ReleaseQuota(req);
    }
    return absl::OkStatus();  // quota goes back once the cluster's pods are gone
  }
  if (RayClusterSuspended(rc)) {
    return Admitted(*wl) ? Start(rc, *wl, elastic) : absl::OkStatus();
  }
  if (!Admitted(*wl) && !elastic) return Stop(rc, wl, "Not admitted by cluster queue");
  // Kueue's PodsReady() of a RayCluster: its state is ready.
  return reconcile::ReportPodsReady(admitd_, *wl,
                                    Str(Field(rc, "status"), "state") == "ready");
}

absl::Status RayClusterReconciler::Submit(const nlohmann::json& rc, const v1::Workload& built,
                                          bool record_created) {
  v1::SubmitRequest req;
  *req.mutable_workload() = built;
  v1::SubmitResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admitd_.admission().Submit(&ctx, req, &resp);
  admitd_.ReportCall(s);
  if (!s.ok()) return FromGrpc("submit", s);
  admitd_.Remember(resp.workload());
  if (resp.created()) ++counters_.submits;
  if (resp.created() && record_created) {
    events_.Record(rc, "Normal", "CreatedWorkload",
                   absl::StrCat("Created Workload: ", built.metadata().namespace_(), "/",
                                built.metadata().name()),
                   kRayClusterController);
  }
  return absl::OkStatus();
}

absl::Status RayClusterReconciler::Resize(const nlohmann::json& rc, const v1::Workload& built) {
  const nlohmann::json meta = Meta(rc);
  v1::ResizeRequest req;
  req.set_namespace_(Str(meta, "namespace"));
  req.mutable_job()->set_api_version(kRayClusterApiVersion);
  req.mutable_job()->set_kind(kRayClusterKind);
  req.mutable_job()->set_name(Str(meta, "name"));
  req.mutable_job()->set_uid(Str(meta, "uid"));
  req.set_generation(meta.value("generation", int64_t{1}));
  for (const v1::PodSet& ps : built.spec().pod_sets()) {
    v1::PodSetCount* c = req.add_pod_sets();
    c->set_name(ps.name());
    c->set_count(ps.count());
  }
  v1::ResizeResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admitd_.admission().Resize(&ctx, req, &resp);
  admitd_.ReportCall(s);
  if (!s.ok()) return FromGrpc("resize", s);
  ++counters_.resizes;
  for (const v1::Workload& wl : resp.workloads()) admitd_.Remember(wl);
  return absl::OkStatus();  // the next reconcile sees the new counts
}

absl::Status RayClusterReconciler::DeleteWorkload(const v1::Workload& wl) {
  absl::Status s = reconcile::DeleteWorkload(admitd_, wl);
  if (s.ok()) ++counters_.deletes;
  return s;
}

absl::Status RayClusterReconciler::ReleaseQuota(const v1::ReleaseQuotaRequest& req) {
  absl::Status s = reconcile::ReleaseQuota(admitd_, req);
  if (s.ok()) ++counters_.releases;
  return s;
}

absl::Status RayClusterReconciler::Start(const nlohmann::json& rc, const v1::Workload& wl,
                                         bool elastic) {
  absl::StatusOr<std::map<std::string, v1::ResourceFlavor>> flavors =
      reconcile::AdmittedFlavors(admitd_, wl);
  if (!flavors.ok()) return flavors.status();
  absl::StatusOr<std::vector<PodSetInfo>> infos = PodSetInfos(wl, *flavors);
  absl::StatusOr<nlohmann::json> patch = infos.ok()
                                             ? RayClusterStartPatch(rc, *infos, elastic)
                                             : absl::StatusOr<nlohmann::json>(infos.status());
  if (!patch.ok()) {
    // Permanent (Kueue finishes the Workload with reason FailedToStart); the cluster stays
    // suspended.
    v1::ReleaseQuotaRequest req = ReleaseOf(wl);
    req.mutable_finished()->set_succeeded(false);
    req.mutable_finished()->set_message(std::string(patch.status().message()));
    return ReleaseQuota(req);
  }
  if (absl::Status s = PatchCluster(rc, *patch); !s.ok()) return s;
  ++counters_.starts;
  events_.Record(rc, "Normal", "Started",
                 absl::StrCat("Admitted by clusterQueue ", wl.status().admission().cluster_queue()),
                 kRayClusterController);
  return absl::OkStatus();
}

absl::Status RayClusterReconciler::Stop(const nlohmann::json& rc, const v1::Workload* wl,
                                        const std::string& message) {
  const nlohmann::json patch = RayClusterStopPatch(rc, wl);
  if (patch.empty()) return absl::OkStatus();
  if (absl::Status s = PatchCluster(rc, patch); !s.ok()) return s;
  if (!RayClusterSuspended(rc)) {
    ++counters_.stops;
    events_.Record(rc, "Normal", "Stopped", message, kRayClusterController);
  }
  return absl::OkStatus();
}

absl::Status RayClusterReconciler::PatchCluster(const nlohmann::json& rc, nlohmann::json patch) {
  nlohmann::json after = rc;
  after.merge_patch(patch);
  if (after == rc) return absl::OkStatus();
  const nlohmann::json meta = Meta(rc);
  patch["metadata"]["resourceVersion"] = Str(meta, "resourceVersion");
  return kube_.Patch(ClusterPath(Str(meta, "namespace"), Str(meta, "name")), patch).status();
}

absl::Status RayClusterReconciler::Ungate(const v1::Workload& slice,
                                          const std::vector<nlohmann::json>& pods) {
  auto chain_it = slice.metadata().annotations().find("kueue.x-k8s.io/workload-slice-name");
  const std::string chain =
      chain_it != slice.metadata().annotations().end() ? chain_it->second : slice.metadata().name();
  std::map<std::string, int> admitted;
  for (const v1::PodSet& ps : slice.spec().pod_sets()) admitted[ps.name()] = ps.count();
  std::map<std::string, const nlohmann::json*> by_name;
  for (const nlohmann::json& pod : pods) by_name[Str(Meta(pod), "name")] = &pod;
  for (const std::string& name : PodsToUngate(pods, chain, admitted)) {
    const nlohmann::json& pod = *by_name[name];
    absl::StatusOr<nlohmann::json> r = kube_.Patch(
        absl::StrCat("/api/v1/namespaces/", Str(Meta(pod), "namespace"), "/pods/", name),
        UngatePatch(pod));
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
    ++counters_.ungated;
  }
  return absl::OkStatus();
}

bool RayClusterReconciler::Equivalent(const v1::Workload& built, const v1::Workload& wl) const {
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
    if (!count_ok && reserved && i < wl.status().admission().pod_set_assignments_size()) {
      count_ok = x.count() == wl.status().admission().pod_set_assignments(i).count();
    }
    if (!count_ok) return false;
    if (x.has_min_count() != y.has_min_count() || x.min_count() != y.min_count()) return false;
    if (!Admitted(wl) && !SameTolerations(x.template_().spec(), y.template_().spec())) {
      return false;
    }
  }
  auto want = built.metadata().annotations().find(kContainersDigestAnnotation);
  auto have = wl.metadata().annotations().find(kContainersDigestAnnotation);
  if (have != wl.metadata().annotations().end()) return have->second == want->second;
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
