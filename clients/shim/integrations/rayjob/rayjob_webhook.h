// The admission webhook's rules for RayJobs (ray.io/v1; kueue-jobframework.md §7.1): on CREATE
// the framework's defaulting (the `default` LocalQueue and WorkloadPriorityClass, spec.suspend)
// and spec.managedBy for a MultiKueue manager's queue; on CREATE and UPDATE of a managed RayJob
// (a queue name, or manageJobsWithoutQueueName) Kueue's RayJob rules with its texts:
//
//   - spec.clusterSelector with spec.rayClusterSpec is refused; spec.clusterSelector alone (a
//     job on an existing cluster, which Kueue skips) is not checked further; neither is refused;
//   - spec.shutdownAfterJobFinishes must be true; in-tree autoscaling only for an elastic job;
//     at most 18 pod sets; no worker group named "head";
//
// then, for every RayJob, the framework's checks and the Topology Aware Scheduling requests of
// the cluster's templates. An update is checked only when the new or the old RayJob is managed
// (ValidateRayAndSparkJobUpdates), with what may not change (ValidateFrameworkUpdate) first.
// The elastic-job annotation is accepted (and, beyond Kueue, an elastic RayJob's cluster
// templates are gated at creation, so that its pods wait for their slice's admission).
//
//   KindWebhook webhook = RayJobWebhook(context, options, /*enabled=*/true);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_WEBHOOK_H_

#include <string>
#include <vector>

#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

std::vector<nlohmann::json> DefaultRayJob(const nlohmann::json& rayjob, JobWebhookContext& context,
                                          const JobWebhookOptions& options);
// `*denial`: as for a RayCluster (ray_spec_rules.h).
std::vector<FieldError> ValidateRayJobCreate(const nlohmann::json& rayjob,
                                             const JobWebhookOptions& options,
                                             std::string* denial);
std::vector<FieldError> ValidateRayJobUpdate(const nlohmann::json& old_rayjob,
                                             const nlohmann::json& new_rayjob,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options,
                                             std::string* denial);

// On Kueue's paths /mutate-ray-io-v1-rayjob and /validate-ray-io-v1-rayjob; `enabled` false
// allows every RayJob unchanged. `context` must outlive it.
KindWebhook RayJobWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                          bool enabled);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_WEBHOOK_H_
