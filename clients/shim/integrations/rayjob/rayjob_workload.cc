#include "clients/shim/integrations/rayjob/rayjob_workload.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "clients/shim/integrations/raycluster/ray_spec_rules.h"
#include "clients/shim/integrations/raycluster/raycluster_workload.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

constexpr char kK8sJobMode[] = "K8sJobMode";
constexpr char kSidecarMode[] = "SidecarMode";
// KubeRay's SubmitterContainerName.
constexpr char kSubmitterContainer[] = "ray-job-submitter";

const nlohmann::json& Spec(const nlohmann::json& rayjob) { return Field(rayjob, "spec"); }

// The CRD defaults submissionMode to K8sJobMode.
std::string SubmissionMode(const nlohmann::json& rayjob) {
  const std::string mode = Str(Spec(rayjob), "submissionMode");
  return mode.empty() ? kK8sJobMode : mode;
}

// KubeRay's default submitter container as Kueue accounts it (no image in SidecarMode).
nlohmann::json SubmitterContainer(const std::string& image) {
  nlohmann::json c = {{"name", kSubmitterContainer},
                      {"resources",
                       {{"requests", {{"cpu", "500m"}, {"memory", "200Mi"}}},
                        {"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}}}};
  if (!image.empty()) c["image"] = image;
  return c;
}

// The submitter's template: the user's, or the default with the head's first image.
nlohmann::json SubmitterTemplate(const nlohmann::json& rayjob) {
  const nlohmann::json& own = Field(Spec(rayjob), "submitterPodTemplate");
  if (own.is_object()) return own;
  const nlohmann::json& containers =
      Field(Field(Field(Field(Field(Spec(rayjob), "rayClusterSpec"), "headGroupSpec"), "template"),
                  "spec"),
            "containers");
  const std::string image =
      containers.is_array() && !containers.empty() ? Str(containers[0], "image") : "";
  return {{"spec",
           {{"restartPolicy", "Never"},
            {"containers", nlohmann::json::array({SubmitterContainer(image)})}}}};
}

}  // namespace

absl::StatusOr<nlohmann::json> RayJobPodSets(const nlohmann::json& rayjob) {
  const nlohmann::json& cluster_spec = Field(Spec(rayjob), "rayClusterSpec");
  if (!cluster_spec.is_object()) {
    return absl::InvalidArgumentError("spec.rayClusterSpec: Required value");
  }
  // The cluster it will create: the RayJob's metadata (its GCS fault-tolerance annotation) with
  // the cluster's spec.
  absl::StatusOr<nlohmann::json> pod_sets = RayClusterPodSets(
      {{"metadata", ObjectOr(Field(rayjob, "metadata"))}, {"spec", cluster_spec}});
  if (!pod_sets.ok()) return pod_sets.status();
  const std::string mode = SubmissionMode(rayjob);
  if (mode == kK8sJobMode) {
    pod_sets->push_back(
        {{"name", kRayJobSubmitterPodSet}, {"count", 1}, {"template", SubmitterTemplate(rayjob)}});
  } else if (mode == kSidecarMode) {
    nlohmann::json& containers = (*pod_sets)[0]["template"]["spec"]["containers"];
    if (!containers.is_array()) containers = nlohmann::json::array();
    containers.push_back(SubmitterContainer(""));
  }
  return pod_sets;
}

TemplateLayout RayJobLayout(const nlohmann::json& rayjob) {
  using Pointer = nlohmann::json::json_pointer;
  TemplateLayout layout{.suspend = Pointer("/spec/suspend"),
                        .templates = {Pointer("/spec/rayClusterSpec/headGroupSpec/template")}};
  const size_t groups = RayWorkerGroups(Field(Spec(rayjob), "rayClusterSpec")).size();
  for (size_t i = 0; i < groups; ++i) {
    layout.templates.push_back(
        Pointer(absl::StrCat("/spec/rayClusterSpec/workerGroupSpecs/", i, "/template")));
  }
  if (SubmissionMode(rayjob) == kK8sJobMode) {
    layout.templates.push_back(Pointer("/spec/submitterPodTemplate"));
  }
  return layout;
}

nlohmann::json RayJobForStart(const nlohmann::json& rayjob) {
  nlohmann::json out = rayjob;
  if (SubmissionMode(rayjob) == kK8sJobMode &&
      !Field(Spec(rayjob), "submitterPodTemplate").is_object()) {
    out["spec"]["submitterPodTemplate"] = SubmitterTemplate(rayjob);
  }
  return out;
}

bool RayJobSkipped(const nlohmann::json& rayjob) {
  const nlohmann::json& selector = Field(Spec(rayjob), "clusterSelector");
  return selector.is_object() && !selector.empty();
}

bool RayJobSuspended(const nlohmann::json& rayjob) {
  return Field(Spec(rayjob), "suspend") == true;
}

std::optional<JobFinish> RayJobFinished(const nlohmann::json& rayjob) {
  const nlohmann::json& status = Field(rayjob, "status");
  const std::string state = Str(status, "jobDeploymentStatus");
  if (state != "Complete" && state != "Failed") return std::nullopt;
  return JobFinish{Str(status, "jobStatus") == "SUCCEEDED", Str(status, "message")};
}

bool RayJobActive(const nlohmann::json& rayjob) {
  const std::string state = Str(Field(rayjob, "status"), "jobDeploymentStatus");
  return !state.empty() && state != "Suspended";
}

bool RayJobPodsReady(const nlohmann::json& rayjob) {
  return Str(Field(Field(rayjob, "status"), "rayClusterStatus"), "state") == "ready";
}

}  // namespace admitd::shim
