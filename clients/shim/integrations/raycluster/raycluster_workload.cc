#include "clients/shim/integrations/raycluster/raycluster_workload.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/framework/template_patches.h"
#include "clients/shim/framework/workload_builder.h"
#include "common/workload_names.h"

namespace admitd::shim {
namespace {

// KubeRay's RayFTEnabledAnnotationKey.
constexpr char kRayFtEnabledAnnotation[] = "ray.io/ft-enabled";

// A resource.Quantity's value, for comparing two quantities of one resource (KubeRay's and
// Kueue's fixed requests against the user's). NaN-free: an unreadable text counts as 0.
long double QuantityValue(const std::string& text) {
  static const std::pair<const char*, long double> kSuffixes[] = {
      {"Ki", 1024.0L},
      {"Mi", 1024.0L * 1024},
      {"Gi", 1024.0L * 1024 * 1024},
      {"Ti", 1024.0L * 1024 * 1024 * 1024},
      {"Pi", 1024.0L * 1024 * 1024 * 1024 * 1024},
      {"Ei", 1024.0L * 1024 * 1024 * 1024 * 1024 * 1024},
      {"n", 1e-9L},
      {"u", 1e-6L},
      {"m", 1e-3L},
      {"k", 1e3L},
      {"M", 1e6L},
      {"G", 1e9L},
      {"T", 1e12L},
      {"P", 1e15L},
      {"E", 1e18L}};
  std::string number = text;
  long double scale = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    if (absl::EndsWith(text, suffix) && text.size() > strlen(suffix)) {
      number = text.substr(0, text.size() - strlen(suffix));
      scale = factor;
      break;
    }
  }
  char* end = nullptr;
  const long double v = std::strtold(number.c_str(), &end);
  if (end == number.c_str() || *end != '\0') return 0;
  return v * scale;
}

// Kueue's MergeResourceListKeepMax of `requests` (a JSON map) with `floor`.
void RaiseRequests(const std::vector<std::pair<std::string, std::string>>& floor,
                   nlohmann::json* requests) {
  if (!requests->is_object()) *requests = nlohmann::json::object();
  for (const auto& [resource, minimum] : floor) {
    const std::string have = Str(*requests, resource);
    if (have.empty() || QuantityValue(have) < QuantityValue(minimum))
      (*requests)[resource] = minimum;
  }
}

// rayutils.IsGCSFaultToleranceEnabled.
bool GcsFaultTolerance(const nlohmann::json& cluster) {
  const nlohmann::json meta = ObjectOr(Field(cluster, "metadata"));
  const nlohmann::json& annotations = Field(meta, "annotations");
  if (annotations.is_object() && annotations.contains(kRayFtEnabledAnnotation) &&
      absl::AsciiStrToLower(Str(annotations, kRayFtEnabledAnnotation)) == "true") {
    return true;
  }
  return !Field(Field(cluster, "spec"), "gcsFaultToleranceOptions").is_null();
}

// KubeRay's autoscaler sidecar as Kueue accounts it: its name and resources only.
nlohmann::json AutoscalerContainer(const nlohmann::json& spec) {
  const nlohmann::json& resources = Field(Field(spec, "autoscalerOptions"), "resources");
  if (resources.is_object()) return {{"name", "autoscaler"}, {"resources", resources}};
  const nlohmann::json fixed = {{"cpu", "500m"}, {"memory", "512Mi"}};
  return {{"name", "autoscaler"}, {"resources", {{"requests", fixed}, {"limits", fixed}}}};
}

}  // namespace

bool RayClusterElastic(const nlohmann::json& cluster, bool elastic_jobs) {
  return elastic_jobs &&
         Str(Field(Field(cluster, "metadata"), "annotations"), kElasticJobAnnotation) == "true";
}

bool RayClusterSuspended(const nlohmann::json& cluster) {
  return Field(Field(cluster, "spec"), "suspend") == true;
}

absl::StatusOr<nlohmann::json> RayClusterPodSets(const nlohmann::json& cluster) {
  const nlohmann::json spec = ObjectOr(Field(cluster, "spec"));
  nlohmann::json head_template = ObjectOr(Field(Field(spec, "headGroupSpec"), "template"));
  if (GcsFaultTolerance(cluster)) {
    nlohmann::json& containers = head_template["spec"]["containers"];
    if (!containers.is_array() || containers.empty() || !containers[0].is_object()) {
      return absl::InvalidArgumentError(
          "cannot account for Redis cleanup resources: head pod template must include the Ray "
          "container");
    }
    RaiseRequests({{"cpu", "200m"}, {"memory", "256Mi"}}, &containers[0]["resources"]["requests"]);
  }
  if (Field(spec, "enableInTreeAutoscaling") == true) {
    nlohmann::json& containers = head_template["spec"]["containers"];
    if (!containers.is_array()) containers = nlohmann::json::array();
    containers.push_back(AutoscalerContainer(spec));
  }
  nlohmann::json pod_sets = nlohmann::json::array();
  pod_sets.push_back({{"name", kRayHeadPodSet}, {"count", 1}, {"template", head_template}});
  for (const nlohmann::json& group : ArrayOr(Field(spec, "workerGroupSpecs"))) {
    int64_t count = IntOr(Field(group, "replicas"), 1);
    if (const int64_t hosts = IntOr(Field(group, "numOfHosts"), 0); hosts > 1) count *= hosts;
    pod_sets.push_back({{"name", absl::AsciiStrToLower(Str(group, "groupName"))},
                        {"count", count},
                        {"template", ObjectOr(Field(group, "template"))}});
  }
  return pod_sets;
}

absl::StatusOr<v1::Workload> WorkloadForRayCluster(const nlohmann::json& cluster,
                                                   const RayClusterWorkloadOptions& options) {
  absl::StatusOr<nlohmann::json> pod_sets = RayClusterPodSets(cluster);
  if (!pod_sets.ok()) return pod_sets.status();
  // A RayCluster names no extra part of its own (unlike RayJob): an elastic one, its generation.
  return BuildWorkload(cluster, kRayClusterApiVersion, kRayClusterKind, *pod_sets,
                       {.elastic = RayClusterElastic(cluster, options.elastic_jobs),
                        .label_keys_to_copy = options.label_keys_to_copy});
}

bool RayClusterReady(const nlohmann::json& cluster) {
  return Str(Field(cluster, "status"), "state") == "ready";
}

TemplateLayout RayClusterLayout(const nlohmann::json& cluster) {
  using Pointer = nlohmann::json::json_pointer;
  TemplateLayout layout{.suspend = Pointer("/spec/suspend"),
                        .templates = {Pointer("/spec/headGroupSpec/template")}};
  const size_t groups = ArrayOr(Field(Field(cluster, "spec"), "workerGroupSpecs")).size();
  for (size_t i = 0; i < groups; ++i) {
    layout.templates.push_back(Pointer(absl::StrCat("/spec/workerGroupSpecs/", i, "/template")));
  }
  return layout;
}

}  // namespace admitd::shim
