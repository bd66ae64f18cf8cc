#include "clients/shim/integrations/statefulset/statefulset_pods.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "common/workload_names.h"

namespace admitd::shim {
namespace {

const nlohmann::json& Meta(const nlohmann::json& object) { return Field(object, "metadata"); }

std::string Label(const nlohmann::json& object, const char* key) {
  return Str(Field(Meta(object), "labels"), key);
}

}  // namespace

std::string StatefulSetGroupName(const nlohmann::json& statefulset) {
  return GeneratedWorkloadName(kStatefulSetKind, "apps", Str(Meta(statefulset), "name"),
                               Str(Meta(statefulset), "uid"), "");
}

std::optional<nlohmann::json> StatefulSetPodPatch(const nlohmann::json& pod,
                                                  const nlohmann::json& statefulset,
                                                  const FrameworkOptions& options) {
  const nlohmann::json& meta = Meta(pod);
  if (Str(Field(meta, "annotations"), kPodSuspendingParentAnnotation) != kStatefulSetFramework) {
    return std::nullopt;
  }
  const std::string phase = Str(Field(pod, "status"), "phase");
  if (phase == "Succeeded" || phase == "Failed" || !Field(meta, "deletionTimestamp").is_null()) {
    return std::nullopt;
  }
  const std::string queue = Label(statefulset, kQueueNameLabel);
  const std::string group = StatefulSetGroupName(statefulset);
  nlohmann::json labels = nlohmann::json::object();
  nlohmann::json annotations = nlohmann::json::object();
  if (Label(pod, kGroupNameLabel) == group) {
    if (queue.empty() || Label(pod, kQueueNameLabel) == queue) return std::nullopt;
    labels[kQueueNameLabel] = queue;
  } else {
    if (queue.empty() && !options.manage_jobs_without_queue_name) return std::nullopt;
    labels[kManagedLabel] = "true";
    if (!queue.empty()) labels[kQueueNameLabel] = queue;
    if (const std::string priority = Label(statefulset, kPriorityClassLabel); !priority.empty()) {
      labels[kPriorityClassLabel] = priority;
    }
    labels[kGroupNameLabel] = group;
    labels[kPrebuiltWorkloadKey] = group;
    annotations[kGroupTotalCountAnnotation] =
        absl::StrCat(IntOr(Field(Field(statefulset, "spec"), "replicas"), 1));
    annotations[kGroupFastAdmissionAnnotation] = "true";
    annotations[kGroupServingAnnotation] = "true";
    annotations[kGroupPodIndexLabelAnnotation] = kStatefulSetPodIndexLabel;
    annotations[kRoleHashAnnotation] = kStatefulSetPodSet;
  }
  nlohmann::json patch_meta = {{"resourceVersion", Str(meta, "resourceVersion")},
                               {"labels", labels}};
  if (!annotations.empty()) patch_meta["annotations"] = annotations;
  return nlohmann::json{{"metadata", patch_meta}};
}

}  // namespace admitd::shim
