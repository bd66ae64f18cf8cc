#include "clients/shim/integrations/job/multikueue_worker.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "clients/shim/integrations/job/job_multikueue.h"
#include "clients/shim/framework/reconcile_util.h"
#include "common/log.h"

namespace admitd::shim {

MultiKueueWorker::MultiKueueWorker(const KubeClient& kube, const AdmitdLink& admitd,
                                   const Informer& jobs)
    : kube_(kube), admitd_(admitd), jobs_(jobs) {}

std::vector<std::string> MultiKueueWorker::Keys() const { return admitd_.CopyKeys(); }

absl::Status MultiKueueWorker::Reconcile(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  std::optional<v1::Workload> copy = admitd_.Workload(ns, name);
  if (!copy || copy->remote_job().manifest().empty() || reconcile::Finished(*copy) ||
      !copy->metadata().labels().count(kMultiKueueOriginLabel)) {
    return absl::OkStatus();
  }
  // Adopted already: the Job exists (or existed) and is the Job reconciler's (framework/reconciler.h).
  if (ControllerOwner(*copy) != nullptr) return absl::OkStatus();
  // An elastic scale-up slice: once admitted here, the Job running on the slice it replaces
  // moves to it (its prebuilt Workload and parallelism).
  auto replaces = copy->metadata().annotations().find(kReplacementForAnnotation);
  if (replaces != copy->metadata().annotations().end()) {
    if (!reconcile::Admitted(*copy) || copy->spec().pod_sets_size() == 0) {
      return absl::OkStatus();
    }
    const std::string old_name = replaces->second.substr(replaces->second.find('/') + 1);
    std::vector<nlohmann::json> jobs = jobs_.Select([&](const nlohmann::json& j) {
      return reconcile::Str(reconcile::Meta(j), "namespace") == ns && IsMultiKueueWorkerJob(j) &&
             PrebuiltWorkloadName(j) == old_name;
    });
    for (const nlohmann::json& j : jobs) {
      const nlohmann::json meta = reconcile::Meta(j);
      const nlohmann::json patch = {
          {"metadata",
           {{"resourceVersion", reconcile::Str(meta, "resourceVersion")},
            {"annotations", {{kPrebuiltWorkloadKey, name}}}}},
          {"spec", {{"parallelism", copy->spec().pod_sets(0).count()}}}};
      absl::StatusOr<nlohmann::json> r = kube_.Patch(
          absl::StrCat("/apis/batch/v1/namespaces/", ns, "/jobs/",
                       reconcile::Str(meta, "name")),
          patch);
      if (!r.ok()) return r.status();
      ++moved_;
      ADMITD_LOG(kInfo, "multikueue job moved to its scale-up slice",
                 {{"job", ns + "/" + reconcile::Str(meta, "name")}, {"workload", key}});
    }
    if (!jobs.empty()) return absl::OkStatus();
  }
  absl::StatusOr<nlohmann::json> job = WorkerJobFor(*copy);
  if (!job.ok()) {
    ADMITD_LOG(kWarning, "multikueue copy carries no usable job",
               {{"workload", key}, {"error", job.status().ToString()}});
    return absl::OkStatus();  // nothing to do until the manager hands over another
  }
  const std::string job_name = reconcile::Str((*job)["metadata"], "name");
  if (jobs_.Get(ns + "/" + job_name).has_value()) return absl::OkStatus();
  // The copy read above may have been withdrawn since (and a Job made from it deleted): read it
  // again right before creating, so a withdrawn copy never gets a new Job.
  std::optional<v1::Workload> still = admitd_.Workload(ns, name);
  if (!still || still->metadata().uid() != copy->metadata().uid() || reconcile::Finished(*still)) {
    return absl::OkStatus();
  }
  absl::StatusOr<nlohmann::json> created =
      kube_.Create(absl::StrCat("/apis/batch/v1/namespaces/", ns, "/jobs"), *job);
  if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
    return created.status();
  }
  if (created.ok()) {
    ++created_;
    ADMITD_LOG(kInfo, "multikueue job created", {{"job", ns + "/" + job_name}, {"workload", key}});
  }
  return absl::OkStatus();
}

}  // namespace admitd::shim
