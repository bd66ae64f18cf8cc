#include "clients/shim/integrations/rayjob/rayjob_workload.h"

#include <string>

#include "absl/strings/ascii.h"
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

namespace {

// The RayCluster of `clusters` the RayJob runs on, nullptr when none.
const nlohmann::json* LiveCluster(const nlohmann::json& rayjob,
                                  const std::vector<nlohmann::json>& clusters) {
  const std::string name = Str(Field(rayjob, "status"), "rayClusterName");
  if (name.empty()) return nullptr;
  for (const nlohmann::json& c : clusters) {
    if (Str(Field(c, "metadata"), "name") == name) return &c;
  }
  return nullptr;
}

}  // namespace

absl::Status RayJobLiveCounts(const nlohmann::json& rayjob,
                              const std::vector<nlohmann::json>& clusters,
                              nlohmann::json* pod_sets) {
  const nlohmann::json* cluster = LiveCluster(rayjob, clusters);
  if (cluster == nullptr) return absl::OkStatus();
  const std::string cluster_name = Str(Field(*cluster, "metadata"), "name");
  for (const nlohmann::json& group : RayWorkerGroups(Field(*cluster, "spec"))) {
    const nlohmann::json& replicas = Field(group, "replicas");
    if (!replicas.is_number_integer()) continue;
    int64_t count = replicas.get<int64_t>();
    if (const int64_t hosts = IntOr(Field(group, "numOfHosts"), 0); hosts > 1) count *= hosts;
    const std::string name = absl::AsciiStrToLower(Str(group, "groupName"));
    bool found = false;
    for (nlohmann::json& ps : *pod_sets) {
      if (Str(ps, "name") == name) {
        ps["count"] = count;
        found = true;
      }
    }
    if (!found) {
      return absl::FailedPreconditionError(absl::StrCat(
          "PodSet name mismatch: RayCluster ", cluster_name, " has worker group ",
          Str(group, "groupName"), " which is not found in Ray object ",
          Str(Field(rayjob, "metadata"), "name"), " spec"));
    }
  }
  return absl::OkStatus();
}

std::optional<nlohmann::json> RayJobGenerationPatch(const nlohmann::json& rayjob,
                                                    const std::vector<nlohmann::json>& clusters) {
  const nlohmann::json* cluster = LiveCluster(rayjob, clusters);
  const std::string want =
      cluster != nullptr ? absl::StrCat(IntOr(Field(Field(*cluster, "metadata"), "generation"), 0))
                         : "";
  const nlohmann::json& annotations = Field(Field(rayjob, "metadata"), "annotations");
  if (annotations.is_object() && annotations.contains(kRayClusterGenerationAnnotation) &&
      Str(annotations, kRayClusterGenerationAnnotation) == want) {
    return std::nullopt;
  }
  return nlohmann::json{
      {"metadata", {{"annotations", {{kRayClusterGenerationAnnotation, want}}}}}};
}

std::string RayJobNameExtra(const nlohmann::json& rayjob) {
  const nlohmann::json& meta = Field(rayjob, "metadata");
  std::string extra = absl::StrCat(IntOr(Field(meta, "generation"), 1));
  if (const std::string g = Str(Field(meta, "annotations"), kRayClusterGenerationAnnotation);
      !g.empty()) {
    absl::StrAppend(&extra, "_", g);
  }
  return extra;
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
  return !state.empty() && state != "Suspended" && state != "ValidationFailed";
}

bool RayJobOnHold(const nlohmann::json& rayjob) {
  return Str(Field(rayjob, "status"), "jobDeploymentStatus") == "ValidationFailed";
}

bool RayJobPodsReady(const nlohmann::json& rayjob) {
  return Str(Field(Field(rayjob, "status"), "rayClusterStatus"), "state") == "ready";
}

}  // namespace admitd::shim
