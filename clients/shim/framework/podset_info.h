// Starting a job on its admission (job framework §1.9, Job §2.3): the "podset info" Kueue derives
// from an admitted Workload and its ResourceFlavors (count; the flavors' node labels and
// tolerations; the podset, local-queue and cluster-queue labels; the workload annotation), its
// merge into a pod template, with Kueue's conflict errors, and the template restored on a stop.
// Each integration applies them to its templates (a Job's in integrations/job/job_run.h).
//
//   auto infos = PodSetInfos(workload, flavors);
//   MergeIntoTemplate((*infos)[0], /*elastic=*/false, &pod_template);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_PODSET_INFO_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_PODSET_INFO_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct PodSetInfo {
  std::string name;
  int32_t count = 0;
  std::map<std::string, std::string> node_selector;
  std::vector<nlohmann::json> tolerations;  // Kubernetes Toleration objects
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// One per pod set of the Workload's admission, in order. FAILED_PRECONDITION ("invalid podset
// infos: expecting <n> podset, got <m>") when the admission does not match the pod sets.
absl::StatusOr<std::vector<PodSetInfo>> PodSetInfos(
    const v1::Workload& workload, const std::map<std::string, v1::ResourceFlavor>& flavors);

// Merges `info` into a pod template (JSON): labels, annotations and nodeSelector keys are added,
// and a key already there with another value is a conflict (FAILED_PRECONDITION, Kueue's text);
// tolerations are appended unless an equal one is there. For an elastic Workload the
// workload-slice-name and workload annotations are overwritten instead.
absl::Status MergeIntoTemplate(const PodSetInfo& info, bool elastic, nlohmann::json* pod_template);

// The merge patch that makes a pod template's labels, annotations, nodeSelector, tolerations and
// schedulingGates the ones stored in a Workload's pod set (Kueue's RestorePodSpec: replaced, not
// merged, so whatever an admission added goes), keeping the labels named in `keep_labels`.
nlohmann::json RestoreTemplatePatch(const nlohmann::json& pod_template,
                                    const v1::PodTemplate& stored,
                                    const std::set<std::string>& keep_labels = {});

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_PODSET_INFO_H_
