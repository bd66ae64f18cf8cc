#include "clients/shim/integrations/raycluster/raycluster_webhook.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/integrations/raycluster/ray_spec_rules.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

constexpr char kSpec[] = "spec";

const nlohmann::json& Groups(const nlohmann::json& rc) { return RayWorkerGroups(Field(rc, kSpec)); }

const nlohmann::json& HeadTemplate(const nlohmann::json& rc) {
  return Field(Field(Field(rc, "spec"), "headGroupSpec"), "template");
}

std::string WorkerPath(size_t i) { return RayWorkerPath(kSpec, i); }

bool Managed(const nlohmann::json& rc, const JobWebhookOptions& options) {
  return options.manage_jobs_without_queue_name ||
         !Entry(Field(Field(rc, "metadata"), "labels"), kQueueNameLabel).value_or("").empty();
}

bool Elastic(const nlohmann::json& rc, const JobWebhookOptions& options) {
  return options.elastic_jobs && Entry(Field(Field(rc, "metadata"), "annotations"),
                                       kElasticJobAnnotation) == std::optional<std::string>("true");
}

// ---- Validation ----------------------------------------------------------------------------

// A template's scheduling gates as Go prints a []PodSchedulingGate value: JSON, null when unset.
std::string GatesText(const nlohmann::json& pod_template) {
  const nlohmann::json& gates = Field(Field(pod_template, "spec"), "schedulingGates");
  if (!gates.is_array()) return "null";
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& g : gates) out.push_back({{"name", Entry(g, "name").value_or("")}});
  return out.dump();
}

bool HasElasticGate(const nlohmann::json& pod_template) {
  return ListHas(Field(Field(pod_template, "spec"), "schedulingGates"), kElasticJobAnnotation, "name");
}

void CheckElastic(const nlohmann::json& rc, std::vector<FieldError>* errs) {
  const nlohmann::json& groups = Groups(rc);
  for (size_t i = 0; i < groups.size(); ++i) {
    const nlohmann::json& t = Field(groups[i], "template");
    if (!HasElasticGate(t)) {
      errs->push_back(FieldError::Invalid(WorkerPath(i) + ".template.spec.schedulingGates",
                                          GatesText(t),
                                          "an elastic job must have the ElasticJobSchedulingGate"));
    }
  }
  if (!HasElasticGate(HeadTemplate(rc))) {
    errs->push_back(FieldError::Invalid("spec.headGroupSpec.template.spec.schedulingGates",
                                        GatesText(HeadTemplate(rc)),
                                        "an elastic job must have the ElasticJobSchedulingGate"));
  }
  const nlohmann::json& spec = Field(rc, "spec");
  if (Field(spec, "enableInTreeAutoscaling") == true &&
      Entry(spec, "managedBy") == std::optional<std::string>(kMultiKueueControllerName)) {
    errs->push_back(FieldError::Forbidden(
        "spec.enableInTreeAutoscaling",
        "in-tree autoscaling is not supported for a MultiKueue-managed elastic RayCluster"));
  }
}

}  // namespace

std::vector<nlohmann::json> DefaultRayCluster(const nlohmann::json& rc, JobWebhookContext& context,
                                              const JobWebhookOptions& options) {
  // §1.3 steps 1 to 4: the managedBy default for a MultiKueue manager's queue included.
  std::vector<nlohmann::json> ops = DefaultFramework(rc, context, options);
  DefaultMultiKueueManagedBy(rc, context, options, {"spec", "managedBy"}, "ray.io/kuberay-operator",
                             &ops);
  // Every pod of an elastic cluster, the head's too, starts gated until its slice is admitted.
  if (Elastic(rc, options)) {
    GateTemplate(rc, HeadTemplate(rc), {"spec", "headGroupSpec", "template"}, &ops);
    const nlohmann::json& groups = Groups(rc);
    for (size_t i = 0; i < groups.size(); ++i) {
      GateTemplate(rc, Field(groups[i], "template"),
           {"spec", "workerGroupSpecs", absl::StrCat(i), "template"}, &ops);
    }
  }
  return ops;
}

std::vector<FieldError> ValidateRayClusterCreate(const nlohmann::json& rc,
                                                 const JobWebhookOptions& options,
                                                 std::string* denial) {
  std::vector<FieldError> errs;
  if (Managed(rc, options)) {
    const nlohmann::json& spec = Field(rc, "spec");
    if (Elastic(rc, options)) {
      CheckElastic(rc, &errs);
    } else if (Field(spec, "enableInTreeAutoscaling") == true) {
      errs.push_back(FieldError::Invalid(
          "spec.enableInTreeAutoscaling", "true",
          absl::StrCat("a kueue-managed RayCluster can use autoscaling only as an elastic job: "
                       "enable the ElasticJobsViaWorkloadSlices feature gate and set the ",
                       GoQuote(kElasticJobAnnotation), ": ", GoQuote("true"), " annotation")));
    }
    CheckRayGroups(spec, kSpec, &errs);
  }
  std::vector<FieldError> common = ValidateFrameworkCreate(rc, options);
  errs.insert(errs.end(), common.begin(), common.end());
  if (options.topology_aware_scheduling) {
    CheckRayTopology(Field(rc, kSpec), kSpec, options, &errs, denial);
  }
  return errs;
}

std::vector<FieldError> ValidateRayClusterUpdate(const nlohmann::json& old_rc,
                                                 const nlohmann::json& new_rc,
                                                 JobWebhookContext& context,
                                                 const JobWebhookOptions& options,
                                                 std::string* denial) {
  // ShouldValidateRayOrSparkJobOnUpdate (ValidateRayAndSparkJobUpdates on): a cluster that is or
  // was managed.
  if (!Managed(new_rc, options) && !Managed(old_rc, options)) return {};
  std::vector<FieldError> errs = ValidateFrameworkUpdate(old_rc, new_rc, context, options);
  std::vector<FieldError> create = ValidateRayClusterCreate(new_rc, options, denial);
  errs.insert(errs.end(), create.begin(), create.end());
  return errs;
}

KindWebhook RayClusterWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                              bool enabled) {
  KindWebhook webhook{.kind = "RayCluster",
                      .mutate_path = "/mutate-ray-io-v1-raycluster",
                      .validate_path = "/validate-ray-io-v1-raycluster",
                      .enabled = enabled};
  webhook.default_create = [&context, options](const nlohmann::json& rc) {
    return DefaultRayCluster(rc, context, options);
  };
  webhook.validate = [&context, options](const nlohmann::json* old_rc, const nlohmann::json& rc,
                                         std::vector<std::string>*, std::string* denial) {
    return old_rc == nullptr ? ValidateRayClusterCreate(rc, options, denial)
                             : ValidateRayClusterUpdate(*old_rc, rc, context, options, denial);
  };
  return webhook;
}

WebhookReply AnswerRayClusterReview(const std::string& path, const std::string& body,
                                    JobWebhookContext& context, const JobWebhookOptions& options,
                                    bool enabled) {
  return AnswerReview(RayClusterWebhook(context, options, enabled), path, body);
}

}  // namespace admitd::shim
