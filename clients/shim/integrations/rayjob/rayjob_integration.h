// The RayJob integration (ray.io/v1, Kueue's ray.io/rayjob; kueue-jobframework.md §7): a RayJob
// as a GenericJob described by its layout (rayjob_workload.h; one that runs on an existing
// cluster is skipped) and its webhook (rayjob_webhook.h). The RayCluster and the submitter Job
// KubeRay creates for it are owned by the RayJob, so neither gets a Workload of its own.
//
//   registry.Register(NewRayJobIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim {

// The reportingComponent of the events the shim records on RayJobs (Kueue's).
inline constexpr char kRayJobController[] = "ray.io/rayjob-kueue-controller";

std::unique_ptr<Integration> NewRayJobIntegration();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_INTEGRATION_H_
