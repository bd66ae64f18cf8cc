#include "clients/shim/integrations/job/job_run.h"

#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {

absl::StatusOr<nlohmann::json> StartPatch(const nlohmann::json& job,
                                          const std::vector<PodSetInfo>& infos, bool elastic) {
  if (infos.size() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("invalid podset infos: expecting 1 podset, got ", infos.size()));
  }
  const nlohmann::json spec = job.value("spec", nlohmann::json::object());
  nlohmann::json pod_template = spec.value("template", nlohmann::json::object());
  if (absl::Status s = MergeIntoTemplate(infos[0], elastic, &pod_template); !s.ok()) return s;
  nlohmann::json patch = {{"spec", {{"suspend", false}, {"template", pod_template}}}};
  const nlohmann::json annotations =
      job.value("metadata", nlohmann::json::object()).value("annotations", nlohmann::json::object());
  if (annotations.contains("kueue.x-k8s.io/job-min-parallelism")) {
    patch["spec"]["parallelism"] = infos[0].count;
    if (annotations.value("kueue.x-k8s.io/job-completions-equal-parallelism", "") == "true") {
      patch["spec"]["completions"] = infos[0].count;
    }
  }
  return patch;
}

bool IsSuspended(const nlohmann::json& job) {
  const nlohmann::json annotations =
      job.value("metadata", nlohmann::json::object()).value("annotations", nlohmann::json::object());
  return job.value("spec", nlohmann::json::object()).value("suspend", false) &&
         annotations.value("kueue.x-k8s.io/stopping", "") != "true";
}

StopPlan PlanStop(const nlohmann::json& job, const v1::Workload* workload) {
  StopPlan plan;
  const nlohmann::json meta = job.value("metadata", nlohmann::json::object());
  const nlohmann::json annotations = meta.value("annotations", nlohmann::json::object());
  const nlohmann::json spec = job.value("spec", nlohmann::json::object());
  if (!spec.value("suspend", false)) {
    plan.suspend = {{"metadata", {{"annotations", {{"kueue.x-k8s.io/stopping", "true"}}}}},
                    {"spec", {{"suspend", true}}}};
  }
  const nlohmann::json& start_time = Field(Field(job, "status"), "startTime");
  if (!start_time.is_null()) plan.status = {{"status", {{"startTime", nullptr}}}};
  if (workload == nullptr) {
    plan.restore = {{"metadata", {{"annotations", {{"kueue.x-k8s.io/stopping", nullptr}}}}}};
    return plan;
  }

  nlohmann::json restore_template = nlohmann::json::object();
  if (workload->spec().pod_sets_size() > 0) {
    // The labels the Job controller put on the template stay.
    restore_template = RestoreTemplatePatch(
        spec.value("template", nlohmann::json::object()), workload->spec().pod_sets(0).template_(),
        {"job-name", "controller-uid", "batch.kubernetes.io/job-name",
         "batch.kubernetes.io/controller-uid"});
  }
  plan.restore = {{"metadata", {{"annotations", {{"kueue.x-k8s.io/stopping", nullptr}}}}},
                  {"spec", {{"template", restore_template}}}};
  if (annotations.contains("kueue.x-k8s.io/job-min-parallelism") &&
      workload->spec().pod_sets_size() > 0) {
    const int32_t original = workload->spec().pod_sets(0).count();
    plan.restore["spec"]["parallelism"] = original;
    if (annotations.value("kueue.x-k8s.io/job-completions-equal-parallelism", "") == "true") {
      plan.restore["spec"]["completions"] = original;
    }
  }
  return plan;
}

}  // namespace admitd::shim
