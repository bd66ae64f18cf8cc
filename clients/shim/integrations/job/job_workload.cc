#include "clients/shim/integrations/job/job_workload.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/framework/workload_builder.h"

namespace admitd::shim {
absl::StatusOr<v1::Workload> WorkloadForJob(const nlohmann::json& job,
                                            const JobWorkloadOptions& options) {
  const nlohmann::json meta = job.value("metadata", nlohmann::json::object());
  const nlohmann::json annotations = meta.value("annotations", nlohmann::json::object());
  const nlohmann::json spec = job.value("spec", nlohmann::json::object());
  const bool elastic =
      options.elastic_jobs && Str(annotations, "kueue.x-k8s.io/elastic-job") == "true";

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

  return BuildWorkload(job, "batch/v1", "Job", nlohmann::json::array({pod_set}),
                       {.elastic = elastic, .label_keys_to_copy = options.label_keys_to_copy});
}

}  // namespace admitd::shim
