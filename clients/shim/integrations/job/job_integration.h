// The batch/v1 Job integration (Kueue's batch/job, kueue-jobframework.md §2): a Job as a
// GenericJob (one pod set "main"; suspended by spec.suspend unless being stopped; finished by its
// Complete or Failed condition; reclaimable pods; elastic through its parallelism) and a
// MultiKueue manager's Job mirroring its worker's status.
//
//   registry.Register(NewJobIntegration());
//
// Thread safety: immutable.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_INTEGRATION_H_

#include <memory>

#include "clients/shim/framework/integration.h"

namespace admitd::shim {

// The reportingComponent of the events the shim records on Jobs (Kueue's).
inline constexpr char kJobController[] = "batch/job-kueue-controller";

std::unique_ptr<Integration> NewJobIntegration();

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_INTEGRATION_H_
