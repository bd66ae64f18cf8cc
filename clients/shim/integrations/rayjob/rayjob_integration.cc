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
                                .skip = RayJobSkipped,
                                .for_start = RayJobForStart};
  auto integration = std::make_unique<Integration>(
      IntegrationInfo{
          .name = "ray.io/rayjob",
          .api_version = kRayJobApiVersion,
          .kind = kRayJobKind,
          .resource = "rayjobs",
          .short_name = "rayjob",
          .controller = kRayJobController,
          .pods_path = "",  // its status says whether its cluster still runs
          .custom_resource = true,
      },
      [](const nlohmann::json& object, std::vector<nlohmann::json> pods,
         const FrameworkOptions& options) {
        return NewLayoutJob(kKind, object, std::move(pods), options);
      },
      [](const nlohmann::json&) { return std::string(); }, RayJobWebhook);
  integration->SetMultiKueue({});
  return integration;
}

}  // namespace admitd::shim
