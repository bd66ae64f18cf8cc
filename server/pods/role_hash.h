// A pod's role hash, identical to Kueue's (pkg/util/pod GenerateRoleHash): the first 8 hex
// characters of SHA-256 over Go's encoding/json of {"spec": <shape>} where the shape keeps only
// the admission-relevant parts of the spec (see RoleShapeJson).
#ifndef ADMITD_SERVER_PODS_ROLE_HASH_H_
#define ADMITD_SERVER_PODS_ROLE_HASH_H_

#include <string>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/pods.pb.h"
#include "server/pods/go_json.h"

namespace admitd::pods {

// The JSON Kueue hashes for a spec: a map (keys sorted) with initContainers, containers (each
// reduced to {"ports", "resources": {"requests"}}), nodeSelector, affinity, tolerations,
// runtimeClassName, priority, topologySpreadConstraints, overhead, resourceClaims, and
// "resources" (the pod-level requests) only when pod-level resources are set. Empty repeated
// fields and maps are Go nil slices/maps (null). Container names, images, commands, env,
// limits, volumes, priorityClassName and restartPolicy do not take part.
// Fails only on a malformed quantity.
absl::StatusOr<std::string> RoleShapeJson(const v1::PodSpec& spec);

// First 8 lowercase hex characters of SHA-256(RoleShapeJson(spec)).
absl::StatusOr<std::string> ComputeRoleHash(const v1::PodSpec& spec);

// The pod's role: its kueue.x-k8s.io/role-hash annotation when present (the webhook's
// precomputed value wins), else ComputeRoleHash(pod.spec()).
absl::StatusOr<std::string> RoleHash(const v1::PodObservation& pod);

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_ROLE_HASH_H_
