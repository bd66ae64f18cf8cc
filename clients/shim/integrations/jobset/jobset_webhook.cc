#include "clients/shim/integrations/jobset/jobset_webhook.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/base_webhook.h"
#include "clients/shim/integrations/jobset/jobset_workload.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

// Kueue's registration and the places of a JobSet's switches and templates.
BaseWebhookSpec JobSetSpec() {
  return {.api_version = kJobSetApiVersion,
          .kind = kJobSetKind,
          .mutate_path = "/mutate-jobset-x-k8s-io-v1alpha2-jobset",
          .validate_path = "/validate-jobset-x-k8s-io-v1alpha2-jobset",
          .suspend = {"spec", "suspend"},
          .managed_by = {"spec", "managedBy"},
          // The JobSet operator: a JobSet it manages may be given to MultiKueue.
          .own_controller = "jobset.sigs.k8s.io/jobset-controller",
          // Beyond Kueue: a replicated job's replicas resized through workload slices.
          .elastic = true,
          .templates = [](const nlohmann::json& jobset) {
            std::vector<TemplateAt> out;
            absl::StatusOr<nlohmann::json> pod_sets = JobSetPodSets(jobset);
            if (!pod_sets.ok()) return out;
            for (size_t i = 0; i < pod_sets->size(); ++i) {
              out.push_back(
                  {absl::StrCat("spec.replicatedJobs[", i, "].template.spec.template.metadata"),
                   {"spec", "replicatedJobs", absl::StrCat(i), "template", "spec", "template"},
                   (*pod_sets)[i]["template"], IntOr((*pod_sets)[i]["count"], 0)});
            }
            return out;
          }};
}

}  // namespace

std::vector<nlohmann::json> DefaultJobSet(const nlohmann::json& jobset, JobWebhookContext& context,
                                          const JobWebhookOptions& options) {
  return BaseDefault(JobSetSpec(), jobset, context, options);
}

std::vector<FieldError> ValidateJobSetCreate(const nlohmann::json& jobset,
                                             const JobWebhookOptions& options) {
  return BaseValidateCreate(JobSetSpec(), jobset, options);
}

std::vector<FieldError> ValidateJobSetUpdate(const nlohmann::json& old_jobset,
                                             const nlohmann::json& new_jobset,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options) {
  return BaseValidateUpdate(JobSetSpec(), old_jobset, new_jobset, context, options);
}

KindWebhook JobSetWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                          bool enabled) {
  return BaseWebhook(JobSetSpec(), context, options, enabled);
}

}  // namespace admitd::shim
