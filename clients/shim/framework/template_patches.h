// Starting and stopping a kind whose pod sets' templates sit at known places in its object (a
// RayCluster's head and worker groups, a JobSet's replicated jobs, a PyTorchJob's replica
// specs), as one JSON merge patch each (job framework §1.9, §1.10): the start unsuspends the
// object and merges each pod set's info into its template; the stop suspends it and, when the
// Workload has one pod set per template, restores every template to the Workload's in the same
// write (kueue#2691: a restore in a second write may be refused by the kind's own webhook).
//
//   TemplateLayout layout{.suspend = "/spec/suspend"_json_pointer,
//                         .templates = {"/spec/replicatedJobs/0/template/spec/template"_json_pointer}};
//   absl::StatusOr<nlohmann::json> start = StartPatchFor(jobset, layout, infos, false);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_TEMPLATE_PATCHES_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_TEMPLATE_PATCHES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/podset_info.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// Where a kind keeps its suspend switch and its pod sets' templates.
struct TemplateLayout {
  // A boolean field (true: suspended), e.g. /spec/suspend or /spec/runPolicy/suspend.
  nlohmann::json::json_pointer suspend;
  // One per pod set, in the Workload's order.
  std::vector<nlohmann::json::json_pointer> templates;
};

// The merge patch that unsuspends `object` with infos[i] merged into templates[i].
// FAILED_PRECONDITION "invalid podset infos: expecting <n> podset, got <m>", or a merge conflict
// (Kueue's texts).
absl::StatusOr<nlohmann::json> StartPatchFor(const nlohmann::json& object,
                                             const TemplateLayout& layout,
                                             const std::vector<PodSetInfo>& infos, bool elastic);

// The merge patch that suspends `object` and restores its templates to `workload`'s pod sets
// (null, or of another number of pod sets: only suspends; a template absent from `object` is
// left absent). An empty object when nothing changes.
nlohmann::json StopPatchFor(const nlohmann::json& object, const TemplateLayout& layout,
                            const v1::Workload* workload);

// Restores `pod_template` (JSON) to `stored`'s labels, annotations, nodeSelector, tolerations and
// scheduling gates, leaving no empty map behind.
void RestoreTemplate(const v1::PodTemplate& stored, nlohmann::json* pod_template);

// The JSON merge patch (RFC 7386) that turns `from` into `to`: members that differ, removed ones
// as null; arrays and scalars whole. An empty object when they are equal.
nlohmann::json MergePatchBetween(const nlohmann::json& from, const nlohmann::json& to);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_TEMPLATE_PATCHES_H_
