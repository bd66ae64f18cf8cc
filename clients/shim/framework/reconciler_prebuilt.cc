// The generic reconcile of a job that uses a prebuilt Workload (reconciler.h): adoption, a
// MultiKueue worker's job and its copy, and OutOfSync.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/reconciler.h"
#include "clients/shim/framework/multikueue.h"
#include "common/kueue_keys.h"
#include "clients/shim/framework/reconcile_util.h"
#include "common/log.h"

namespace admitd::shim {

using reconcile::Admitted;
using reconcile::Finished;
using reconcile::Live;
using reconcile::Meta;

absl::Status Reconciler::ReconcilePrebuilt(const GenericJob& job, const std::string& prebuilt) {
  const nlohmann::json& object = job.Object();
  const nlohmann::json meta = Meta(object);
  const std::string ns = Str(meta, "namespace"), name = Str(meta, "name"), uid = Str(meta, "uid");
  std::optional<v1::Workload> wl = admitd_.Workload(ns, prebuilt);
  const bool elastic = job.IsElastic();
  // An elastic job whose copy is being replaced by a scale-up slice waits to be moved to it.
  if (elastic && (!wl || Finished(*wl)) && HasReplacement(ns, prebuilt)) return absl::OkStatus();
  if (!wl) {
    // A MultiKueue worker's job goes with its copy: the manager withdrew it. Any other job
    // waits for its Workload.
    if (!IsMultiKueueWorkerJob(object)) return absl::OkStatus();
    absl::StatusOr<nlohmann::json> r =
        kube_.DeleteUid(integration_.ObjectPath(ns, name), uid, "Background");
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
    ++counters_.withdrawn;
    ADMITD_LOG(kInfo, "multikueue job deleted: its copy was withdrawn",
               {{"kind", integration_.info().kind},
                {"object", ns + "/" + name},
                {"workload", prebuilt}});
    return absl::OkStatus();
  }
  const v1::OwnerReference* owner = ControllerOwner(*wl);
  if (owner != nullptr && owner->uid() != uid) return absl::OkStatus();  // another object's
  if (owner == nullptr) {
    // Adoption binds the Workload to this object's uid for good, so the object must be the one
    // the API server holds now: after a re-dispatch to this cluster the informer may still hold
    // the one deleted a moment ago, with the same name as the one made for the new copy.
    if (absl::StatusOr<bool> current = IsCurrent(ns, name, uid); !current.ok()) {
      return current.status();
    } else if (!*current) {
      return absl::OkStatus();  // the informer's next event of this name reconciles again
    }
  }
  v1::UpdateRemoteJobRequest req;
  req.set_namespace_(ns);
  req.set_name(prebuilt);
  req.set_uid(wl->metadata().uid());
  if (owner == nullptr) {
    v1::OwnerReference* adopt = req.mutable_adopt();
    adopt->set_api_version(integration_.info().api_version);
    adopt->set_kind(integration_.info().kind);
    adopt->set_name(name);
    adopt->set_uid(uid);
    adopt->set_controller(true);
  }
  // A MultiKueue copy reports the job's status to its manager (before any finish below).
  const std::string status = object.value("status", nlohmann::json::object()).dump();
  if (wl->metadata().labels().count(kMultiKueueOriginLabel) &&
      wl->remote_job().status() != status) {
    req.set_status(status);
  }
  if (req.has_adopt() || req.has_status()) {
    absl::StatusOr<v1::Workload> updated = admitd_.UpdateRemoteJob(req);
    if (!updated.ok()) return updated.status();
    if (req.has_status()) ++counters_.reported;
    if (req.has_adopt()) {
      ADMITD_LOG(kInfo, "prebuilt workload adopted",
                 {{"kind", integration_.info().kind},
                  {"object", ns + "/" + name},
                  {"uid", uid},
                  {"workload", ns + "/" + prebuilt}});
    }
    wl = *std::move(updated);
  }
  absl::StatusOr<v1::Workload> built = Build(ns + "/" + name, job);
  if (!built.ok()) return absl::OkStatus();
  if (elastic && IsMultiKueueWorkerJob(object) && Admitted(*wl) && !Finished(*wl)) {
    // The manager resizes the copy; the job follows it (KEP-77 across clusters).
    if (std::optional<nlohmann::json> scale = job.ScalePatch(*wl)) {
      return PatchObject(object, *std::move(scale)).status();
    }
  }
  // An elastic job's counts follow its slices, not the other way round.
  if (!elastic && !Finished(*wl) && !Equivalent(*built, *wl)) {
    v1::ReleaseQuotaRequest out_of_sync;
    out_of_sync.set_namespace_(ns);
    out_of_sync.set_name(prebuilt);
    out_of_sync.set_uid(wl->metadata().uid());
    out_of_sync.mutable_finished()->set_reason("OutOfSync");
    out_of_sync.mutable_finished()->set_message(
        "The prebuilt workload is out of sync with its user job");
    return ReleaseQuota(out_of_sync);
  }
  if (absl::Status s = ReconcileWith(job, *built, &*wl, elastic); !s.ok()) return s;
  if (elastic && !job.IsSuspended() && Admitted(*wl) && !ConditionTrue(*wl, "Evicted")) {
    return Ungate(job, *wl);
  }
  return absl::OkStatus();
}

bool Reconciler::HasReplacement(const std::string& ns, const std::string& name) const {
  const std::string key = ns + "/" + name;
  for (const std::string& k : admitd_.CopyKeys()) {
    const size_t slash = k.find('/');
    std::optional<v1::Workload> c = admitd_.Workload(k.substr(0, slash), k.substr(slash + 1));
    if (!c || Finished(*c)) continue;
    auto it = c->metadata().annotations().find(kReplacementForAnnotation);
    if (it != c->metadata().annotations().end() && it->second == key) return true;
  }
  return false;
}

absl::StatusOr<bool> Reconciler::IsCurrent(const std::string& ns, const std::string& name,
                                           const std::string& uid) const {
  absl::StatusOr<nlohmann::json> live = kube_.Get(integration_.ObjectPath(ns, name));
  if (!live.ok()) {
    if (live.status().code() == absl::StatusCode::kNotFound) return false;
    return live.status();
  }
  return Str(Meta(*live), "uid") == uid && Live(std::optional<nlohmann::json>(*live));
}

}  // namespace admitd::shim
