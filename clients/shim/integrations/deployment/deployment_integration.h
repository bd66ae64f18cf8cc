// The Deployment integration (apps/v1, Kueue's `deployment`; kueue-jobframework.md §10): no
// Workload of the kind and no reconcile of its own. Its webhook (Kueue's mdeployment.kb.io and
// vdeployment.kb.io, the serving webhook of framework/serving_webhook.h) marks the pod template
// (kueue.x-k8s.io/pod-suspending-parent: deployment, the managed label, the queue name and the
// priority class), so each pod its ReplicaSets create is gated and admitted as a single pod by
// the pod integration. Enabling it enables the pod integration for such pods.
//
//   registry.Register(NewDeploymentIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_DEPLOYMENT_DEPLOYMENT_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_DEPLOYMENT_DEPLOYMENT_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/integration.h"
#include "clients/shim/framework/serving_webhook.h"

namespace admitd::shim {

ServingWebhookSpec DeploymentWebhookSpec();
std::unique_ptr<Integration> NewDeploymentIntegration();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_DEPLOYMENT_DEPLOYMENT_INTEGRATION_H_
