#include "clients/shim/integrations/statefulset/statefulset_integration.h"

#include <string>
#include <utility>

#include "clients/shim/framework/serving_job.h"
#include "clients/shim/integrations/statefulset/statefulset_pods.h"
#include "clients/shim/integrations/statefulset/statefulset_webhook.h"

namespace admitd::shim {

std::unique_ptr<Integration> NewStatefulSetIntegration() {
  return std::make_unique<Integration>(
      IntegrationInfo{
          .name = "statefulset",
          .api_version = kStatefulSetApiVersion,
          .kind = kStatefulSetKind,
          .resource = "statefulsets",
          .short_name = "statefulset",
          .controller = "statefulset-kueue-controller",
          // Every StatefulSet's pods carry this label.
          .pods_path = "/api/v1/pods?labelSelector=statefulset.kubernetes.io%2Fpod-name",
          .admitted_as_pods = true,
      },
      // An elastic StatefulSet: one Workload resized through slices (serving_job.h).
      [](const nlohmann::json& object, Related related, const FrameworkOptions& options) {
        static const std::string kApiVersion = kStatefulSetApiVersion, kKind = kStatefulSetKind;
        return NewServingJob(kApiVersion, kKind, object, std::move(related), options);
      },
      [](const nlohmann::json& pod) {
        return ControllerKeyOfPod(pod, kStatefulSetApiVersion, kStatefulSetKind);
      },
      StatefulSetWebhook, StatefulSetPodPatch);
}

}  // namespace admitd::shim
