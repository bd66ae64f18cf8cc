#include "clients/shim/framework/serving_job.h"

#include <utility>
#include <vector>

#include "clients/shim/framework/elastic_pods.h"
#include "clients/shim/framework/workload_builder.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

bool Terminated(const nlohmann::json& pod) {
  const std::string phase = Str(Field(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed" ||
         !Field(Field(pod, "metadata"), "deletionTimestamp").is_null();
}

bool Ready(const nlohmann::json& pod) {
  for (const nlohmann::json& c : ArrayOr(Field(Field(pod, "status"), "conditions"))) {
    if (Str(c, "type") == "Ready") return Str(c, "status") == "True";
  }
  return false;
}

class ServingJob : public GenericJob {
 public:
  ServingJob(const std::string& api_version, const std::string& kind, const nlohmann::json& object,
             Related related, const FrameworkOptions& options)
      : api_version_(api_version),
        kind_(kind),
        object_(object),
        related_(std::move(related)),
        options_(options) {}

  const nlohmann::json& Object() const override { return object_; }
  // Not elastic: the pod integration's (its pods are admitted one by one or as a group).
  bool Skip() const override { return !IsElastic(); }
  bool IsSuspended() const override { return false; }
  // A pod runs that its admission let go.
  bool IsActive() const override {
    for (const nlohmann::json& pod : related_.pods) {
      if (!Terminated(pod) && !HasElasticGate(pod)) return true;
    }
    return false;
  }
  std::optional<JobFinish> Finished() const override { return std::nullopt; }  // serving
  bool PodsReady() const override {
    int64_t ready = 0;
    for (const nlohmann::json& pod : related_.pods) ready += !Terminated(pod) && Ready(pod);
    return ready >= Replicas();
  }
  bool IsElastic() const override {
    return options_.elastic_jobs &&
           Str(Field(Field(object_, "metadata"), "annotations"), kElasticJobAnnotation) == "true";
  }
  bool StartsByUngating() const override { return true; }

  absl::StatusOr<v1::Workload> NewWorkload() const override {
    const nlohmann::json pod_sets = nlohmann::json::array(
        {{{"name", kServingPodSet}, {"count", Replicas()}, {"template", Template()}}});
    return BuildWorkload(object_, api_version_, kind_, pod_sets,
                         {.elastic = true, .label_keys_to_copy = options_.label_keys_to_copy});
  }
  absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const override {
    return std::vector<nlohmann::json>{Template()};
  }
  // Never asked for: the object is never suspended.
  absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>&, bool) const override {
    return nlohmann::json::object();
  }
  StopPlan PlanStop(const v1::Workload*) const override {
    StopPlan plan;
    for (const nlohmann::json& pod : related_.pods) {
      if (!Terminated(pod) && !HasElasticGate(pod)) plan.delete_pods.push_back(pod);
    }
    return plan;
  }

 private:
  int64_t Replicas() const { return IntOr(Field(Field(object_, "spec"), "replicas"), 1); }
  nlohmann::json Template() const { return ObjectOr(Field(Field(object_, "spec"), "template")); }

  const std::string& api_version_;
  const std::string& kind_;
  const nlohmann::json& object_;
  const Related related_;
  const FrameworkOptions& options_;
};

}  // namespace

std::unique_ptr<GenericJob> NewServingJob(const std::string& api_version, const std::string& kind,
                                          const nlohmann::json& object, Related related,
                                          const FrameworkOptions& options) {
  return std::make_unique<ServingJob>(api_version, kind, object, std::move(related), options);
}

}  // namespace admitd::shim
