// A JobSet (jobset.x-k8s.io/v1alpha2, Kueue's jobset.x-k8s.io/jobset; kueue-jobframework.md §8) as
// the job framework reads it: one pod set per replicated job (replicas × pods per replica), its
// state (suspended, finished by its Completed or Failed condition, active while a child Job is,
// pods ready when every replica is ready or succeeded), the pods its succeeded replicas no longer
// need, and the patches that start it with its admission and stop it.
//
//   absl::StatusOr<nlohmann::json> pod_sets = JobSetPodSets(jobset);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_WORKLOAD_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_WORKLOAD_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/template_patches.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

inline constexpr char kJobSetApiVersion[] = "jobset.x-k8s.io/v1alpha2";
inline constexpr char kJobSetKind[] = "JobSet";
// The label on a JobSet's child Jobs and their pods.
inline constexpr char kJobSetNameLabel[] = "jobset.sigs.k8s.io/jobset-name";

// The Workload's pod sets ({name, count, template}), one per spec.replicatedJobs[i] in order:
// count = replicas × min(parallelism, completions when set). INVALID_ARGUMENT when there is no
// replicated job or one has no name.
absl::StatusOr<nlohmann::json> JobSetPodSets(const nlohmann::json& jobset);
// Where the suspend switch and each replicated job's pod template are.
TemplateLayout JobSetLayout(const nlohmann::json& jobset);

bool JobSetSuspended(const nlohmann::json& jobset);
// Completed=True: succeeded; Failed=True: failed; each with the condition's message.
std::optional<JobFinish> JobSetFinished(const nlohmann::json& jobset);
// Some status.replicatedJobsStatus[].active > 0 (child Jobs, not pods).
bool JobSetActive(const nlohmann::json& jobset);
// Σ replicas == Σ (ready + succeeded) over the replicated jobs' statuses.
bool JobSetPodsReady(const nlohmann::json& jobset);
// The merge patch giving each replicated job the replicas its pod set's count in `counts`
// (by pod set name) makes (count ÷ pods per replica); nullopt when nothing changes.
std::optional<nlohmann::json> JobSetScalePatch(const nlohmann::json& jobset,
                                               const std::map<std::string, int>& counts);
// Per replicated job with 0 < succeeded ≤ replicas: succeeded × pods per replica.
std::map<std::string, int> JobSetReclaimablePods(const nlohmann::json& jobset);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOBSET_JOBSET_WORKLOAD_H_
