#include "clients/shim/integrations/raycluster/raycluster_integration.h"

#include <utility>

#include "clients/shim/framework/layout_job.h"
#include "clients/shim/integrations/raycluster/raycluster_webhook.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/integrations/raycluster/raycluster_workload.h"

namespace admitd::shim {

std::unique_ptr<Integration> NewRayClusterIntegration() {
  static const LayoutKind kKind{
      .api_version = kRayClusterApiVersion,
      .kind = kRayClusterKind,
      .pod_sets = RayClusterPodSets,
      .layout = RayClusterLayout,
      .suspended = RayClusterSuspended,
      .active = RayClusterReady,
      .pods_ready = RayClusterReady,
      // KubeRay may still be deleting its pods once its state is no longer ready (kueue#15980).
      .active_while_pods_run = true,
      // A RayCluster never finishes.
      .finished = [](const nlohmann::json&) { return std::optional<JobFinish>(); },
      // Autoscaled (or resized) worker groups through workload slices (§4.5).
      .elastic = true};
  return NewLayoutIntegration(
      kKind,
      IntegrationInfo{
          .name = "ray.io/raycluster",
          .api_version = kRayClusterApiVersion,
          .kind = kRayClusterKind,
          .resource = "rayclusters",
          .short_name = "raycluster",
          .controller = kRayClusterController,
          // KubeRay's pods, which carry the label ray.io/cluster.
          .pods_path = "/api/v1/pods?labelSelector=ray.io%2Fcluster",
          .custom_resource = true,
      },
      // Every pod of a cluster: the elastic ones are ungated, and a stopped cluster's quota goes
      // back once they are gone.
      [](const nlohmann::json& pod) {
        return ControllerKeyOfPod(pod, kRayClusterApiVersion, kRayClusterKind);
      },
      RayClusterWebhook);  // MultiKueue: spec.managedBy, spec.suspend
}

}  // namespace admitd::shim
