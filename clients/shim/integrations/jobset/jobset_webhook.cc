#include "clients/shim/integrations/jobset/jobset_webhook.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/integrations/jobset/jobset_workload.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

// The JobSet operator: a JobSet it manages may be given to MultiKueue.
constexpr char kJobSetOperator[] = "jobset.sigs.k8s.io/jobset-controller";

// The checks CREATE and UPDATE share: the elastic annotation, each replicated job's topology
// request (and its slice size within the pod set's count).
void CheckJobSet(const nlohmann::json& jobset, const JobWebhookOptions& options,
                 std::vector<FieldError>* errs) {
  if (Elastic(ObjectView(jobset), options)) {
    errs->push_back(ElasticNotSupported(kJobSetApiVersion, kJobSetKind));
  }
  if (!options.topology_aware_scheduling) return;
  const nlohmann::json& jobs = Field(Field(jobset, "spec"), "replicatedJobs");
  absl::StatusOr<nlohmann::json> pod_sets = JobSetPodSets(jobset);
  for (size_t i = 0; jobs.is_array() && i < jobs.size(); ++i) {
    const std::string meta_path =
        absl::StrCat("spec.replicatedJobs[", i, "].template.spec.template.metadata");
    const nlohmann::json& annotations = Field(
        Field(Field(Field(Field(jobs[i], "template"), "spec"), "template"), "metadata"),
        "annotations");
    std::vector<FieldError> tas =
        TasPodSetRequestErrors(meta_path, annotations, options.tas_multi_layer_topology);
    errs->insert(errs->end(), tas.begin(), tas.end());
    if (!tas.empty() || !pod_sets.ok()) continue;
    const int64_t count = (*pod_sets)[i].value("count", int64_t{0});
    if (std::optional<std::string> size = Entry(annotations, kSliceSize);
        size && GoParseInt32(*size).value_or(0) > count) {
      errs->push_back(FieldError::Invalid(
          absl::StrCat(meta_path, ".annotations[", kSliceSize, "]"), GoQuote(*size),
          absl::StrCat("must not be greater than pod set count ", count)));
    }
  }
}

}  // namespace

std::vector<nlohmann::json> DefaultJobSet(const nlohmann::json& jobset, JobWebhookContext& context,
                                          const JobWebhookOptions& options) {
  std::vector<nlohmann::json> ops = DefaultFramework(jobset, context, options);
  DefaultMultiKueueManagedBy(jobset, context, options, {"spec", "managedBy"}, kJobSetOperator,
                             &ops);
  return ops;
}

std::vector<FieldError> ValidateJobSetCreate(const nlohmann::json& jobset,
                                             const JobWebhookOptions& options) {
  std::vector<FieldError> errs = ValidateFrameworkCreate(jobset, options);
  CheckJobSet(jobset, options, &errs);
  return errs;
}

std::vector<FieldError> ValidateJobSetUpdate(const nlohmann::json& old_jobset,
                                             const nlohmann::json& new_jobset,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options) {
  std::vector<FieldError> errs = ValidateJobSetCreate(new_jobset, options);
  std::vector<FieldError> update = ValidateFrameworkUpdate(old_jobset, new_jobset, context, options);
  errs.insert(errs.end(), update.begin(), update.end());
  return errs;
}

KindWebhook JobSetWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                          bool enabled) {
  KindWebhook webhook{.kind = kJobSetKind,
                      .mutate_path = "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
                      .validate_path = "/validate-jobset-x-k8s-io-v1alpha2-jobset",
                      .enabled = enabled};
  webhook.default_create = [&context, options](const nlohmann::json& jobset) {
    return DefaultJobSet(jobset, context, options);
  };
  webhook.validate = [&context, options](const nlohmann::json* old_jobset,
                                         const nlohmann::json& jobset,
                                         std::vector<std::string>*, std::string*) {
    return old_jobset == nullptr ? ValidateJobSetCreate(jobset, options)
                                 : ValidateJobSetUpdate(*old_jobset, jobset, context, options);
  };
  return webhook;
}

}  // namespace admitd::shim
