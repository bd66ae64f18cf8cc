// The RayCluster integration (ray.io/v1, Kueue's ray.io/raycluster, kueue-jobframework.md §4): a
// RayCluster as a GenericJob (the head and each worker group a pod set; suspended by
// spec.suspend; active while ready or while a pod of it is still running; never finished, so its
// Workload keeps its quota until the cluster is deleted, evicted or deactivated; elastic through
// its worker groups' replicas).
//
//   registry.Register(NewRayClusterIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim {

// The reportingComponent of the events the shim records on RayClusters (Kueue's).
inline constexpr char kRayClusterController[] = "ray.io/raycluster-kueue-controller";

std::unique_ptr<Integration> NewRayClusterIntegration();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_INTEGRATION_H_
