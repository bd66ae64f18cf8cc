#include "clients/shim/integrations/job/job_multikueue.h"

#include <utility>

#include "absl/status/status.h"
#include "clients/shim/integrations/job/job_status.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

// Labels the Job controller puts on a Job's pod template; the worker's Job controller adds its
// own.
constexpr const char* kControllerTemplateLabels[] = {"job-name", "controller-uid",
                                                     "batch.kubernetes.io/controller-uid"};

}  // namespace

MultiKueueAdapter JobMultiKueueAdapter() {
  MultiKueueAdapter adapter;
  adapter.clean_spec = [](nlohmann::json* spec) {
    spec->erase("selector");
    nlohmann::json::json_pointer labels("/template/metadata/labels");
    if (spec->contains(labels) && spec->at(labels).is_object()) {
      for (const char* l : kControllerTemplateLabels) spec->at(labels).erase(l);
    }
  };
  return adapter;
}

v1::RemoteJob RemoteJobFor(const nlohmann::json& job) {
  return RemoteJobFor(job, JobMultiKueueAdapter());
}

absl::StatusOr<nlohmann::json> WorkerJobFor(const v1::Workload& copy) {
  const nlohmann::json manifest =
      nlohmann::json::parse(copy.remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  if (!Field(Field(manifest, "spec"), "template").is_object()) {
    return absl::InvalidArgumentError(
        "remoteJob.manifest: Invalid value: must be a batch/v1 Job with spec.template");
  }
  absl::StatusOr<nlohmann::json> job =
      WorkerObjectFor(copy, "batch/v1", "Job", JobMultiKueueAdapter());
  if (!job.ok() && job.status().message().rfind("remoteJob.manifest", 0) == 0) {
    return absl::InvalidArgumentError(
        "remoteJob.manifest: Invalid value: must be a batch/v1 Job with spec.template");
  }
  return job;
}

std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& manager_job,
                                                const nlohmann::json& remote_status) {
  if (!remote_status.is_object()) return std::nullopt;
  // The remote Job is suspended when its Job controller says so (condition Suspended=True).
  bool remote_suspended = false;
  for (const nlohmann::json& c : ArrayOr(Field(remote_status, "conditions"))) {
    if (Str(c, "type") == "Suspended" && Str(c, "status") == "True") remote_suspended = true;
  }
  const bool copy = Field(Field(manager_job, "spec"), "suspend") != true || remote_suspended ||
                    JobFinished(nlohmann::json{{"status", remote_status}}).has_value();
  if (!copy) return std::nullopt;
  return MirrorRemoteStatus(manager_job, remote_status);
}

}  // namespace admitd::shim
