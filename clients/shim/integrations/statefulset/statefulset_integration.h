// The StatefulSet integration (apps/v1, Kueue's `statefulset`; kueue-jobframework.md §11): no
// Workload of the kind; its webhook marks the pod template (statefulset_webhook.h), and each
// marked pod is labelled into the StatefulSet's serving pod group (statefulset_pods.h), which the
// pod integration admits as a whole. Enabling it enables the pod integration for such pods.
//
//   registry.Register(NewStatefulSetIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim {

std::unique_ptr<Integration> NewStatefulSetIntegration();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_INTEGRATION_H_
