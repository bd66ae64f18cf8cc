// What the shim reads from a batch/v1 Job's status (Job §2.4, §2.5): whether it finished (and how),
// whether pods are still active (quota goes back after an eviction only once none are), whether
// its pods are ready, and the pods that no longer need quota (reclaimable).
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_STATUS_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_STATUS_H_

#include <optional>
#include <string>

#include "clients/shim/framework/generic_job.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// Set iff a Complete or Failed condition is True (SuccessCriteriaMet and FailureTarget do not
// count); success unless Failed.
std::optional<JobFinish> JobFinished(const nlohmann::json& job);
// status.active != 0.
bool JobActive(const nlohmann::json& job);
// succeeded + ready + uncounted succeeded pods reach `pod_count`.
bool JobPodsReady(const nlohmann::json& job, int pod_count);
// Kueue's PodsReady() of a Job: they reach min(parallelism, completions when set).
bool JobPodsReady(const nlohmann::json& job);
// Kueue's reclaimable pod count for pod set main (0: none to report): with p = parallelism and
// c = completions (default p), t terminal (succeeded, or for an Indexed Job the completed and
// failed indexes below c), p - max(c - t, 0) when p > 1, t > 0 and that remainder is below p.
int JobReclaimablePods(const nlohmann::json& job);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_STATUS_H_
