// MultiKueue for batch/v1 Jobs, the shim's part (docs/multikueue.md, multikueue.md §8.2, §9.1):
// what a manager cluster's shim sends with the Workload of a Job managed by MultiKueue, the Job
// a worker cluster's shim creates from the winning copy's manifest, and how the worker Job's
// status is mirrored into the manager's Job. Pure functions over JSON.
//
//   v1::RemoteJob r = RemoteJobFor(job);                     // manager: at Submit
//   absl::StatusOr<nlohmann::json> j = WorkerJobFor(copy);   // worker: the Job to create
//   std::optional<nlohmann::json> p = MirrorStatusPatch(job, remote_status);  // manager
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_MULTIKUEUE_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_MULTIKUEUE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/multikueue.h"
#include "common/kueue_keys.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// Where a Job keeps what MultiKueue reads and writes: spec.managedBy, spec.suspend; a worker's
// Job drops spec.selector and the template labels the Job controller adds (the worker's Job
// controller adds its own).
MultiKueueAdapter JobMultiKueueAdapter();

// The remote_job of a Job (RemoteJobFor with the Job's adapter).
v1::RemoteJob RemoteJobFor(const nlohmann::json& job);

// The Job a worker cluster's shim creates for `copy` (WorkerObjectFor with the Job's adapter).
// INVALID_ARGUMENT when the manifest is not a Job with spec.template.
absl::StatusOr<nlohmann::json> WorkerJobFor(const v1::Workload& copy);

// The merge patch of the manager Job's /status that mirrors the worker Job's `remote` status
// (§9.1): the remote status when the manager Job runs, when both are suspended (the remote
// status has Suspended=True), or when the remote Job finished; nothing while the manager Job is
// suspended and the remote one runs (a startTime there would freeze the manager Job's template),
// nor when nothing would change.
std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& manager_job,
                                                const nlohmann::json& remote_status);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_MULTIKUEUE_H_
