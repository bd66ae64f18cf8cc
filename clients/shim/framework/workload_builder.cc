#include "clients/shim/framework/workload_builder.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/kueue_keys.h"
#include "clients/shim/kube/json_fields.h"
#include "common/manifest/manifest.h"
#include "common/workload_names.h"

namespace admitd::shim {

absl::StatusOr<v1::Workload> BuildWorkload(const nlohmann::json& object,
                                           const std::string& api_version,
                                           const std::string& kind,
                                           const nlohmann::json& pod_sets,
                                           const WorkloadBuildOptions& options) {
  const nlohmann::json& meta = Field(object, "metadata");
  const nlohmann::json& labels = Field(meta, "labels");
  const nlohmann::json& annotations = Field(meta, "annotations");
  const std::string name = Str(meta, "name"), uid = Str(meta, "uid");
  if (name.empty() || uid.empty()) {
    return absl::InvalidArgumentError("metadata.name and metadata.uid are required");
  }
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const nlohmann::json& generation = Field(meta, "generation");
  std::string extra;
  if (options.elastic) {
    extra = !options.extra.empty()
                ? options.extra
                : absl::StrCat(generation.is_number_integer() ? generation.get<int64_t>() : 1);
  }

  nlohmann::json wl_labels = {{"kueue.x-k8s.io/job-uid", uid}};
  for (const std::string& k : options.label_keys_to_copy) {
    if (labels.is_object() && labels.contains(k)) wl_labels[k] = labels[k];
  }
  nlohmann::json wl_annotations = nlohmann::json::object();
  if (annotations.is_object()) {
    for (const auto& [k, v] : annotations.items()) {
      if (absl::StartsWith(k, "provreq.kueue.x-k8s.io/")) wl_annotations[k] = v;
    }
  }
  const std::string wl_name = GeneratedWorkloadName(kind, group, name, uid, extra);
  if (options.elastic) {
    // The first slice names the chain (Kueue's prepareWorkloadSlice); admitd gives every later
    // slice the same name.
    wl_annotations[kElasticJobAnnotation] = "true";
    wl_annotations["kueue.x-k8s.io/workload-slice-name"] = wl_name;
  }
  nlohmann::json wl_spec = {{"queueName", Str(labels, kQueueNameLabel)}, {"podSets", pod_sets}};
  int64_t max_exec = 0;
  if (absl::SimpleAtoi(Str(labels, kMaxExecTimeLabel), &max_exec) && max_exec > 0) {
    wl_spec["maximumExecutionTimeSeconds"] = max_exec;
  }
  if (const std::string wpc = Str(labels, kPriorityClassLabel); !wpc.empty()) {
    wl_spec["priorityClassRef"] = {
        {"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", wpc}};
  }
  const std::string ns = Str(meta, "namespace").empty() ? "default" : Str(meta, "namespace");
  const nlohmann::json owner = {{"apiVersion", api_version}, {"kind", kind},
                                {"name", name},             {"uid", uid},
                                {"controller", true},       {"blockOwnerDeletion", true}};
  const nlohmann::json doc = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                              {"kind", "Workload"},
                              {"metadata",
                               {{"name", wl_name},
                                {"namespace", ns},
                                {"labels", wl_labels},
                                {"annotations", wl_annotations},
                                {"ownerReferences", nlohmann::json::array({owner})}}},
                              {"spec", wl_spec}};
  absl::StatusOr<std::vector<manifest::Manifest>> parsed = manifest::ParseManifests(
      doc.dump(), absl::StrCat(absl::AsciiStrToLower(kind), " ", name));
  if (!parsed.ok()) return parsed.status();
  return (*parsed)[0].workload;
}

}  // namespace admitd::shim
