// A pod's role hash as Kueue's pod webhook writes it into the `kueue.x-k8s.io/role-hash`
// annotation (pkg/util/pod GenerateRoleHash): the first 8 hex digits of SHA-256 over Go's
// encoding/json of {"spec": <shape>}, the shape keeping only what admission looks at (container
// and init container requests and ports, nodeSelector, affinity, tolerations, runtimeClassName,
// priority, topologySpreadConstraints, overhead, resourceClaims, and the pod-level requests when
// pod-level resources are set). It is computed from the pod's JSON as the API server sends it to
// the webhook, re-encoded the way Go encodes the typed fields: struct fields in declaration
// order with their omitempty rules, map keys sorted, absent lists and maps as null.
//
//   std::string hash = PodRoleHash(pod["spec"]);  // "dc85db45" for one container asking 1 CPU
//
// Quantities are hashed as written. The API server always writes them in canonical form (Go's
// Quantity.MarshalJSON), so this is Kueue's hash for any pod a real API server sends; a JSON
// number is written as its decimal text.
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_WEBHOOK_ROLE_HASH_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_WEBHOOK_ROLE_HASH_H_

#include <string>

#include "nlohmann/json.hpp"

namespace admitd::shim {

// The bytes Kueue hashes for a pod spec (`spec` may be null or not an object: an empty spec).
std::string PodRoleShapeJson(const nlohmann::json& spec);

// First 8 lowercase hex digits of SHA-256(PodRoleShapeJson(spec)).
std::string PodRoleHash(const nlohmann::json& spec);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_WEBHOOK_ROLE_HASH_H_
