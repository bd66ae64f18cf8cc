// The integrations admitd-shim is built with, registered in one place (Kueue registers each
// from its package's init): batch/job, ray.io/raycluster, ray.io/rayjob,
// jobset.x-k8s.io/jobset, kubeflow.org/pytorchjob, deployment and statefulset. Plain pods and pod
// groups (and a Deployment's or StatefulSet's pods) are managed by admitd itself through the pod
// sync (pod_sync.h), not by the generic reconcile.
//
//   std::unique_ptr<IntegrationRegistry> registry = BuiltinIntegrations();
//
// Thread safety: the registry returned is immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_BUILTIN_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_BUILTIN_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim {

std::unique_ptr<IntegrationRegistry> BuiltinIntegrations();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_BUILTIN_H_
