#include "clients/shim/integrations/rayjob/rayjob_webhook.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/base_webhook.h"
#include "clients/shim/integrations/raycluster/ray_spec_rules.h"
#include "clients/shim/integrations/rayjob/rayjob_workload.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/webhook/webhook_json.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

constexpr char kClusterSpecPath[] = "spec.rayClusterSpec";

bool RayJobManaged(const nlohmann::json& rayjob, const JobWebhookOptions& options) {
  return options.manage_jobs_without_queue_name ||
         !Entry(Field(Field(rayjob, "metadata"), "labels"), kQueueNameLabel).value_or("").empty();
}

// Kueue's RayJob rules of a managed RayJob; false when the RayJob is to be checked no further
// (a clusterSelector, or an error returned alone).
bool CheckManaged(const nlohmann::json& rayjob, std::vector<FieldError>* errs) {
  const nlohmann::json& spec = Field(rayjob, "spec");
  const nlohmann::json& selector = Field(spec, "clusterSelector");
  const bool has_selector = selector.is_object() && !selector.empty();
  const nlohmann::json& cluster = Field(spec, "rayClusterSpec");
  const bool has_cluster = cluster.is_object();
  if (has_selector && has_cluster) {
    errs->push_back(FieldError::Invalid("spec.clusterSelector", selector.dump(),
                                        "a kueue managed job should not use an existing cluster"));
    return false;
  }
  if (has_selector) return false;  // an existing cluster: Kueue skips the RayJob
  if (!has_cluster) {
    errs->push_back(FieldError::Required(
        "spec.rayClusterSpec",
        "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"));
    return false;
  }
  if (Field(spec, "shutdownAfterJobFinishes") != true) {
    errs->push_back(FieldError::Invalid("spec.shutdownAfterJobFinishes", "false",
                                        "a kueue managed job should delete the cluster after "
                                        "finishing"));
  }
  // raycluster.ValidateCreate: the annotation alone (workloadslicing.Enabled), not the gate.
  if (Field(cluster, "enableInTreeAutoscaling") == true &&
      Entry(Field(Field(rayjob, "metadata"), "annotations"), kElasticJobAnnotation) !=
          std::optional<std::string>("true")) {
    errs->push_back(FieldError::Invalid(
        "spec.rayClusterSpec.enableInTreeAutoscaling", "true",
        "a kueue managed job should only use autoscaling when workload slicing is enabled"));
  }
  CheckRayGroups(cluster, kClusterSpecPath, errs);
  return true;
}

BaseWebhookSpec RayJobSpec() {
  return {.api_version = kRayJobApiVersion,
          .kind = kRayJobKind,
          .mutate_path = "/mutate-ray-io-v1-rayjob",
          .validate_path = "/validate-ray-io-v1-rayjob",
          .suspend = {"spec", "suspend"},
          .managed_by = {"spec", "managedBy"},
          // KubeRay: a RayJob it manages may be given to MultiKueue.
          .own_controller = "ray.io/kuberay-operator"};
}

}  // namespace

std::vector<nlohmann::json> DefaultRayJob(const nlohmann::json& rayjob, JobWebhookContext& context,
                                          const JobWebhookOptions& options) {
  std::vector<nlohmann::json> ops = BaseDefault(RayJobSpec(), rayjob, context, options);
  // Beyond Kueue (whose RayJob webhook gates nothing): every pod of an elastic RayJob's cluster
  // starts gated until its slice is admitted.
  const nlohmann::json& cluster = Field(Field(rayjob, "spec"), "rayClusterSpec");
  if (Elastic(ObjectView(rayjob), options) && cluster.is_object()) {
    GateTemplate(rayjob, Field(Field(cluster, "headGroupSpec"), "template"),
                 {"spec", "rayClusterSpec", "headGroupSpec", "template"}, &ops);
    const nlohmann::json& groups = RayWorkerGroups(cluster);
    for (size_t i = 0; i < groups.size(); ++i) {
      GateTemplate(rayjob, Field(groups[i], "template"),
                   {"spec", "rayClusterSpec", "workerGroupSpecs", absl::StrCat(i), "template"},
                   &ops);
    }
  }
  return ops;
}

std::vector<FieldError> ValidateRayJobCreate(const nlohmann::json& rayjob,
                                             const JobWebhookOptions& options,
                                             std::string* denial) {
  std::vector<FieldError> errs;
  if (RayJobManaged(rayjob, options) && !CheckManaged(rayjob, &errs)) return errs;
  // The elastic annotation is accepted (RayJob is among Kueue's elastic kinds).
  std::vector<FieldError> common = ValidateFrameworkCreate(rayjob, options);
  errs.insert(errs.end(), common.begin(), common.end());
  const nlohmann::json& cluster = Field(Field(rayjob, "spec"), "rayClusterSpec");
  if (options.topology_aware_scheduling && cluster.is_object()) {
    CheckRayTopology(cluster, kClusterSpecPath, options, &errs, denial);
  }
  return errs;
}

std::vector<FieldError> ValidateRayJobUpdate(const nlohmann::json& old_rayjob,
                                             const nlohmann::json& new_rayjob,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options,
                                             std::string* denial) {
  if (!RayJobManaged(new_rayjob, options) && !RayJobManaged(old_rayjob, options)) return {};
  std::vector<FieldError> errs = ValidateFrameworkUpdate(old_rayjob, new_rayjob, context, options);
  std::vector<FieldError> create = ValidateRayJobCreate(new_rayjob, options, denial);
  errs.insert(errs.end(), create.begin(), create.end());
  return errs;
}

KindWebhook RayJobWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                          bool enabled) {
  KindWebhook webhook = BaseWebhook(RayJobSpec(), context, options, enabled);
  webhook.default_create = [&context, options](const nlohmann::json& rayjob) {
    return DefaultRayJob(rayjob, context, options);
  };
  webhook.validate = [&context, options](const nlohmann::json* old_rayjob,
                                         const nlohmann::json& rayjob, std::vector<std::string>*,
                                         std::string* denial) {
    return old_rayjob == nullptr
               ? ValidateRayJobCreate(rayjob, options, denial)
               : ValidateRayJobUpdate(*old_rayjob, rayjob, context, options, denial);
  };
  return webhook;
}

}  // namespace admitd::shim
