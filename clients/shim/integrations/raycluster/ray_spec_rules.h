// The checks Kueue makes of a RayCluster spec wherever it appears (kueue-jobframework.md §4.1,
// §7.1): a RayCluster's own `spec`, or a RayJob's `spec.rayClusterSpec`. Paths in the errors
// start at `prefix` ("spec" or "spec.rayClusterSpec"):
//
//   - at most 18 pod sets (the head and the worker groups), no worker group named "head";
//   - Topology Aware Scheduling: each group template's request, the slice sizes within the pod
//     set's count, and the pod-set groups (pairs, one of a single pod, the same topology).
//
//   std::vector<FieldError> errs;
//   CheckRayGroups(job["spec"]["rayClusterSpec"], "spec.rayClusterSpec", &errs);
//   CheckRayTopology(job["spec"]["rayClusterSpec"], "spec.rayClusterSpec", options, &errs, &denial);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAY_SPEC_RULES_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAY_SPEC_RULES_H_

#include <string>
#include <vector>

#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/field_errors.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The worker groups of `spec` (an empty array when it has none).
const nlohmann::json& RayWorkerGroups(const nlohmann::json& spec);
// "<prefix>.workerGroupSpecs[<i>]".
std::string RayWorkerPath(const std::string& prefix, size_t i);

// Kueue's raycluster.ValidateCreate without the autoscaling rule (its text differs between the
// kinds): too many pod sets, a worker group named "head".
void CheckRayGroups(const nlohmann::json& spec, const std::string& prefix,
                    std::vector<FieldError>* errs);

// Kueue's raycluster.ValidateTopologyRequest. `*denial` is set (when empty) to the plain message
// Kueue refuses with when a template's topology annotations cannot even be read and no field
// error was found.
void CheckRayTopology(const nlohmann::json& spec, const std::string& prefix,
                      const JobWebhookOptions& options, std::vector<FieldError>* errs,
                      std::string* denial);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAY_SPEC_RULES_H_
