#include "clients/shim/integrations/jobset/jobset_integration.h"

#include <utility>

#include "clients/shim/framework/workload_builder.h"
#include "clients/shim/integrations/jobset/jobset_webhook.h"
#include "clients/shim/integrations/jobset/jobset_workload.h"

namespace admitd::shim {
namespace {

class JobSet : public GenericJob {
 public:
  JobSet(const nlohmann::json& object, const FrameworkOptions& options)
      : object_(object), options_(options) {}

  const nlohmann::json& Object() const override { return object_; }
  bool IsSuspended() const override { return JobSetSuspended(object_); }
  bool IsActive() const override { return JobSetActive(object_); }
  std::optional<JobFinish> Finished() const override { return JobSetFinished(object_); }
  bool PodsReady() const override { return JobSetPodsReady(object_); }
  // The webhook refuses the elastic-job annotation on a JobSet (as Kueue does).
  bool IsElastic() const override { return false; }

  absl::StatusOr<v1::Workload> NewWorkload() const override {
    absl::StatusOr<nlohmann::json> pod_sets = JobSetPodSets(object_);
    if (!pod_sets.ok()) return pod_sets.status();
    return BuildWorkload(object_, kJobSetApiVersion, kJobSetKind, *pod_sets,
                         {.label_keys_to_copy = options_.label_keys_to_copy});
  }
  absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const override {
    absl::StatusOr<nlohmann::json> pod_sets = JobSetPodSets(object_);
    if (!pod_sets.ok()) return pod_sets.status();
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& ps : *pod_sets) out.push_back(ps["template"]);
    return out;
  }
  absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>& infos,
                                            bool elastic) const override {
    return StartPatchFor(object_, JobSetLayout(object_), infos, elastic);
  }
  // Suspended and restored in one write (kueue#2691).
  StopPlan PlanStop(const v1::Workload* workload) const override {
    StopPlan plan;
    nlohmann::json patch = StopPatchFor(object_, JobSetLayout(object_), workload);
    if (patch.empty()) return plan;
    (IsSuspended() ? plan.restore : plan.suspend) = std::move(patch);
    return plan;
  }
  std::map<std::string, int> ReclaimablePods() const override {
    return JobSetReclaimablePods(object_);
  }

 private:
  const nlohmann::json& object_;
  const FrameworkOptions& options_;
};

}  // namespace

std::unique_ptr<Integration> NewJobSetIntegration() {
  return std::make_unique<Integration>(
      IntegrationInfo{
          .name = "jobset.x-k8s.io/jobset",
          .api_version = kJobSetApiVersion,
          .kind = kJobSetKind,
          .resource = "jobsets",
          .short_name = "jobset",
          .controller = kJobSetController,
          .pods_path = "",  // its child Jobs count its pods
          .custom_resource = true,
      },
      [](const nlohmann::json& object, std::vector<nlohmann::json>,
         const FrameworkOptions& options) -> std::unique_ptr<GenericJob> {
        return std::make_unique<JobSet>(object, options);
      },
      [](const nlohmann::json&) { return std::string(); }, JobSetWebhook);
}

}  // namespace admitd::shim
