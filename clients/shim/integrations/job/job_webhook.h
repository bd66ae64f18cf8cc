// The admission webhook's rules for batch/v1 Jobs (job framework §1.3, §1.4; Job §2.1), as pure
// functions over the Job's JSON: the defaulting Kueue's `mjob.kb.io` applies on CREATE (the
// default LocalQueue and WorkloadPriorityClass labels, spec.suspend, the elastic-job scheduling
// gate), returned as RFC 6902 JSON Patch operations, and the checks `vjob.kb.io` runs on CREATE
// and UPDATE, returned as field errors whose texts are Kueue's (apimachinery's format:
// `<path>: <Type>[: <value>][: <detail>]`, aggregated as `[e1, e2]`; see field_errors.h).
//
//   FakeContext ctx;  // a JobWebhookContext
//   std::vector<nlohmann::json> ops = DefaultJob(job, ctx, {});
//   nlohmann::json defaulted = job.patch(nlohmann::json(ops));
//   std::vector<FieldError> errs = ValidateJobCreate(defaulted, ctx, {});
//   if (!errs.empty()) deny(AggregateErrors(errs));
//
// Kueue's walk up the owner chain is approximated by the controller owner's kind: a Job whose
// controller owner is of a kind in `JobWebhookOptions::managed_owner_kinds` is not defaulted.
// The managedBy defaulting for MultiKueue (§1.3 step 4) is done for Jobs (a queue whose
// ClusterQueue has a MultiKueue check), not for RayClusters: admitd's MultiKueue runs Jobs only.
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WEBHOOK_H_

#include <string>
#include <vector>

#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "clients/shim/webhook/field_errors.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The JSON Patch operations (RFC 6902 objects {"op","path","value"}) that apply Kueue's CREATE
// defaulting to `job`; empty when nothing changes. Missing maps and lists are added whole, so
// the operations apply to `job` as given. The namespace is the Job's metadata.namespace.
std::vector<nlohmann::json> DefaultJob(const nlohmann::json& job, JobWebhookContext& context,
                                       const JobWebhookOptions& options);

// The errors `vjob.kb.io` reports for a Job being created, in Kueue's order; empty: allowed.
std::vector<FieldError> ValidateJobCreate(const nlohmann::json& job, JobWebhookContext& context,
                                          const JobWebhookOptions& options);

// The errors `vjob.kb.io` reports for an update from `old_job` to `new_job`.
std::vector<FieldError> ValidateJobUpdate(const nlohmann::json& old_job,
                                          const nlohmann::json& new_job, JobWebhookContext& context,
                                          const JobWebhookOptions& options);

// The Job's webhook (mjob.kb.io, vjob.kb.io) on Kueue's paths /mutate-batch-v1-job and
// /validate-batch-v1-job. `context` must outlive it.
KindWebhook JobWebhook(JobWebhookContext& context, const JobWebhookOptions& options);
// One AdmissionReview of the Job webhook (admission_review.h).
WebhookReply AnswerJobReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const JobWebhookOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WEBHOOK_H_
