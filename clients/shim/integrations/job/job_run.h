// Starting and stopping a batch/v1 Job (Job §2.3, job framework §1.9–§1.10): the merge patch that
// runs it with its admission's pod set info, whether Kueue counts it as suspended, and its stop
// as three writes (suspend and mark it stopping; clear status.startTime; restore the template).
//
//   nlohmann::json start = *StartPatch(job, infos, /*elastic=*/false);
//   StopPlan stop = PlanStop(job, &workload);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_RUN_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_RUN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/podset_info.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The merge patch that starts a batch/v1 Job: spec.suspend=false, the template with the podset
// info merged in and, for a partially admitted Job (job-min-parallelism), parallelism (and
// completions with job-completions-equal-parallelism) set to the admitted count.
absl::StatusOr<nlohmann::json> StartPatch(const nlohmann::json& job,
                                          const std::vector<PodSetInfo>& infos, bool elastic);

// The Job's stop: `suspend` sets spec.suspend and the kueue.x-k8s.io/stopping annotation (null
// when it is suspended already); `status` clears status.startTime when set (the template may not
// change before); `restore` gives the template the labels, annotations, nodeSelector,
// tolerations and schedulingGates of `workload`'s pod set (keeping the Job controller's labels),
// the original parallelism (and completions) of a partially admitted Job, and removes the
// stopping annotation. Without a Workload nothing of the template is restored.
StopPlan PlanStop(const nlohmann::json& job, const v1::Workload* workload);

// Whether Kueue counts the Job as suspended: spec.suspend and not being stopped.
bool IsSuspended(const nlohmann::json& job);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_RUN_H_
