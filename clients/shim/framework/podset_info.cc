#include "clients/shim/framework/podset_info.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace admitd::shim {
namespace {

bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}

nlohmann::json TolerationJson(const v1::Toleration& t) {
  nlohmann::json j = nlohmann::json::object();
  if (!t.key().empty()) j["key"] = t.key();
  if (!t.operator_().empty()) j["operator"] = t.operator_();
  if (!t.value().empty()) j["value"] = t.value();
  if (!t.effect().empty()) j["effect"] = t.effect();
  if (t.has_toleration_seconds()) j["tolerationSeconds"] = t.toleration_seconds();
  return j;
}

// Adds `add` to the string map at `*map` (a JSON object, created when missing).
absl::Status MergeMap(const char* what, const std::map<std::string, std::string>& add,
                      const std::set<std::string>& overwrite, nlohmann::json* map) {
  if (!map->is_object()) *map = nlohmann::json::object();
  for (const auto& [k, v] : add) {
    auto it = map->find(k);
    if (it != map->end() && it->is_string() && it->get<std::string>() != v &&
        overwrite.count(k) == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("invalid admission check PodSetUpdate: conflict for ", what,
                       ": conflict for key=", k, ", value1=", it->get<std::string>(),
                       ", value2=", v));
    }
    (*map)[k] = v;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PodSetInfo>> PodSetInfos(
    const v1::Workload& workload, const std::map<std::string, v1::ResourceFlavor>& flavors) {
  const v1::Admission& admission = workload.status().admission();
  if (admission.pod_set_assignments_size() != workload.spec().pod_sets_size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("invalid podset infos: expecting ", workload.spec().pod_sets_size(),
                     " podset, got ", admission.pod_set_assignments_size()));
  }
  const auto slice = workload.metadata().annotations().find("kueue.x-k8s.io/workload-slice-name");
  std::vector<PodSetInfo> out;
  for (int i = 0; i < admission.pod_set_assignments_size(); ++i) {
    const v1::PodSetAssignment& psa = admission.pod_set_assignments(i);
    PodSetInfo info;
    info.name = psa.name();
    info.count = psa.count() > 0 ? psa.count() : workload.spec().pod_sets(i).count();
    std::set<std::string> seen;
    for (const auto& [resource, flavor] : psa.flavors()) {
      if (!seen.insert(flavor).second) continue;  // each distinct flavor once
      auto f = flavors.find(flavor);
      if (f == flavors.end()) continue;
      for (const auto& [k, v] : f->second.spec().node_labels()) info.node_selector[k] = v;
      for (const v1::Toleration& t : f->second.spec().tolerations()) {
        info.tolerations.push_back(TolerationJson(t));
      }
    }
    info.labels["kueue.x-k8s.io/podset"] = psa.name();
    if (!workload.spec().queue_name().empty()) {
      info.labels["kueue.x-k8s.io/local-queue-name"] = workload.spec().queue_name();
    }
    if (IsDnsLabel(admission.cluster_queue())) {
      info.labels["kueue.x-k8s.io/cluster-queue-name"] = admission.cluster_queue();
    }
    info.annotations["kueue.x-k8s.io/workload"] = workload.metadata().name();
    if (slice != workload.metadata().annotations().end()) {
      info.annotations["kueue.x-k8s.io/workload-slice-name"] = slice->second;
    }
    out.push_back(std::move(info));
  }
  return out;
}

absl::Status MergeIntoTemplate(const PodSetInfo& info, bool elastic, nlohmann::json* pod_template) {
  nlohmann::json& t = *pod_template;
  if (!t.is_object()) t = nlohmann::json::object();
  std::set<std::string> overwrite = {"kueue.x-k8s.io/workload-slice-name"};
  if (elastic) overwrite.insert("kueue.x-k8s.io/workload");
  if (absl::Status s = MergeMap("labels", info.labels, {}, &t["metadata"]["labels"]); !s.ok()) {
    return s;
  }
  if (absl::Status s = MergeMap("annotations", info.annotations, overwrite,
                                &t["metadata"]["annotations"]);
      !s.ok()) {
    return s;
  }
  if (!info.node_selector.empty()) {
    if (absl::Status s = MergeMap("nodeSelector", info.node_selector, {}, &t["spec"]["nodeSelector"]);
        !s.ok()) {
      return s;
    }
  }
  if (!info.tolerations.empty()) {
    nlohmann::json& tolerations = t["spec"]["tolerations"];
    if (!tolerations.is_array()) tolerations = nlohmann::json::array();
    for (const nlohmann::json& add : info.tolerations) {
      if (std::find(tolerations.begin(), tolerations.end(), add) == tolerations.end()) {
        tolerations.push_back(add);
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// A merge patch that makes the JSON object `current` equal `want`: removed keys become null.
nlohmann::json ReplaceMap(const nlohmann::json& current,
                          const google::protobuf::Map<std::string, std::string>& want,
                          const std::set<std::string>& keep = {}) {
  nlohmann::json out = nlohmann::json::object();
  if (current.is_object()) {
    for (const auto& [k, v] : current.items()) {
      if (keep.count(k)) continue;
      if (want.find(k) == want.end()) out[k] = nullptr;
    }
  }
  for (const auto& [k, v] : want) {
    if (!keep.count(k)) out[k] = v;
  }
  return out;
}

}  // namespace

nlohmann::json RestoreTemplatePatch(const nlohmann::json& pod_template,
                                    const v1::PodTemplate& stored,
                                    const std::set<std::string>& keep_labels) {
  const nlohmann::json tmeta = pod_template.is_object()
                                   ? pod_template.value("metadata", nlohmann::json::object())
                                   : nlohmann::json::object();
  const nlohmann::json tspec = pod_template.is_object()
                                   ? pod_template.value("spec", nlohmann::json::object())
                                   : nlohmann::json::object();
  nlohmann::json patch = nlohmann::json::object();
  patch["metadata"]["labels"] =
      ReplaceMap(tmeta.value("labels", nlohmann::json::object()), stored.labels(), keep_labels);
  patch["metadata"]["annotations"] =
      ReplaceMap(tmeta.value("annotations", nlohmann::json::object()), stored.annotations());
  patch["spec"]["nodeSelector"] =
      ReplaceMap(tspec.value("nodeSelector", nlohmann::json::object()),
                 stored.spec().node_selector());
  nlohmann::json tolerations = nlohmann::json::array();
  for (const v1::Toleration& t : stored.spec().tolerations()) {
    tolerations.push_back(TolerationJson(t));
  }
  patch["spec"]["tolerations"] = tolerations.empty() ? nlohmann::json(nullptr) : tolerations;
  nlohmann::json gates = nlohmann::json::array();
  for (const v1::PodSchedulingGate& g : stored.spec().scheduling_gates()) {
    gates.push_back({{"name", g.name()}});
  }
  patch["spec"]["schedulingGates"] = gates.empty() ? nlohmann::json(nullptr) : gates;
  return patch;
}

}  // namespace admitd::shim
