#include "clients/shim/integrations/job/job_multikueue.h"

#include <utility>

#include "absl/status/status.h"
#include "clients/shim/integrations/job/job_status.h"
#include "clients/shim/framework/reconcile_util.h"

namespace admitd::shim {
namespace {

using reconcile::Meta;
using reconcile::Str;

// Labels the Job controller puts on a Job's pod template; the worker's Job controller adds its
// own.
constexpr const char* kControllerTemplateLabels[] = {"job-name", "controller-uid",
                                                     "batch.kubernetes.io/controller-uid"};

const nlohmann::json& Object(const nlohmann::json& parent, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!parent.is_object()) return kEmpty;
  auto it = parent.find(key);
  return it != parent.end() && it->is_object() ? *it : kEmpty;
}

bool Suspended(const nlohmann::json& job) {
  const nlohmann::json& spec = Object(job, "spec");
  auto it = spec.find("suspend");
  return it != spec.end() && it->is_boolean() && it->get<bool>();
}

// The merge patch that turns `from` into `to` (keys missing from `to` become null).
nlohmann::json MergePatchTo(const nlohmann::json& from, const nlohmann::json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  nlohmann::json patch = nlohmann::json::object();
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (!to.contains(it.key())) patch[it.key()] = nullptr;
  }
  for (auto it = to.begin(); it != to.end(); ++it) {
    auto was = from.find(it.key());
    if (was == from.end()) {
      patch[it.key()] = *it;
    } else if (*was != *it) {
      patch[it.key()] = was->is_object() && it->is_object() ? MergePatchTo(*was, *it) : *it;
    }
  }
  return patch;
}

}  // namespace

bool ManagedByMultiKueue(const nlohmann::json& job) {
  return Str(Object(job, "spec"), "managedBy") == kMultiKueueControllerName;
}

std::string PrebuiltWorkloadName(const nlohmann::json& job) {
  const nlohmann::json meta = Meta(job);
  if (std::string a = Str(Object(meta, "annotations"), kPrebuiltWorkloadKey); !a.empty()) return a;
  return Str(Object(meta, "labels"), kPrebuiltWorkloadKey);
}

bool IsMultiKueueWorkerJob(const nlohmann::json& job) {
  return !Str(Object(Meta(job), "labels"), kMultiKueueOriginLabel).empty() &&
         !PrebuiltWorkloadName(job).empty();
}

v1::RemoteJob RemoteJobFor(const nlohmann::json& job) {
  const nlohmann::json meta = Meta(job);
  nlohmann::json manifest = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", Str(meta, "name")},
        {"namespace", Str(meta, "namespace")},
        {"labels", Object(meta, "labels")},
        {"annotations", Object(meta, "annotations")}}},
      {"spec", Object(job, "spec")}};
  v1::RemoteJob out;
  out.set_api_version("batch/v1");
  out.set_kind("Job");
  out.set_managed_by(Str(Object(job, "spec"), "managedBy"));
  out.set_manifest(manifest.dump());
  return out;
}

std::string RemoteJobName(const v1::Workload& copy) {
  const nlohmann::json manifest =
      nlohmann::json::parse(copy.remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  return manifest.is_object() ? Str(Object(manifest, "metadata"), "name") : "";
}

absl::StatusOr<nlohmann::json> WorkerJobFor(const v1::Workload& copy) {
  nlohmann::json job =
      nlohmann::json::parse(copy.remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  if (!job.is_object() || job.value("kind", "") != "Job" ||
      job.value("apiVersion", "") != "batch/v1" || !Object(job, "spec").contains("template")) {
    return absl::InvalidArgumentError(
        "remoteJob.manifest: Invalid value: must be a batch/v1 Job with spec.template");
  }
  const nlohmann::json meta = Meta(job);
  nlohmann::json labels = Object(meta, "labels");
  nlohmann::json annotations = Object(meta, "annotations");
  auto origin = copy.metadata().labels().find(kMultiKueueOriginLabel);
  if (origin == copy.metadata().labels().end()) {
    return absl::InvalidArgumentError("the copy has no kueue.x-k8s.io/multikueue-origin label");
  }
  labels[kMultiKueueOriginLabel] = origin->second;
  labels.erase(kPrebuiltWorkloadKey);
  annotations[kPrebuiltWorkloadKey] = copy.metadata().name();
  annotations.erase("kueue.x-k8s.io/stopping");
  nlohmann::json spec = job["spec"];
  spec.erase("selector");
  spec.erase("managedBy");
  spec["suspend"] = true;
  if (spec["template"].is_object() && spec["template"].contains("metadata") &&
      spec["template"]["metadata"].is_object() &&
      spec["template"]["metadata"].contains("labels") &&
      spec["template"]["metadata"]["labels"].is_object()) {
    for (const char* l : kControllerTemplateLabels) spec["template"]["metadata"]["labels"].erase(l);
  }
  return nlohmann::json{{"apiVersion", "batch/v1"},
                        {"kind", "Job"},
                        {"metadata",
                         {{"name", Str(meta, "name")},
                          {"namespace", copy.metadata().namespace_()},
                          {"labels", std::move(labels)},
                          {"annotations", std::move(annotations)}}},
                        {"spec", std::move(spec)}};
}

std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& manager_job,
                                                const nlohmann::json& remote_status) {
  if (!remote_status.is_object()) return std::nullopt;
  const nlohmann::json remote_job = {{"status", remote_status}};
  // The remote Job is suspended when its Job controller says so (condition Suspended=True).
  bool remote_suspended = false;
  for (const nlohmann::json& c : remote_status.value("conditions", nlohmann::json::array())) {
    if (c.is_object() && Str(c, "type") == "Suspended" && Str(c, "status") == "True") {
      remote_suspended = true;
    }
  }
  const bool copy = !Suspended(manager_job) || remote_suspended ||
                    JobFinished(remote_job).has_value();
  if (!copy) return std::nullopt;
  const nlohmann::json& current = Object(manager_job, "status");
  if (current == remote_status) return std::nullopt;
  return nlohmann::json{{"status", MergePatchTo(current, remote_status)}};
}

}  // namespace admitd::shim
