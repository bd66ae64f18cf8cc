#include "server/engine/resources.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

// A container's requests, defaulted from its limits where only the limit is given.
ResourceAmounts ContainerRequests(const v1::ResourceRequirements& resources) {
  ResourceAmounts out;
  for (const auto& [name, text] : resources.limits()) {
    if (auto v = ParseQuantity(name, text); v.ok()) out[name] = *v;
  }
  for (const auto& [name, text] : resources.requests()) {
    if (auto v = ParseQuantity(name, text); v.ok()) out[name] = *v;
  }
  return out;
}

// A total validation has found to fit; see PodRequests.
int64_t Narrow(Amount v) {
  return IsQuantity(v) ? static_cast<int64_t>(v) : (v > 0 ? kMaxQuantity : -kMaxQuantity);
}

void AddList(ResourceAmounts* into, const ResourceAmounts& add) {
  for (const auto& [name, v] : add) (*into)[name] += v;
}

void MaxList(ResourceAmounts* into, const ResourceAmounts& other) {
  for (const auto& [name, v] : other) (*into)[name] = std::max((*into)[name], v);
}

}  // namespace

absl::StatusOr<ResourceList> ParseResourceList(
    const google::protobuf::Map<std::string, std::string>& quantities) {
  ResourceList out;
  for (const auto& [name, text] : quantities) {
    absl::StatusOr<int64_t> v = ParseQuantity(name, text);
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", v.status().message()));
    }
    out[name] = *v;
  }
  return out;
}

ResourceAmounts PodRequestsExact(const v1::PodSpec& spec) {
  const bool pod_level = !spec.resources().requests().empty() || !spec.resources().limits().empty();
  ResourceAmounts total;
  if (pod_level) {
    total = ContainerRequests(spec.resources());
  } else {
    // Regular init containers run one at a time before the main containers; sidecars (restart
    // policy Always) keep running, so each init container also sees the sidecars started before
    // it, and the main containers run beside every sidecar.
    ResourceAmounts sidecars, init_peak;
    for (const v1::Container& c : spec.init_containers()) {
      ResourceAmounts req = ContainerRequests(c.resources());
      if (c.restart_policy() == "Always") {
        AddList(&sidecars, req);
        MaxList(&init_peak, sidecars);
      } else {
        ResourceAmounts with_sidecars = sidecars;
        AddList(&with_sidecars, req);
        MaxList(&init_peak, with_sidecars);
      }
    }
    total = std::move(sidecars);
    for (const v1::Container& c : spec.containers()) {
      if (total.empty()) {
        total = ContainerRequests(c.resources());  // the common case: no sidecars, one container
      } else {
        AddList(&total, ContainerRequests(c.resources()));
      }
    }
    if (!init_peak.empty()) MaxList(&total, init_peak);
  }
  for (const auto& [name, text] : spec.overhead()) {
    if (auto v = ParseQuantity(name, text); v.ok()) total[name] += *v;
  }
  return total;
}

ResourceList PodRequests(const v1::PodSpec& spec) { return NarrowRequests(PodRequestsExact(spec)); }

ResourceList NarrowRequests(const ResourceAmounts& exact) {
  ResourceList out;
  for (const auto& [name, v] : exact) out.emplace_hint(out.end(), name, Narrow(v));
  return out;
}

ResourceList Scale(const ResourceList& per_pod, int64_t count) {
  ResourceList out;
  for (const auto& [name, v] : per_pod) out[name] = Narrow(Amount(v) * count);
  return out;
}

void RenderResourceList(const ResourceList& list,
                        google::protobuf::Map<std::string, std::string>* out) {
  out->clear();
  for (const auto& [name, v] : list) (*out)[name] = FormatQuantity(name, v);
}

void AddTo(FlavorResourceAmounts* into, const FlavorResourceQuantities& add, int sign) {
  for (const auto& [fr, v] : add) {
    Amount& slot = (*into)[fr];
    slot += sign * Amount(v);
    if (slot == 0) into->erase(fr);
  }
}

}  // namespace admitd::engine
