#include "clients/shim/framework/elastic_pods.h"

#include <algorithm>

#include "clients/shim/framework/template_patches.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {

bool HasElasticGate(const nlohmann::json& pod) {
  const nlohmann::json gates =
      pod.value("spec", nlohmann::json::object()).value("schedulingGates", nlohmann::json::array());
  return std::any_of(gates.begin(), gates.end(), [](const nlohmann::json& g) {
    return Str(g, "name") == kElasticJobGate;
  });
}

std::vector<std::string> PodsToUngate(const std::vector<nlohmann::json>& pods,
                                      const std::string& chain,
                                      const std::map<std::string, int>& admitted) {
  std::map<std::string, std::vector<std::string>> gated;  // pod set -> gated pod names
  std::map<std::string, int> ungated;
  for (const nlohmann::json& pod : pods) {
    const nlohmann::json meta = pod.value("metadata", nlohmann::json::object());
    const nlohmann::json annotations = meta.value("annotations", nlohmann::json::object());
    std::string slice = Str(annotations, "kueue.x-k8s.io/workload-slice-name");
    if (slice.empty()) slice = Str(annotations, "kueue.x-k8s.io/workload");
    if (!chain.empty() && slice != chain) continue;
    const std::string phase = Str(pod.value("status", nlohmann::json::object()), "phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    const std::string pod_set =
        Str(meta.value("labels", nlohmann::json::object()), "kueue.x-k8s.io/podset");
    if (HasElasticGate(pod)) {
      gated[pod_set].push_back(Str(meta, "name"));
    } else {
      ++ungated[pod_set];
    }
  }
  std::vector<std::string> out;
  for (auto& [pod_set, names] : gated) {
    auto it = admitted.find(pod_set);
    if (it == admitted.end()) continue;
    const int room = it->second - ungated[pod_set];
    std::sort(names.begin(), names.end());
    for (int i = 0; i < room && i < static_cast<int>(names.size()); ++i) out.push_back(names[i]);
  }
  return out;
}

nlohmann::json UngatePatch(const nlohmann::json& pod) {
  const nlohmann::json meta = pod.value("metadata", nlohmann::json::object());
  nlohmann::json remaining = nlohmann::json::array();
  for (const nlohmann::json& g : pod.value("spec", nlohmann::json::object())
                                     .value("schedulingGates", nlohmann::json::array())) {
    if (Str(g, "name") != kElasticJobGate) remaining.push_back(g);
  }
  return {{"metadata", {{"resourceVersion", Str(meta, "resourceVersion")}}},
          {"spec", {{"schedulingGates", remaining.empty() ? nlohmann::json(nullptr) : remaining}}}};
}

absl::StatusOr<nlohmann::json> UngatePatchWithInfo(const nlohmann::json& pod,
                                                   const PodSetInfo& info) {
  const nlohmann::json& meta = Field(pod, "metadata");
  const nlohmann::json& spec = Field(pod, "spec");
  // The pod's parts an admission writes, as a template.
  nlohmann::json before = {{"metadata", nlohmann::json::object()}, {"spec", nlohmann::json::object()}};
  for (const char* key : {"labels", "annotations"}) {
    if (Field(meta, key).is_object()) before["metadata"][key] = meta[key];
  }
  for (const char* key : {"nodeSelector", "tolerations"}) {
    if (!Field(spec, key).is_null()) before["spec"][key] = spec[key];
  }
  nlohmann::json after = before;
  if (absl::Status s = MergeIntoTemplate(info, /*elastic=*/true, &after); !s.ok()) return s;
  after["spec"].erase("schedulingGates");  // the gates are the ungate's own
  nlohmann::json patch = UngatePatch(pod);
  patch.merge_patch(MergePatchBetween(before, after));
  patch["metadata"]["resourceVersion"] = Str(meta, "resourceVersion");
  return patch;
}

}  // namespace admitd::shim
