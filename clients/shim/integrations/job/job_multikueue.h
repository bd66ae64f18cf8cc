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
#include "common/kueue_keys.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {


// spec.managedBy is kueue.x-k8s.io/multikueue.
bool ManagedByMultiKueue(const nlohmann::json& job);

// The name of the Workload a Job uses instead of one of its own (annotation, else label), or "".
std::string PrebuiltWorkloadName(const nlohmann::json& job);

// A Job a manager created in this (worker) cluster for its Workload: origin label and prebuilt
// Workload name.
bool IsMultiKueueWorkerJob(const nlohmann::json& job);

// The remote_job a manager cluster's shim submits with the Workload of `job`: apiVersion, kind,
// managedBy, and a manifest with the Job's name, namespace, labels, annotations and spec.
v1::RemoteJob RemoteJobFor(const nlohmann::json& job);

// The Job a worker cluster's shim creates for `copy`, a winning copy carrying a manifest:
// the manifest's metadata and spec, with spec.selector, spec.managedBy and the template labels
// the Job controller adds dropped, the copy's origin label, and the copy as the prebuilt
// Workload. Suspended: the worker shim starts it once it adopted the admitted copy.
// INVALID_ARGUMENT when the manifest is not a Job.
absl::StatusOr<nlohmann::json> WorkerJobFor(const v1::Workload& copy);

// The name the manifest of `copy` gives its Job, or "" when it has none.
std::string RemoteJobName(const v1::Workload& copy);

// The merge patch of the manager Job's /status that mirrors the worker Job's `remote` status
// (§9.1): the remote status when the manager Job runs, when both are suspended (the remote
// status has Suspended=True), or when the remote Job finished; nothing while the manager Job is suspended and the remote one runs (a
// startTime there would freeze the manager Job's template), nor when nothing would change.
std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& manager_job,
                                                const nlohmann::json& remote_status);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_MULTIKUEUE_H_
