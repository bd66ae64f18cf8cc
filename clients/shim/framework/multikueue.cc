#include "clients/shim/framework/multikueue.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/template_patches.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

const nlohmann::json& At(const nlohmann::json& object, const std::vector<std::string>& path) {
  const nlohmann::json* v = &object;
  for (const std::string& key : path) v = &Field(*v, key);
  return *v;
}

// `path` relative to spec (the switches are spec fields), as a JSON pointer into the spec.
nlohmann::json::json_pointer InSpec(const std::vector<std::string>& path) {
  nlohmann::json::json_pointer p;
  for (size_t i = 1; i < path.size(); ++i) p /= path[i];
  return p;
}

}  // namespace

bool ManagedByMultiKueue(const nlohmann::json& object, const MultiKueueAdapter& adapter) {
  return At(object, adapter.managed_by) == kMultiKueueControllerName;
}

std::string PrebuiltWorkloadName(const nlohmann::json& object) {
  const nlohmann::json& meta = Field(object, "metadata");
  if (std::string a = Str(Field(meta, "annotations"), kPrebuiltWorkloadKey); !a.empty()) return a;
  return Str(Field(meta, "labels"), kPrebuiltWorkloadKey);
}

bool IsMultiKueueWorkerJob(const nlohmann::json& object) {
  return !Str(Field(Field(object, "metadata"), "labels"), kMultiKueueOriginLabel).empty() &&
         !PrebuiltWorkloadName(object).empty();
}

v1::RemoteJob RemoteJobFor(const nlohmann::json& object, const MultiKueueAdapter& adapter) {
  const nlohmann::json& meta = Field(object, "metadata");
  const std::string api_version = Str(object, "apiVersion"), kind = Str(object, "kind");
  const nlohmann::json manifest = {{"apiVersion", api_version},
                                   {"kind", kind},
                                   {"metadata",
                                    {{"name", Str(meta, "name")},
                                     {"namespace", Str(meta, "namespace")},
                                     {"labels", ObjectOr(Field(meta, "labels"))},
                                     {"annotations", ObjectOr(Field(meta, "annotations"))}}},
                                   {"spec", ObjectOr(Field(object, "spec"))}};
  v1::RemoteJob out;
  out.set_api_version(api_version);
  out.set_kind(kind);
  const nlohmann::json& managed_by = At(object, adapter.managed_by);
  out.set_managed_by(managed_by.is_string() ? managed_by.get<std::string>() : "");
  out.set_manifest(manifest.dump());
  return out;
}

std::string RemoteJobName(const v1::Workload& copy) {
  const nlohmann::json manifest =
      nlohmann::json::parse(copy.remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  return Str(Field(manifest, "metadata"), "name");
}

absl::StatusOr<nlohmann::json> WorkerObjectFor(const v1::Workload& copy,
                                               const std::string& api_version,
                                               const std::string& kind,
                                               const MultiKueueAdapter& adapter) {
  const nlohmann::json manifest =
      nlohmann::json::parse(copy.remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  if (Str(manifest, "apiVersion") != api_version || Str(manifest, "kind") != kind ||
      !Field(manifest, "spec").is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "remoteJob.manifest: Invalid value: must be a ", api_version, " ", kind, " with a spec"));
  }
  auto origin = copy.metadata().labels().find(kMultiKueueOriginLabel);
  if (origin == copy.metadata().labels().end()) {
    return absl::InvalidArgumentError("the copy has no kueue.x-k8s.io/multikueue-origin label");
  }
  const nlohmann::json& meta = Field(manifest, "metadata");
  nlohmann::json labels = ObjectOr(Field(meta, "labels"));
  nlohmann::json annotations = ObjectOr(Field(meta, "annotations"));
  labels[kMultiKueueOriginLabel] = origin->second;
  labels.erase(kPrebuiltWorkloadKey);
  annotations[kPrebuiltWorkloadKey] = copy.metadata().name();
  annotations.erase("kueue.x-k8s.io/stopping");
  nlohmann::json spec = manifest["spec"];
  if (const nlohmann::json::json_pointer managed_by = InSpec(adapter.managed_by);
      spec.contains(managed_by)) {
    spec.at(managed_by.parent_pointer()).erase(managed_by.back());
  }
  spec[InSpec(adapter.suspend)] = true;
  if (adapter.clean_spec) adapter.clean_spec(&spec);
  return nlohmann::json{{"apiVersion", api_version},
                        {"kind", kind},
                        {"metadata",
                         {{"name", Str(meta, "name")},
                          {"namespace", copy.metadata().namespace_()},
                          {"labels", std::move(labels)},
                          {"annotations", std::move(annotations)}}},
                        {"spec", std::move(spec)}};
}

std::optional<nlohmann::json> MirrorRemoteStatus(const nlohmann::json& local,
                                                 const nlohmann::json& remote_status) {
  if (!remote_status.is_object()) return std::nullopt;
  const nlohmann::json current = ObjectOr(Field(local, "status"));
  if (current == remote_status) return std::nullopt;
  return nlohmann::json{{"status", MergePatchBetween(current, remote_status)}};
}

}  // namespace admitd::shim
