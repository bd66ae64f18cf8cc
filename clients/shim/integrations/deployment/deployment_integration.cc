#include "clients/shim/integrations/deployment/deployment_integration.h"

#include <string>
#include <utility>

#include "clients/shim/framework/serving_job.h"

namespace admitd::shim {

ServingWebhookSpec DeploymentWebhookSpec() {
  return {.api_version = "apps/v1",
          .kind = "Deployment",
          .framework = "deployment",
          .mutate_path = "/mutate-apps-v1-deployment",
          .validate_path = "/validate-apps-v1-deployment",
          .label_template = true,
          .elastic = true};
}

std::unique_ptr<Integration> NewDeploymentIntegration() {
  return std::make_unique<Integration>(
      IntegrationInfo{
          .name = "deployment",
          .api_version = "apps/v1",
          .kind = "Deployment",
          .resource = "deployments",
          .short_name = "deployment",
          .controller = "deployment-kueue-controller",
          // An elastic Deployment's pods: those of its ReplicaSets, labelled with its pod set.
          .pods_path = "/api/v1/pods?labelSelector=kueue.x-k8s.io%2Fpodset",
          .children_path = "/apis/apps/v1/replicasets",
          .admitted_as_pods = true,
      },
      // An elastic Deployment: one Workload resized through slices (serving_job.h).
      [](const nlohmann::json& object, Related related, const FrameworkOptions& options) {
        static const std::string kApiVersion = "apps/v1", kKind = "Deployment";
        return NewServingJob(kApiVersion, kKind, object, std::move(related), options);
      },
      // Its pods are its ReplicaSets' (the shim maps them through its children).
      [](const nlohmann::json&) { return std::string(); },
      [](JobWebhookContext& context, const JobWebhookOptions& options, bool enabled) {
        return ServingWebhook(DeploymentWebhookSpec(), context, options, enabled);
      },
      nullptr);
}

}  // namespace admitd::shim
