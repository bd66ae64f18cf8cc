#include "clients/shim/integrations/job/job_integration.h"

#include <utility>

#include "clients/shim/integrations/job/job_webhook.h"
#include "clients/shim/framework/elastic_pods.h"
#include "clients/shim/integrations/job/job_run.h"
#include "clients/shim/integrations/job/job_multikueue.h"
#include "clients/shim/integrations/job/job_status.h"
#include "clients/shim/integrations/job/job_workload.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

class Job : public GenericJob {
 public:
  Job(const nlohmann::json& object, const FrameworkOptions& options)
      : object_(object), options_(options) {}

  const nlohmann::json& Object() const override { return object_; }
  bool IsSuspended() const override { return shim::IsSuspended(object_); }
  bool IsActive() const override { return JobActive(object_); }
  std::optional<JobFinish> Finished() const override { return JobFinished(object_); }
  bool PodsReady() const override { return JobPodsReady(object_); }
  bool IsElastic() const override {
    return options_.elastic_jobs &&
           Str(Field(Field(object_, "metadata"), "annotations"), kElasticJobAnnotation) == "true";
  }

  absl::StatusOr<v1::Workload> NewWorkload() const override {
    JobWorkloadOptions options;
    options.partial_admission = options_.partial_admission;
    options.elastic_jobs = options_.elastic_jobs;
    options.label_keys_to_copy = options_.label_keys_to_copy;
    return WorkloadForJob(object_, options);
  }
  absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const override {
    const nlohmann::json& t = Field(Field(object_, "spec"), "template");
    return std::vector<nlohmann::json>{t.is_null() ? nlohmann::json::object() : t};
  }
  // The one template's lists (not a list per pod set): the digest Workloads have carried since
  // the Job integration came first.
  absl::StatusOr<std::string> ContainersDigest() const override {
    const nlohmann::json& t = Field(Field(object_, "spec"), "template");
    return ContainersDigestOf(t.is_null() ? nlohmann::json::object() : t);
  }
  absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>& infos,
                                            bool elastic) const override {
    return shim::StartPatch(object_, infos, elastic);
  }
  StopPlan PlanStop(const v1::Workload* workload) const override {
    return shim::PlanStop(object_, workload);
  }
  std::map<std::string, int> ReclaimablePods() const override {
    const int n = JobReclaimablePods(object_);
    if (n <= 0) return {};
    return {{"main", n}};
  }
  std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& remote) const override {
    return shim::MirrorStatusPatch(object_, remote);
  }
  std::optional<nlohmann::json> ScalePatch(const v1::Workload& workload) const override {
    if (workload.spec().pod_sets_size() == 0) return std::nullopt;
    const int32_t count = workload.spec().pod_sets(0).count();
    const nlohmann::json& parallelism = Field(Field(object_, "spec"), "parallelism");
    if ((parallelism.is_number_integer() ? parallelism.get<int32_t>() : 1) == count) {
      return std::nullopt;
    }
    return nlohmann::json{{"spec", {{"parallelism", count}}}};
  }

 private:
  const nlohmann::json& object_;
  const FrameworkOptions& options_;
};

}  // namespace

std::unique_ptr<Integration> NewJobIntegration() {
  auto integration = std::make_unique<Integration>(
      IntegrationInfo{
          .name = "batch/job",
          .api_version = "batch/v1",
          .kind = "Job",
          .resource = "jobs",
          .short_name = "job",
          .controller = kJobController,
          // Only the Job controller's pods: those of elastic Jobs are ungated by the shim.
          .pods_path = "/api/v1/pods?labelSelector=batch.kubernetes.io/job-name",
      },
      [](const nlohmann::json& object, Related,
         const FrameworkOptions& options) -> std::unique_ptr<GenericJob> {
        return std::make_unique<Job>(object, options);  // a Job's status counts its pods
      },
      // Only the pods an elastic Job's slices gate (the others are the Job controller's).
      [](const nlohmann::json& pod) -> std::string {
        if (!HasElasticGate(pod) && !Field(Field(pod, "metadata"), "annotations")
                                         .contains("kueue.x-k8s.io/workload-slice-name")) {
          return "";
        }
        return ControllerKeyOfPod(pod, "", "Job");
      },
      // The Job's rules run whether or not batch/job is enabled (docs/shim.md).
      [](JobWebhookContext& context, const JobWebhookOptions& options, bool) {
        return JobWebhook(context, options);
      });
  integration->SetMultiKueue(JobMultiKueueAdapter());
  return integration;
}

}  // namespace admitd::shim
