// The Kubeflow PyTorchJob integration (kubeflow.org/v1, Kueue's kubeflow.org/pytorchjob;
// kueue-jobframework.md §9): a PyTorchJob as a GenericJob (pytorchjob_workload.h) and its webhook,
// Kueue's base webhook with spec.runPolicy's suspend and managedBy.
//
//   registry.Register(NewPyTorchJobIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_PYTORCHJOB_PYTORCHJOB_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_PYTORCHJOB_PYTORCHJOB_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/base_webhook.h"
#include "clients/shim/framework/integration.h"

namespace admitd::shim {

// The reportingComponent of the events the shim records on PyTorchJobs (Kueue's).
inline constexpr char kPyTorchJobController[] = "kubeflow.org/pytorchjob-kueue-controller";

std::unique_ptr<Integration> NewPyTorchJobIntegration();
// mpytorchjob.kb.io and vpytorchjob.kb.io on /mutate-kubeflow-org-v1-pytorchjob and
// /validate-kubeflow-org-v1-pytorchjob.
BaseWebhookSpec PyTorchJobWebhookSpec();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_PYTORCHJOB_PYTORCHJOB_INTEGRATION_H_
