// Resource lists and per-pod-set requests (§2.2 of the semantics): the effective pod request is,
// per resource, max(sum over containers + sidecars, max over init containers) plus overhead;
// pod-level resources replace the container sum; a container's requests default to its limits.
//
// Thread safety: pure functions over values.
#ifndef ADMITD_SERVER_ENGINE_RESOURCES_H_
#define ADMITD_SERVER_ENGINE_RESOURCES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/quantity.h"

namespace admitd::engine {

// resource name -> quantity in canonical units. Ordered, so iteration is deterministic.
using ResourceList = std::map<std::string, int64_t>;

// (flavor, resource): the unit of quota.
using FlavorResource = std::pair<std::string, std::string>;
// One workload's quantities per (flavor, resource).
using FlavorResourceQuantities = std::map<FlavorResource, int64_t>;
// Sums over workloads or queues: usage of a ClusterQueue or cohort, quota of a cohort.
using FlavorResourceAmounts = std::map<FlavorResource, Amount>;
// Per resource, exactly: what validation checks before narrowing to a ResourceList.
using ResourceAmounts = std::map<std::string, Amount>;

// Parses a map of quantity strings. INVALID_ARGUMENT names the first bad resource.
absl::StatusOr<ResourceList> ParseResourceList(
    const google::protobuf::Map<std::string, std::string>& quantities);

// The effective request of one pod of `spec`, exactly (unparseable quantities count as 0).
ResourceAmounts PodRequestsExact(const v1::PodSpec& spec);

// The effective request of one pod of `spec`. Validation (ValidateWorkload) has checked that every
// total fits a quantity; a value that does not (only in data stored before that check) is held at
// kMaxQuantity, which no quota can hold, so such a workload stays pending.
ResourceList PodRequests(const v1::PodSpec& spec);
// PodRequests of the exact requests PodRequestsExact gave.
ResourceList NarrowRequests(const ResourceAmounts& exact);

// `per_pod` × `count`, held at kMaxQuantity as PodRequests is.
ResourceList Scale(const ResourceList& per_pod, int64_t count);

// Renders a list as canonical quantity strings.
void RenderResourceList(const ResourceList& list,
                        google::protobuf::Map<std::string, std::string>* out);

// Adds (sign +1) or removes (sign -1) one workload's usage; entries that reach 0 are erased.
void AddTo(FlavorResourceAmounts* into, const FlavorResourceQuantities& add, int sign = 1);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_RESOURCES_H_
