#include "clients/shim/integrations/raycluster/raycluster_integration.h"

#include <utility>

#include "clients/shim/framework/multikueue.h"
#include "clients/shim/integrations/raycluster/raycluster_webhook.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/integrations/raycluster/raycluster_workload.h"

namespace admitd::shim {
namespace {

class RayCluster : public GenericJob {
 public:
  RayCluster(const nlohmann::json& object, std::vector<nlohmann::json> pods,
             const FrameworkOptions& options)
      : object_(object), pods_(std::move(pods)), options_(options) {}

  const nlohmann::json& Object() const override { return object_; }
  bool IsSuspended() const override { return RayClusterSuspended(object_); }
  bool IsActive() const override { return RayClusterActive(object_, pods_); }
  std::optional<JobFinish> Finished() const override { return std::nullopt; }
  // Kueue's PodsReady() of a RayCluster: its state is ready.
  bool PodsReady() const override { return Str(Field(object_, "status"), "state") == "ready"; }
  bool IsElastic() const override { return RayClusterElastic(object_, options_.elastic_jobs); }

  absl::StatusOr<v1::Workload> NewWorkload() const override {
    RayClusterWorkloadOptions options;
    options.elastic_jobs = options_.elastic_jobs;
    options.label_keys_to_copy = options_.label_keys_to_copy;
    return WorkloadForRayCluster(object_, options);
  }
  absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const override {
    absl::StatusOr<nlohmann::json> pod_sets = RayClusterPodSets(object_);
    if (!pod_sets.ok()) return pod_sets.status();
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& ps : *pod_sets) out.push_back(ps["template"]);
    return out;
  }
  absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>& infos,
                                            bool elastic) const override {
    return RayClusterStartPatch(object_, infos, elastic);
  }
  // One write (Kueue's generic stop): suspended with the templates restored, or, once
  // suspended, only the templates.
  std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& remote) const override {
    return MirrorRemoteStatus(object_, remote);
  }
  StopPlan PlanStop(const v1::Workload* workload) const override {
    StopPlan plan;
    nlohmann::json patch = RayClusterStopPatch(object_, workload);
    if (patch.empty()) return plan;
    (IsSuspended() ? plan.restore : plan.suspend) = std::move(patch);
    return plan;
  }

 private:
  const nlohmann::json& object_;
  const std::vector<nlohmann::json> pods_;
  const FrameworkOptions& options_;
};

}  // namespace

std::unique_ptr<Integration> NewRayClusterIntegration() {
  auto integration = std::make_unique<Integration>(
      IntegrationInfo{
          .name = "ray.io/raycluster",
          .api_version = kRayClusterApiVersion,
          .kind = kRayClusterKind,
          .resource = "rayclusters",
          .short_name = "raycluster",
          .controller = kRayClusterController,
          // KubeRay's pods, which carry the label ray.io/cluster.
          .pods_path = "/api/v1/pods?labelSelector=ray.io%2Fcluster",
          .custom_resource = true,
      },
      [](const nlohmann::json& object, std::vector<nlohmann::json> pods,
         const FrameworkOptions& options) -> std::unique_ptr<GenericJob> {
        return std::make_unique<RayCluster>(object, std::move(pods), options);
      },
      // Every pod of a cluster: the elastic ones are ungated, and a stopped cluster's quota goes
      // back once they are gone.
      [](const nlohmann::json& pod) {
        return ControllerKeyOfPod(pod, kRayClusterApiVersion, kRayClusterKind);
      },
      RayClusterWebhook);
  integration->SetMultiKueue({});  // spec.managedBy, spec.suspend
  return integration;
}

}  // namespace admitd::shim
