// Kueue's ConstructWorkload for any kind (kueue-jobframework.md §1.6): the Workload a job asks
// for, from its metadata and the pod sets its integration reads off its spec. The generated name
// (kind, group, name, uid; an elastic job's generation as the extra part), the job-uid label and
// labelKeysToCopy, the provisioning-request annotations, an elastic job's slice annotations, the
// queue name, the WorkloadPriorityClass, maximumExecutionTimeSeconds, and the job as controller
// owner; read by the same manifest reader as every other Workload.
//
//   absl::StatusOr<v1::Workload> wl = BuildWorkload(job, "batch/v1", "Job", pod_sets, {});
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_WORKLOAD_BUILDER_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_WORKLOAD_BUILDER_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct WorkloadBuildOptions {
  bool elastic = false;  // an elastic job: slice annotations and the generation in the name
  std::string extra;     // an elastic job's name part instead of its generation (a RayJob's)
  std::set<std::string> label_keys_to_copy;  // Kueue's labelKeysToCopy
};

// `object` is the job (metadata with name and uid) of `api_version` `kind`; `pod_sets` the
// Workload's pod sets as a Kueue manifest has them ([{name, count, minCount?, template}]).
// INVALID_ARGUMENT when the name or uid is missing, or when the pod sets do not read (the
// message names the field).
absl::StatusOr<v1::Workload> BuildWorkload(const nlohmann::json& object,
                                           const std::string& api_version,
                                           const std::string& kind,
                                           const nlohmann::json& pod_sets,
                                           const WorkloadBuildOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_WORKLOAD_BUILDER_H_
