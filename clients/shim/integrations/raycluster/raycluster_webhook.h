// The admission webhook's rules for RayClusters (ray.io/v1; job framework §1.3, §1.4, §4.1), as
// pure functions over the cluster's JSON: the defaulting of Kueue's `mraycluster.kb.io` on
// CREATE (the default LocalQueue and WorkloadPriorityClass labels, spec.suspend, spec.managedBy
// for a MultiKueue manager's queue, and for an elastic cluster the scheduling gate kueue.x-k8s.io/elastic-job on the head's and every worker
// group's template), as RFC 6902 JSON Patch operations, and the checks of `vraycluster.kb.io`
// on CREATE and UPDATE with Kueue's texts:
//
//   - a managed cluster (a queue name, or manageJobsWithoutQueueName): an elastic one needs the
//     elastic gate on every template (and no in-tree autoscaling under MultiKueue); otherwise
//     enableInTreeAutoscaling is refused; at most 18 pod sets; no worker group named "head";
//   - every cluster: jobframework.ValidateJobOnCreate, and Kueue's Topology Aware Scheduling
//     checks of each template's annotations (the pod-set group pairs, slice sizes within the pod
//     set's count);
//   - an update is checked only when the new or the old cluster is managed
//     (ValidateRayAndSparkJobUpdates): jobframework.ValidateJobOnUpdate, then the CREATE checks.
//
//   std::vector<nlohmann::json> ops = DefaultRayCluster(rc, context, options);
//   std::string denial;
//   std::vector<FieldError> errs = ValidateRayClusterCreate(rc, options, &denial);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WEBHOOK_H_

#include <string>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The JSON Patch operations of Kueue's CREATE defaulting of `rc`; empty when nothing changes.
std::vector<nlohmann::json> DefaultRayCluster(const nlohmann::json& rc, JobWebhookContext& context,
                                              const JobWebhookOptions& options);

// The errors `vraycluster.kb.io` reports for a cluster being created, in Kueue's order; empty:
// allowed, unless `*denial` was set (Kueue's refusal when a worker group's topology annotations
// cannot even be read into pod sets while the head's are fine: a plain message, not a field
// error).
std::vector<FieldError> ValidateRayClusterCreate(const nlohmann::json& rc,
                                                 const JobWebhookOptions& options,
                                                 std::string* denial);

// The errors for an update from `old_rc` to `new_rc` (and `*denial` as above).
std::vector<FieldError> ValidateRayClusterUpdate(const nlohmann::json& old_rc,
                                                 const nlohmann::json& new_rc,
                                                 JobWebhookContext& context,
                                                 const JobWebhookOptions& options,
                                                 std::string* denial);

// The RayCluster webhook on Kueue's paths /mutate-ray-io-v1-raycluster and
// /validate-ray-io-v1-raycluster; `enabled` false (the ray.io/raycluster framework off) allows
// every cluster unchanged. `context` must outlive it.
KindWebhook RayClusterWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                              bool enabled);
// One AdmissionReview of the RayCluster webhook (admission_review.h).
WebhookReply AnswerRayClusterReview(const std::string& path, const std::string& body,
                                    JobWebhookContext& context, const JobWebhookOptions& options,
                                    bool enabled);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WEBHOOK_H_
