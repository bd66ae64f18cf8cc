#include "clients/shim/integrations/rayjob/rayjob_integration.h"

#include "clients/shim/framework/layout_job.h"
#include "clients/shim/integrations/rayjob/rayjob_webhook.h"
#include "clients/shim/integrations/rayjob/rayjob_workload.h"

namespace admitd::shim {

std::unique_ptr<Integration> NewRayJobIntegration() {
  static const LayoutKind kKind{.api_version = kRayJobApiVersion,
                                .kind = kRayJobKind,
                                .pod_sets = RayJobPodSets,
                                .layout = RayJobLayout,
                                .suspended = RayJobSuspended,
                                .active = RayJobActive,
                                .pods_ready = RayJobPodsReady,
                                .finished = RayJobFinished,
                                // Its cluster's worker groups resized through workload slices
                                // (an autoscaled RayJob, Kueue §7.5).
                                .elastic = true,
                                .on_hold = RayJobOnHold,
                                .skip = RayJobSkipped,
                                .for_start = RayJobForStart,
                                .live_counts = RayJobLiveCounts,
                                .prepare = RayJobGenerationPatch,
                                .name_extra = RayJobNameExtra};
  return NewLayoutIntegration(
      kKind,
      IntegrationInfo{
          .name = "ray.io/rayjob",
          .api_version = kRayJobApiVersion,
          .kind = kRayJobKind,
          .resource = "rayjobs",
          .short_name = "rayjob",
          .controller = kRayJobController,
          // Its cluster's pods (an elastic RayJob's are ungated by the shim): those labelled with
          // its cluster's name.
          .pods_path = "/api/v1/pods?labelSelector=ray.io%2Fcluster",
          .pods_by_label = "ray.io/cluster",
          .pods_label_value = {"status", "rayClusterName"},
          // The RayCluster KubeRay makes for it: an elastic RayJob's counts are its cluster's.
          .children_path = "/apis/ray.io/v1/rayclusters",
          .custom_resource = true,
      },
      [](const nlohmann::json&) { return std::string(); }, RayJobWebhook);
}

}  // namespace admitd::shim
