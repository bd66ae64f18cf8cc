// Which pods of an elastic Job to ungate (KEP-77, Job §2.7): the pods of the Job's slice chain
// that are not terminated, per pod set; as many gated ones as the admitted slice has room for
// (its count minus the pods already ungated), lowest name first. Pods beyond the admitted count
// stay gated.
//
//   for (const std::string& name : PodsToUngate(pods, chain, {{"main", 4}})) ...
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_ELASTIC_PODS_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_ELASTIC_PODS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/shim/framework/podset_info.h"
#include "nlohmann/json.hpp"
#include "common/kueue_keys.h"

namespace admitd::shim {


// Whether `pod` still carries the elastic-job scheduling gate.
bool HasElasticGate(const nlohmann::json& pod);

// The names of the pods to ungate. `chain` is the first slice's name (the pods' annotation
// kueue.x-k8s.io/workload-slice-name, else kueue.x-k8s.io/workload; "": every pod counts, for a
// kind whose pods get that annotation only as they are ungated); `admitted` is the admitted
// slice's count per pod set (the pods' label kueue.x-k8s.io/podset).
std::vector<std::string> PodsToUngate(const std::vector<nlohmann::json>& pods,
                                      const std::string& chain,
                                      const std::map<std::string, int>& admitted);

// The merge patch that removes the elastic-job gate from `pod` (keeping its other gates),
// guarded by the pod's resourceVersion.
nlohmann::json UngatePatch(const nlohmann::json& pod);

// The same, with `info` (its pod set's admission) merged into the pod's labels, annotations,
// node selector and tolerations, as Kubernetes allows of a gated pod: for a kind that starts by
// ungating (GenericJob::StartsByUngating). FAILED_PRECONDITION on a conflicting key.
absl::StatusOr<nlohmann::json> UngatePatchWithInfo(const nlohmann::json& pod,
                                                   const PodSetInfo& info);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_ELASTIC_PODS_H_
