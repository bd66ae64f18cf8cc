// The generic reconcile's flow (reconciler.h): which Workload counts, and what to do about it.
#include "clients/shim/framework/reconciler.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/multikueue.h"
#include "common/kueue_keys.h"
#include "clients/shim/framework/reconcile_util.h"
#include "common/log.h"

namespace admitd::shim {
namespace {

using reconcile::Admitted;
using reconcile::Finished;
using reconcile::Live;
using reconcile::Meta;
using reconcile::Reserved;

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

Reconciler::Reconciler(const Integration& integration, const IntegrationRegistry& registry,
                       const KubeApi& kube, AdmitdApi& admitd, const ObjectCache& objects,
                       const ObjectCache& pods, EventSink& events, FrameworkOptions options,
                       const ObjectCache& children)
    : integration_(integration),
      registry_(registry),
      kube_(kube),
      admitd_(admitd),
      objects_(objects),
      pods_(pods),
      children_(children),
      events_(events),
      options_(std::move(options)) {}

absl::Status Reconciler::Reconcile(const std::string& key) {
  ++counters_.reconciles;
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  std::optional<nlohmann::json> object = objects_.Get(key);
  std::vector<v1::Workload> workloads = admitd_.WorkloadsOf(integration_.info().kind, ns, name);
  if (!Live(object)) return Finalize(key, workloads);
  if (options_.excluded_namespaces.count(ns)) return absl::OkStatus();
  // A child of a managed object (a JobSet's Job, a RayJob's RayCluster) never has a Workload.
  absl::StatusOr<std::optional<Ancestor>> ancestor = FindManagedAncestor(*object);
  if (!ancestor.ok()) return ReportAncestorError(*object, ancestor.status());
  if (ancestor->has_value()) return ReconcileChild(*object, **ancestor);
  const nlohmann::json& labels = Field(Field(*object, "metadata"), "labels");
  if (Str(labels, kQueueNameLabel).empty() && !options_.manage_jobs_without_queue_name) {
    return absl::OkStatus();
  }
  if (registry_.OwnedByManagedKind(*object)) return absl::OkStatus();
  const std::string uid = Str(Meta(*object), "uid");
  std::unique_ptr<GenericJob> job = integration_.Wrap(*object, RelatedOf(*object), options_);
  if (job->Skip()) return absl::OkStatus();
  // What the object needs written before its Workload is built; its next version reconciles.
  if (std::optional<nlohmann::json> prepare = job->PreparePatch()) {
    return PatchObject(*object, *std::move(prepare)).status();
  }
  // A job that uses a prebuilt Workload never gets one of its own.
  if (std::string prebuilt = PrebuiltWorkloadName(*object); !prebuilt.empty()) {
    return ReconcilePrebuilt(*job, prebuilt);
  }

  // Workloads of an earlier object of the same name go.
  std::vector<v1::Workload> owned;
  for (v1::Workload& wl : workloads) {
    if (ControllerOwner(wl)->uid() == uid) {
      owned.push_back(std::move(wl));
    } else if (absl::Status s = DeleteWorkload(wl); !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<v1::Workload> built = Build(key, *job);
  if (!built.ok()) {
    ADMITD_LOG(kWarning, "object cannot be read",
               {{"kind", integration_.info().kind},
                {"object", key},
                {"error", built.status().ToString()}});
    return absl::OkStatus();  // nothing to do until the object changes
  }
  if (job->IsElastic()) return ReconcileElastic(*job, *built, owned);
  return ReconcileMatching(*job, *built, owned);
}

std::vector<nlohmann::json> Reconciler::PodsOf(const nlohmann::json& object) const {
  const IntegrationInfo& info = integration_.info();
  if (info.pods_path.empty()) return {};
  const nlohmann::json meta = Meta(object);
  if (info.pods_by_label.empty()) {
    std::vector<nlohmann::json> pods = pods_.ControlledBy(Str(meta, "uid"));
    // And those its children control (a Deployment's ReplicaSets').
    if (!info.children_path.empty()) {
      for (const nlohmann::json& child : children_.ControlledBy(Str(meta, "uid"))) {
        for (nlohmann::json& pod : pods_.ControlledBy(Str(Meta(child), "uid"))) {
          pods.push_back(std::move(pod));
        }
      }
    }
    return pods;
  }
  const nlohmann::json* value = &Field(meta, "name");
  if (!info.pods_label_value.empty()) {
    value = &object;
    for (const std::string& key : info.pods_label_value) value = &Field(*value, key);
  }
  if (!value->is_string() || value->get<std::string>().empty()) return {};
  return pods_.Labelled(Str(meta, "namespace"), info.pods_by_label, value->get<std::string>());
}

Related Reconciler::RelatedOf(const nlohmann::json& object) const {
  Related related(PodsOf(object));
  if (!integration_.info().children_path.empty()) {
    related.children = children_.ControlledBy(Str(Meta(object), "uid"));
  }
  return related;
}

absl::StatusOr<v1::Workload> Reconciler::Build(const std::string& key, const GenericJob& job) {
  const nlohmann::json meta = Meta(job.Object());
  const std::string uid = Str(meta, "uid"), rv = Str(meta, "resourceVersion");
  {
    absl::MutexLock lock(&built_mu_);
    auto it = built_.find(key);
    if (it != built_.end() && it->second.uid == uid && it->second.resource_version == rv &&
        !rv.empty()) {
      return it->second.workload;
    }
  }
  absl::StatusOr<v1::Workload> built = job.NewWorkload();
  if (!built.ok()) return built;
  // A MultiKueue manager's object travels with its Workload to the worker that admits it; of
  // another, a MultiKueue check needs to know who manages it (to reject it).
  if (const MultiKueueAdapter* mk = integration_.multikueue(); mk != nullptr) {
    v1::RemoteJob remote = RemoteJobFor(job.Object(), *mk);
    if (ManagedByMultiKueue(job.Object(), *mk)) {
      *built->mutable_remote_job() = std::move(remote);
    } else if (!remote.managed_by().empty()) {
      built->mutable_remote_job()->set_managed_by(remote.managed_by());
    }
  }
  absl::StatusOr<std::string> digest = job.ContainersDigest();
  if (!digest.ok()) return digest.status();
  (*built->mutable_metadata()->mutable_labels())[kJobClusterLabel] = options_.cluster;
  (*built->mutable_metadata()->mutable_annotations())[kContainersDigestAnnotation] = *digest;
  absl::MutexLock lock(&built_mu_);
  built_[key] = Built{uid, rv, *built};
  return built;
}

absl::Status Reconciler::Finalize(const std::string& key,
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

absl::Status Reconciler::ReconcileMatching(const GenericJob& job, const v1::Workload& built,
                                           const std::vector<v1::Workload>& owned) {
  const std::string ns = Str(Meta(job.Object()), "namespace");
  const v1::Workload* match = nullptr;
  std::vector<const v1::Workload*> others;
  for (const v1::Workload& wl : owned) {
    if (match == nullptr && Equivalent(built, wl)) {
      match = &wl;
    } else {
      others.push_back(&wl);
    }
  }
  const bool suspended = job.IsSuspended();
  if (match == nullptr && !others.empty()) {
    const v1::Workload& first = *others.front();
    if (suspended && !Reserved(first) && !Finished(first)) {
      // A pending Workload follows the suspended job's changes (Kueue updates it in place).
      if (absl::Status s = DeleteWorkload(first); !s.ok()) return s;
      absl::Status s = Submit(job, built, /*record_created=*/false);
      if (s.ok()) {
        RecordEvent(job, "UpdatedWorkload",
                    absl::StrCat("Updated not matching Workload for suspended job: ", ns, "/",
                                 built.metadata().name()));
      }
      return s;
    }
  }
  // A running job without a matching Workload runs outside any quota: stop it (Kueue does so
  // whether or not a Workload exists); it is submitted once its pods are gone.
  if (match == nullptr && !suspended && !job.Finished()) {
    const bool one = others.size() == 1;
    if (absl::Status s = Stop(job, one ? others.front() : nullptr,
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
    RecordEvent(job, "DeletedWorkload",
                absl::StrCat("Deleted not matching Workload: ", ns, "/", wl->metadata().name()));
  }
  if (match == nullptr && !others.empty()) {
    return absl::AbortedError("not matching Workloads deleted: reconcile again");
  }
  return ReconcileWith(job, built, match, /*elastic=*/false);
}

absl::Status Reconciler::ReconcileElastic(const GenericJob& job, const v1::Workload& built,
                                          const std::vector<v1::Workload>& owned) {
  std::vector<const v1::Workload*> live;
  for (const v1::Workload& wl : owned) {
    if (!Finished(wl)) live.push_back(&wl);
  }
  if (live.empty() || job.Finished()) {
    return ReconcileWith(job, built, live.empty() ? nullptr : live.back(), /*elastic=*/true);
  }
  const v1::Workload& newest = *live.back();
  // Pod sets added, removed or renamed: not a resize; the Workload is replaced (§2.7).
  if (!SamePodSetNames(newest, built)) return ReconcileMatching(job, built, owned);
  bool same = true;
  for (int i = 0; same && i < built.spec().pod_sets_size(); ++i) {
    same = newest.spec().pod_sets(i).count() == built.spec().pod_sets(i).count();
  }
  // A count change resizes the chain: in place, or a new slice (admitd decides).
  if (!same) return Resize(job, built);
  // The slice that counts: the newest holding a reservation (a scale-up waits behind it).
  const v1::Workload* current = live.back();
  for (auto it = live.rbegin(); it != live.rend(); ++it) {
    if (Reserved(**it)) {
      current = *it;
      break;
    }
  }
  if (absl::Status s = ReconcileWith(job, built, current, /*elastic=*/true); !s.ok()) return s;
  if (!job.IsSuspended() && Admitted(*current) && !ConditionTrue(*current, "Evicted")) {
    return Ungate(job, *current);
  }
  return absl::OkStatus();
}

absl::Status Reconciler::ReconcileWith(const GenericJob& job, const v1::Workload& built,
                                       const v1::Workload* wl, bool elastic) {
  // A MultiKueue manager's job shows the status of the job that runs in the worker.
  const MultiKueueAdapter* mk = integration_.multikueue();
  if (wl != nullptr && !wl->remote_job().status().empty() && mk != nullptr &&
      ManagedByMultiKueue(job.Object(), *mk)) {
    const nlohmann::json remote =
        nlohmann::json::parse(wl->remote_job().status(), nullptr, /*allow_exceptions=*/false);
    if (std::optional<nlohmann::json> patch = job.MirrorStatusPatch(remote)) {
      absl::StatusOr<nlohmann::json> r =
          PatchObject(job.Object(), *std::move(patch), /*status=*/true);
      if (r.ok()) ++counters_.mirrored;
      return r.status();  // the object's next version is reconciled again
    }
  }
  if (wl != nullptr && Finished(*wl)) return absl::OkStatus();
  // On hold (Kueue's step 2): the quota goes back and the Workload waits, not requeued. Kueue
  // unsets the reservation (QuotaReserved=False, OnHold); admitd deactivates the Workload and
  // releases its quota once evicted.
  if (job.IsOnHold()) {
    if (wl == nullptr || !Reserved(*wl)) return absl::OkStatus();
    if (!wl->spec().has_active() || wl->spec().active()) {
      v1::SetActiveRequest req;
      req.set_namespace_(wl->metadata().namespace_());
      req.set_name(wl->metadata().name());
      req.set_uid(wl->metadata().uid());
      req.set_active(false);
      ADMITD_LOG(kInfo, "job is on hold, releasing its quota",
                 {{"kind", integration_.info().kind},
                  {"object", Str(Meta(job.Object()), "namespace") + "/" +
                                 Str(Meta(job.Object()), "name")},
                  {"workload", wl->metadata().name()}});
      return admitd_.SetActive(req);
    }
    if (!ConditionTrue(*wl, "Evicted")) return absl::OkStatus();
    v1::ReleaseQuotaRequest req = ReleaseOf(*wl);
    req.mutable_stopped();
    return ReleaseQuota(req);
  }
  const std::string ns = Str(Meta(job.Object()), "namespace");
  if (std::optional<JobFinish> finish = job.Finished()) {
    if (wl == nullptr) return absl::OkStatus();  // a finished job never gets a Workload
    v1::ReleaseQuotaRequest req = ReleaseOf(*wl);
    req.mutable_finished()->set_succeeded(finish->succeeded);
    req.mutable_finished()->set_message(finish->message);
    if (absl::Status s = ReleaseQuota(req); !s.ok()) return s;
    RecordEvent(job, "FinishedWorkload",
                absl::StrCat("Workload '", ns, "/", wl->metadata().name(),
                             "' is declared finished"));
    return absl::OkStatus();
  }
  if (wl == nullptr) {
    if (job.IsActive() && !elastic) return absl::OkStatus();  // wait for its pods to go
    return Submit(job, built);
  }

  // Reclaimable pods (§2.5), each capped to its pod set's count; all of them reported at once
  // when one changed.
  if (std::map<std::string, int> reclaimable = job.ReclaimablePods();
      !reclaimable.empty() && Reserved(*wl)) {
    std::map<std::string, int> reported;
    for (const v1::ReclaimablePod& p : wl->status().reclaimable_pods()) {
      reported[p.name()] = p.count();
    }
    v1::ReleaseQuotaRequest req = ReleaseOf(*wl);
    bool changed = false;
    for (const v1::PodSet& ps : wl->spec().pod_sets()) {
      auto it = reclaimable.find(ps.name());
      if (it == reclaimable.end() || it->second <= 0) continue;
      const int n = std::min(it->second, ps.count());
      changed |= n != reported[ps.name()];
      v1::ReclaimablePod* p = req.mutable_reclaimable()->add_pods();
      p->set_name(ps.name());
      p->set_count(n);
    }
    if (changed) return ReleaseQuota(req);
  }

  if (const v1::Condition* evicted = FindCondition(*wl, "Evicted");
      evicted != nullptr && evicted->status() == "True") {
    if (absl::Status s = Stop(job, wl, evicted->message()); !s.ok()) return s;
    if (Reserved(*wl) && !job.IsActive()) {
      v1::ReleaseQuotaRequest req = ReleaseOf(*wl);
      req.mutable_stopped();
      return ReleaseQuota(req);
    }
    return absl::OkStatus();  // quota goes back once the job's pods are gone
  }
  if (job.IsSuspended()) {
    return Admitted(*wl) ? Start(job, *wl, elastic) : absl::OkStatus();
  }
  if (!Admitted(*wl) && !elastic) return Stop(job, wl, "Not admitted by cluster queue");
  return reconcile::ReportPodsReady(admitd_, *wl, job.PodsReady());
}

}  // namespace admitd::shim
