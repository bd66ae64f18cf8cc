#include "clients/shim/integrations/jobset/jobset_integration.h"

#include "clients/shim/framework/layout_job.h"
#include "clients/shim/integrations/jobset/jobset_webhook.h"
#include "clients/shim/integrations/jobset/jobset_workload.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {

std::unique_ptr<Integration> NewJobSetIntegration() {
  // Elastic beyond Kueue (whose webhook refuses the annotation): a replicated job's replicas
  // resized through workload slices, new pods gated until their slice is admitted.
  static const LayoutKind kKind{.api_version = kJobSetApiVersion,
                                .kind = kJobSetKind,
                                .pod_sets = JobSetPodSets,
                                .layout = JobSetLayout,
                                .suspended = JobSetSuspended,
                                .active = JobSetActive,
                                .pods_ready = JobSetPodsReady,
                                .finished = JobSetFinished,
                                .reclaimable = JobSetReclaimablePods,
                                .elastic = true,
                                .scale = JobSetScalePatch};
  return NewLayoutIntegration(
      kKind,
      IntegrationInfo{
          .name = "jobset.x-k8s.io/jobset",
          .api_version = kJobSetApiVersion,
          .kind = kJobSetKind,
          .resource = "jobsets",
          .short_name = "jobset",
          .controller = kJobSetController,
          // Its child Jobs' pods, which carry its name: an elastic one's are ungated by the shim.
          .pods_path = "/api/v1/pods?labelSelector=jobset.sigs.k8s.io%2Fjobset-name",
          .pods_by_label = kJobSetNameLabel,
          .custom_resource = true,
      },
      [](const nlohmann::json& pod) {
        const nlohmann::json& meta = Field(pod, "metadata");
        const std::string name = Str(Field(meta, "labels"), kJobSetNameLabel);
        return ElasticPod(pod) && !name.empty() ? Str(meta, "namespace") + "/" + name
                                                : std::string();
      },
      JobSetWebhook);
}

}  // namespace admitd::shim
