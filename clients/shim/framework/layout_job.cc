#include "clients/shim/framework/layout_job.h"

#include <utility>
#include <vector>

#include "clients/shim/framework/multikueue.h"
#include "clients/shim/framework/workload_builder.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

class LayoutJob : public GenericJob {
 public:
  LayoutJob(const LayoutKind& kind, const nlohmann::json& object, Related related,
            const FrameworkOptions& options)
      : kind_(kind), object_(object), related_(std::move(related)), options_(options) {}

  const nlohmann::json& Object() const override { return object_; }
  bool IsSuspended() const override { return kind_.suspended(object_); }
  bool IsActive() const override {
    if (kind_.active(object_)) return true;
    if (!kind_.active_while_pods_run) return false;
    for (const nlohmann::json& pod : related_.pods) {
      const std::string phase = Str(Field(pod, "status"), "phase");
      if (phase != "Succeeded" && phase != "Failed") return true;
    }
    return false;
  }
  std::optional<JobFinish> Finished() const override { return kind_.finished(object_); }
  bool PodsReady() const override { return kind_.pods_ready(object_); }
  bool IsElastic() const override {
    return kind_.elastic && options_.elastic_jobs &&
           Str(Field(Field(object_, "metadata"), "annotations"), kElasticJobAnnotation) == "true";
  }
  bool Skip() const override { return kind_.skip && kind_.skip(object_); }
  bool IsOnHold() const override { return kind_.on_hold && kind_.on_hold(object_); }

  std::optional<nlohmann::json> PreparePatch() const override {
    if (!kind_.prepare || !IsElastic()) return std::nullopt;
    return kind_.prepare(object_, related_.children);
  }

  absl::StatusOr<v1::Workload> NewWorkload() const override {
    absl::StatusOr<nlohmann::json> pod_sets = kind_.pod_sets(object_);
    if (!pod_sets.ok()) return pod_sets.status();
    const bool elastic = IsElastic();
    if (elastic && kind_.live_counts) {
      if (absl::Status s = kind_.live_counts(object_, related_.children, &*pod_sets); !s.ok()) {
        return s;
      }
    }
    return BuildWorkload(object_, kind_.api_version, kind_.kind, *pod_sets,
                         {.elastic = elastic,
                          .extra = elastic && kind_.name_extra ? kind_.name_extra(object_) : "",
                          .label_keys_to_copy = options_.label_keys_to_copy});
  }
  absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const override {
    absl::StatusOr<nlohmann::json> pod_sets = kind_.pod_sets(object_);
    if (!pod_sets.ok()) return pod_sets.status();
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& ps : *pod_sets) out.push_back(ps["template"]);
    return out;
  }
  absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>& infos,
                                            bool elastic) const override {
    if (!kind_.for_start) return StartPatchFor(object_, kind_.layout(object_), infos, elastic);
    nlohmann::json started = kind_.for_start(object_);
    absl::StatusOr<nlohmann::json> patch =
        StartPatchFor(started, kind_.layout(started), infos, elastic);
    if (!patch.ok()) return patch.status();
    started.merge_patch(*patch);
    return MergePatchBetween(object_, started);
  }
  StopPlan PlanStop(const v1::Workload* workload) const override {
    StopPlan plan;
    nlohmann::json patch = StopPatchFor(object_, kind_.layout(object_), workload);
    if (patch.empty()) return plan;
    (IsSuspended() ? plan.restore : plan.suspend) = std::move(patch);
    return plan;
  }
  // Kueue's adapters of these kinds copy the worker's status whenever it differs.
  std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& remote) const override {
    return MirrorRemoteStatus(object_, remote);
  }
  std::optional<nlohmann::json> ScalePatch(const v1::Workload& workload) const override {
    if (!kind_.scale) return std::nullopt;
    std::map<std::string, int> counts;
    for (const v1::PodSet& ps : workload.spec().pod_sets()) counts[ps.name()] = ps.count();
    return kind_.scale(object_, counts);
  }
  std::map<std::string, int> ReclaimablePods() const override {
    return kind_.reclaimable ? kind_.reclaimable(object_) : std::map<std::string, int>();
  }

 private:
  const LayoutKind& kind_;
  const nlohmann::json& object_;
  const Related related_;
  const FrameworkOptions& options_;
};

}  // namespace

std::unique_ptr<GenericJob> NewLayoutJob(const LayoutKind& kind, const nlohmann::json& object,
                                         Related related, const FrameworkOptions& options) {
  return std::make_unique<LayoutJob>(kind, object, std::move(related), options);
}

std::unique_ptr<Integration> NewLayoutIntegration(const LayoutKind& kind, IntegrationInfo info,
                                                  Integration::PodOwnerFn owner_key_of_pod,
                                                  Integration::WebhookFn webhook,
                                                  MultiKueueAdapter multikueue) {
  auto integration = std::make_unique<Integration>(
      std::move(info),
      [&kind](const nlohmann::json& object, Related related, const FrameworkOptions& options) {
        return NewLayoutJob(kind, object, std::move(related), options);
      },
      std::move(owner_key_of_pod), std::move(webhook));
  integration->SetMultiKueue(std::move(multikueue));
  return integration;
}

}  // namespace admitd::shim
