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

namespace admitd::engine {

// resource name -> quantity in canonical units. Ordered, so iteration is deterministic.
using ResourceList = std::map<std::string, int64_t>;

// (flavor, resource): the unit of quota.
using FlavorResource = std::pair<std::string, std::string>;
using FlavorResourceQuantities = std::map<FlavorResource, int64_t>;

// Parses a map of quantity strings. INVALID_ARGUMENT names the first bad resource.
absl::StatusOr<ResourceList> ParseResourceList(
    const google::protobuf::Map<std::string, std::string>& quantities);

// The effective request of one pod of `spec` (quantities must already be valid).
ResourceList PodRequests(const v1::PodSpec& spec);

// `per_pod` × `count`, saturating.
ResourceList Scale(const ResourceList& per_pod, int64_t count);

// Renders a list as canonical quantity strings.
void RenderResourceList(const ResourceList& list,
                        google::protobuf::Map<std::string, std::string>* out);

void AddTo(FlavorResourceQuantities* into, const FlavorResourceQuantities& add, int64_t sign = 1);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_RESOURCES_H_
