#include "clients/shim/integrations/deployment/deployment_integration.h"

namespace admitd::shim {

ServingWebhookSpec DeploymentWebhookSpec() {
  return {.api_version = "apps/v1",
          .kind = "Deployment",
          .framework = "deployment",
          .mutate_path = "/mutate-apps-v1-deployment",
          .validate_path = "/validate-apps-v1-deployment",
          .label_template = true};
}

std::unique_ptr<Integration> NewDeploymentIntegration() {
  return std::make_unique<Integration>(
      IntegrationInfo{
          .name = "deployment",
          .api_version = "apps/v1",
          .kind = "Deployment",
          .resource = "deployments",
          .short_name = "deployment",
          .admitted_as_pods = true,
      },
      [](const nlohmann::json&) { return std::string(); },
      [](JobWebhookContext& context, const JobWebhookOptions& options, bool enabled) {
        return ServingWebhook(DeploymentWebhookSpec(), context, options, enabled);
      },
      nullptr);
}

}  // namespace admitd::shim
