// The JobSet integration (jobset.x-k8s.io/v1alpha2, Kueue's jobset.x-k8s.io/jobset;
// kueue-jobframework.md §8): a JobSet as a GenericJob (one pod set per replicated job; suspended
// by spec.suspend; finished by its Completed or Failed condition; active while a child Job is;
// reclaimable pods of its succeeded replicas). The child Jobs it creates are owned by it and so
// never get Workloads of their own (IntegrationRegistry::OwnedByManagedKind).
//
//   registry.Register(NewJobSetIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim {

// The reportingComponent of the events the shim records on JobSets (Kueue's).
inline constexpr char kJobSetController[] = "jobset.x-k8s.io/jobset-kueue-controller";

std::unique_ptr<Integration> NewJobSetIntegration();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_INTEGRATION_H_
