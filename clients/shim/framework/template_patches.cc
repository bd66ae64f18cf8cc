#include "clients/shim/framework/template_patches.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace admitd::shim {

nlohmann::json MergePatchBetween(const nlohmann::json& from, const nlohmann::json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  nlohmann::json patch = nlohmann::json::object();
  for (const auto& [k, v] : from.items()) {
    if (!to.contains(k)) patch[k] = nullptr;
  }
  for (const auto& [k, v] : to.items()) {
    auto it = from.find(k);
    if (it == from.end()) {
      patch[k] = v;
    } else if (*it != v) {
      patch[k] = it->is_object() && v.is_object() ? MergePatchBetween(*it, v) : v;
    }
  }
  return patch;
}

void RestoreTemplate(const v1::PodTemplate& stored, nlohmann::json* pod_template) {
  if (!pod_template->is_object()) *pod_template = nlohmann::json::object();
  pod_template->merge_patch(RestoreTemplatePatch(*pod_template, stored));
  // An empty map reads as no map: leave none behind (nor an empty metadata).
  for (const auto& [part, key] : {std::pair<const char*, const char*>{"metadata", "labels"},
                                  {"metadata", "annotations"},
                                  {"spec", "nodeSelector"}}) {
    nlohmann::json& section = (*pod_template)[part];
    if (section.is_object() && section.contains(key) && section[key].is_object() &&
        section[key].empty()) {
      section.erase(key);
    }
    if (section.is_object() && section.empty()) pod_template->erase(part);
  }
}

absl::StatusOr<nlohmann::json> StartPatchFor(const nlohmann::json& object,
                                             const TemplateLayout& layout,
                                             const std::vector<PodSetInfo>& infos, bool elastic) {
  if (infos.size() != layout.templates.size()) {
    return absl::FailedPreconditionError(absl::StrCat("invalid podset infos: expecting ",
                                                      layout.templates.size(), " podset, got ",
                                                      infos.size()));
  }
  nlohmann::json want = object;
  want[layout.suspend] = false;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (absl::Status s = MergeIntoTemplate(infos[i], elastic, &want[layout.templates[i]]);
        !s.ok()) {
      return s;
    }
  }
  return MergePatchBetween(object, want);
}

nlohmann::json StopPatchFor(const nlohmann::json& object, const TemplateLayout& layout,
                            const v1::Workload* workload) {
  nlohmann::json want = object;
  want[layout.suspend] = true;
  // Restore (RestorePodSetsInfo): skipped when the Workload has another number of pod sets.
  if (workload != nullptr &&
      workload->spec().pod_sets_size() == static_cast<int>(layout.templates.size())) {
    for (size_t i = 0; i < layout.templates.size(); ++i) {
      // A template the object does not spell out (a RayJob's default submitter) has nothing
      // to restore.
      if (!object.contains(layout.templates[i])) continue;
      RestoreTemplate(workload->spec().pod_sets(static_cast<int>(i)).template_(),
                      &want[layout.templates[i]]);
    }
  }
  return MergePatchBetween(object, want);
}

}  // namespace admitd::shim
