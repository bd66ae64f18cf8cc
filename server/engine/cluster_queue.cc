#include "server/engine/cluster_queue.h"

#include <algorithm>

#include "server/engine/quantity.h"

namespace admitd::engine {

void ClusterQueueState::Rebuild() {
  groups.clear();
  group_of.clear();
  nominal.clear();
  const v1::ClusterQueueSpec& spec = object.cluster_queue().spec();
  strict_fifo = spec.queueing_strategy() == "StrictFIFO";
  for (const v1::ResourceGroup& g : spec.resource_groups()) {
    ResourceGroupQuota group;
    group.resources.assign(g.covered_resources().begin(), g.covered_resources().end());
    for (const v1::FlavorQuotas& fq : g.flavors()) {
      group.flavors.push_back(fq.name());
      for (const v1::ResourceQuota& q : fq.resources()) {
        auto v = ParseQuantity(q.name(), q.nominal_quota());
        nominal[{fq.name(), q.name()}] = v.ok() ? *v : 0;
      }
    }
    for (const std::string& r : group.resources) group_of[r] = static_cast<int>(groups.size());
    groups.push_back(std::move(group));
  }
}

bool ClusterQueueState::SelectsNamespace(
    const google::protobuf::Map<std::string, std::string>& labels) const {
  const v1::ClusterQueueSpec& spec = object.cluster_queue().spec();
  if (!spec.has_namespace_selector()) return false;
  const v1::LabelSelector& sel = spec.namespace_selector();
  for (const auto& [key, value] : sel.match_labels()) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const v1::LabelSelectorRequirement& req : sel.match_expressions()) {
    auto it = labels.find(req.key());
    const bool has = it != labels.end();
    const bool in = has && std::find(req.values().begin(), req.values().end(), it->second) !=
                               req.values().end();
    if (req.operator_() == "In" && !in) return false;
    if (req.operator_() == "NotIn" && in) return false;
    if (req.operator_() == "Exists" && !has) return false;
    if (req.operator_() == "DoesNotExist" && has) return false;
  }
  return true;
}

}  // namespace admitd::engine
