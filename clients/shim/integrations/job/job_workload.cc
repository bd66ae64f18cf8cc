#include "clients/shim/integrations/job/job_workload.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/manifest/manifest.h"
#include "common/workload_names.h"

namespace admitd::shim {
absl::StatusOr<v1::Workload> WorkloadForJob(const nlohmann::json& job,
                                            const JobWorkloadOptions& options) {
  const nlohmann::json meta = job.value("metadata", nlohmann::json::object());
  const nlohmann::json labels = meta.value("labels", nlohmann::json::object());
  const nlohmann::json annotations = meta.value("annotations", nlohmann::json::object());
  const nlohmann::json spec = job.value("spec", nlohmann::json::object());
  const std::string name = Str(meta, "name"), uid = Str(meta, "uid");
  if (name.empty() || uid.empty()) {
    return absl::InvalidArgumentError("metadata.name and metadata.uid are required");
  }
  const bool elastic =
      options.elastic_jobs && Str(annotations, "kueue.x-k8s.io/elastic-job") == "true";
  std::string extra;
  if (elastic) extra = absl::StrCat(meta.value("generation", 1));

  // The pod set (§2.2): parallelism capped by completions; the template without the labels the
  // Job controller adds.
  int64_t count = spec.value("parallelism", 1);
  if (spec.contains("completions") && spec["completions"].is_number_integer()) {
    count = std::min<int64_t>(count, spec["completions"].get<int64_t>());
  }
  nlohmann::json tmpl = spec.value("template", nlohmann::json::object());
  if (tmpl.contains("metadata") && tmpl["metadata"].contains("labels")) {
    for (const char* l : {"job-name", "controller-uid", "batch.kubernetes.io/controller-uid"}) {
      tmpl["metadata"]["labels"].erase(l);
    }
  }
  nlohmann::json pod_set = {{"name", "main"}, {"count", count}, {"template", tmpl}};
  if (options.partial_admission) {
    int64_t min_count = 0;
    if (absl::SimpleAtoi(Str(annotations, "kueue.x-k8s.io/job-min-parallelism"), &min_count) &&
        min_count > 0) {
      pod_set["minCount"] = min_count;
    }
  }

  // The Workload as a Kueue manifest, read by the same reader as every other manifest.
  nlohmann::json wl_labels = {{"kueue.x-k8s.io/job-uid", uid}};
  for (const std::string& k : options.label_keys_to_copy) {
    if (labels.contains(k)) wl_labels[k] = labels[k];
  }
  nlohmann::json wl_annotations = nlohmann::json::object();
  for (const auto& [k, v] : annotations.items()) {
    if (absl::StartsWith(k, "provreq.kueue.x-k8s.io/")) wl_annotations[k] = v;
  }
  const std::string wl_name = GeneratedWorkloadName("Job", "batch", name, uid, extra);
  if (elastic) {
    // The first slice names the chain (Kueue's prepareWorkloadSlice); admitd gives every later
    // slice the same name.
    wl_annotations["kueue.x-k8s.io/elastic-job"] = "true";
    wl_annotations["kueue.x-k8s.io/workload-slice-name"] = wl_name;
  }
  nlohmann::json wl_spec = {{"queueName", Str(labels, "kueue.x-k8s.io/queue-name")},
                            {"podSets", nlohmann::json::array({pod_set})}};
  int64_t max_exec = 0;
  if (absl::SimpleAtoi(Str(labels, "kueue.x-k8s.io/max-exec-time-seconds"), &max_exec) &&
      max_exec > 0) {
    wl_spec["maximumExecutionTimeSeconds"] = max_exec;
  }
  if (const std::string wpc = Str(labels, "kueue.x-k8s.io/priority-class"); !wpc.empty()) {
    wl_spec["priorityClassRef"] = {
        {"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", wpc}};
  }
  const nlohmann::json doc = {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata",
       {{"name", wl_name},
        {"namespace", Str(meta, "namespace").empty() ? "default" : Str(meta, "namespace")},
        {"labels", wl_labels},
        {"annotations", wl_annotations},
        {"ownerReferences",
         {{{"apiVersion", "batch/v1"},
           {"kind", "Job"},
           {"name", name},
           {"uid", uid},
           {"controller", true},
           {"blockOwnerDeletion", true}}}}}},
      {"spec", wl_spec}};
  absl::StatusOr<std::vector<manifest::Manifest>> parsed =
      manifest::ParseManifests(doc.dump(), absl::StrCat("job ", name));
  if (!parsed.ok()) return parsed.status();
  return (*parsed)[0].workload;
}

}  // namespace admitd::shim
