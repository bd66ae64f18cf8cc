// A pod as the cluster's API server returns it, turned into the PodObservation admitd's
// PodService takes (docs/shim-protocol.md §2): identity, resourceVersion, labels and annotations,
// phase, times, node, gates, finalizers, conditions, owners, and the admission-relevant spec read
// by the same manifest reader that reads Workload templates (so a group's role hashes agree with
// admitd's).
//
//   absl::StatusOr<v1::PodObservation> obs = PodObservationFromJson(pod_json, "c1");
//
// Thread safety: a pure function.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_OBSERVATION_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_OBSERVATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "admitd/v1/pods.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// INVALID_ARGUMENT (naming the field) when the pod cannot be read.
absl::StatusOr<v1::PodObservation> PodObservationFromJson(const nlohmann::json& pod,
                                                          const std::string& cluster);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_OBSERVATION_H_
