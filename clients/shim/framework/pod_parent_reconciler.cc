#include "clients/shim/framework/pod_parent_reconciler.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {

PodParentReconciler::PodParentReconciler(const Integration& integration, const KubeApi& kube,
                                         const ObjectCache& objects, const ObjectCache& pods,
                                         FrameworkOptions options)
    : integration_(integration),
      kube_(kube),
      objects_(objects),
      pods_(pods),
      options_(std::move(options)) {}

absl::Status PodParentReconciler::Reconcile(const std::string& key) {
  std::optional<nlohmann::json> owner = objects_.Get(key);
  if (!owner || !Field(Field(*owner, "metadata"), "deletionTimestamp").is_null()) {
    return absl::OkStatus();
  }
  if (options_.excluded_namespaces.count(Str(Field(*owner, "metadata"), "namespace"))) {
    return absl::OkStatus();
  }
  absl::Status first = absl::OkStatus();
  for (const nlohmann::json& pod : pods_.ControlledBy(Str(Field(*owner, "metadata"), "uid"))) {
    std::optional<nlohmann::json> patch = integration_.pod_patch()(pod, *owner, options_);
    if (!patch) continue;
    const nlohmann::json& meta = Field(pod, "metadata");
    absl::StatusOr<nlohmann::json> done = kube_.Patch(
        absl::StrCat("/api/v1/namespaces/", Str(meta, "namespace"), "/pods/", Str(meta, "name")),
        *patch);
    if (done.ok()) {
      ++patched_;
    } else if (done.status().code() != absl::StatusCode::kNotFound && first.ok()) {
      first = done.status();  // the others are still tried
    }
  }
  return first;
}

}  // namespace admitd::shim
