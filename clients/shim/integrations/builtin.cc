#include "clients/shim/integrations/builtin.h"

#include "clients/shim/integrations/deployment/deployment_integration.h"
#include "clients/shim/integrations/job/job_integration.h"
#include "clients/shim/integrations/jobset/jobset_integration.h"
#include "clients/shim/integrations/pytorchjob/pytorchjob_integration.h"
#include "clients/shim/integrations/raycluster/raycluster_integration.h"
#include "clients/shim/integrations/rayjob/rayjob_integration.h"
#include "clients/shim/integrations/statefulset/statefulset_integration.h"

namespace admitd::shim {

std::unique_ptr<IntegrationRegistry> BuiltinIntegrations() {
  auto registry = std::make_unique<IntegrationRegistry>();
  registry->Register(NewJobIntegration());
  registry->Register(NewRayClusterIntegration());
  registry->Register(NewRayJobIntegration());
  registry->Register(NewJobSetIntegration());
  registry->Register(NewPyTorchJobIntegration());
  registry->Register(NewDeploymentIntegration());
  registry->Register(NewStatefulSetIntegration());
  return registry;
}

}  // namespace admitd::shim
