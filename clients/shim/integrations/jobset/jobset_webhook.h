// The admission webhook's rules for JobSets (kueue-jobframework.md §8.1): on CREATE the
// framework's defaulting (the `default` LocalQueue and WorkloadPriorityClass, spec.suspend) and
// spec.managedBy for a MultiKueue manager's queue; on CREATE and UPDATE the framework's checks,
// the elastic-job annotation refused, and each replicated job's topology request checked on its
// pod template; on UPDATE also what may not change (ValidateFrameworkUpdate).
//
//   KindWebhook webhook = JobSetWebhook(context, options, /*enabled=*/true);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_WEBHOOK_H_

#include <vector>

#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

std::vector<nlohmann::json> DefaultJobSet(const nlohmann::json& jobset, JobWebhookContext& context,
                                          const JobWebhookOptions& options);
std::vector<FieldError> ValidateJobSetCreate(const nlohmann::json& jobset,
                                             const JobWebhookOptions& options);
std::vector<FieldError> ValidateJobSetUpdate(const nlohmann::json& old_jobset,
                                             const nlohmann::json& new_jobset,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options);

// mjobset.kb.io and vjobset.kb.io on /mutate-jobset-x-k8s-io-v1alpha2-jobset and
// /validate-jobset-x-k8s-io-v1alpha2-jobset; `enabled` false allows every JobSet unchanged.
KindWebhook JobSetWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                          bool enabled);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_WEBHOOK_H_
