// A Kubeflow PyTorchJob (kubeflow.org/v1, Kueue's kubeflow.org/pytorchjob;
// kueue-jobframework.md §9) as the job framework reads it: one pod set per replica type present,
// in Kueue's order (Master, Worker) and named in lower case, of `replicas` pods; suspended by spec.runPolicy.suspend;
// finished by the first Succeeded or Failed condition; active while a replica type has active
// pods; pods ready while the Running condition holds.
//
//   absl::StatusOr<nlohmann::json> pod_sets = PyTorchJobPodSets(job);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_PYTORCHJOB_PYTORCHJOB_WORKLOAD_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_PYTORCHJOB_PYTORCHJOB_WORKLOAD_H_

#include <map>
#include <optional>

#include "absl/status/statusor.h"
#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/template_patches.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

inline constexpr char kPyTorchJobApiVersion[] = "kubeflow.org/v1";
inline constexpr char kPyTorchJobKind[] = "PyTorchJob";

// The Workload's pod sets ({name, count, template}): Master, then Worker, those present, named
// in lower case (Kueue's NewPodSetReference: master, worker).
// INVALID_ARGUMENT when neither is.
absl::StatusOr<nlohmann::json> PyTorchJobPodSets(const nlohmann::json& job);
// Where the suspend switch and each present replica type's template are.
TemplateLayout PyTorchJobLayout(const nlohmann::json& job);

// The merge patch giving each replica type the replicas its pod set's count in `counts` (by pod
// set name: master, worker) says; nullopt when nothing changes.
std::optional<nlohmann::json> PyTorchJobScalePatch(const nlohmann::json& job,
                                                   const std::map<std::string, int>& counts);

bool PyTorchJobSuspended(const nlohmann::json& job);
std::optional<JobFinish> PyTorchJobFinished(const nlohmann::json& job);
bool PyTorchJobActive(const nlohmann::json& job);
bool PyTorchJobPodsReady(const nlohmann::json& job);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_PYTORCHJOB_PYTORCHJOB_WORKLOAD_H_
