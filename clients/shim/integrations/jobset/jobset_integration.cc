#include "clients/shim/integrations/jobset/jobset_integration.h"

#include "clients/shim/framework/layout_job.h"
#include "clients/shim/integrations/jobset/jobset_webhook.h"
#include "clients/shim/integrations/jobset/jobset_workload.h"

namespace admitd::shim {

std::unique_ptr<Integration> NewJobSetIntegration() {
  // Not elastic: the webhook refuses the elastic-job annotation on a JobSet (as Kueue does).
  static const LayoutKind kKind{.api_version = kJobSetApiVersion,
                                .kind = kJobSetKind,
                                .pod_sets = JobSetPodSets,
                                .layout = JobSetLayout,
                                .suspended = JobSetSuspended,
                                .active = JobSetActive,
                                .pods_ready = JobSetPodsReady,
                                .finished = JobSetFinished,
                                .reclaimable = JobSetReclaimablePods};
  auto integration = std::make_unique<Integration>(
      IntegrationInfo{
          .name = "jobset.x-k8s.io/jobset",
          .api_version = kJobSetApiVersion,
          .kind = kJobSetKind,
          .resource = "jobsets",
          .short_name = "jobset",
          .controller = kJobSetController,
          .pods_path = "",  // its child Jobs count its pods
          .custom_resource = true,
      },
      [](const nlohmann::json& object, std::vector<nlohmann::json>,
         const FrameworkOptions& options) { return NewLayoutJob(kKind, object, options); },
      [](const nlohmann::json&) { return std::string(); }, JobSetWebhook);
  integration->SetMultiKueue({});
  return integration;
}

}  // namespace admitd::shim
