// The generic reconcile's children (reconciler.h): the managed ancestor an object belongs to, and
// what a child does while its ancestor's Workload is not admitted.
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/reconcile_util.h"
#include "clients/shim/framework/reconciler.h"
#include "common/kueue_keys.h"
#include "common/log.h"

namespace admitd::shim {
namespace {

using reconcile::Admitted;
using reconcile::Finished;
using reconcile::Meta;

// Kueue's managedOwnersChainLimit.
constexpr size_t kManagedOwnersChainLimit = 10;

const nlohmann::json* ControllerRef(const nlohmann::json& object) {
  const nlohmann::json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (!refs.is_array()) return nullptr;
  for (const nlohmann::json& ref : refs) {
    if (ref.is_object() && ref.value("controller", false)) return &ref;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::optional<Reconciler::Ancestor>> Reconciler::FindManagedAncestor(
    const nlohmann::json& object) const {
  const std::string ns = Str(Meta(object), "namespace");
  std::set<std::string> seen;
  std::optional<Ancestor> top;
  nlohmann::json current = object;
  while (true) {
    if (!seen.insert(Str(Meta(current), "uid")).second) {
      return absl::FailedPreconditionError(
          "Terminated search for Kueue-managed Job because of cyclic ownership");
    }
    const nlohmann::json* ref = ControllerRef(current);
    if (ref == nullptr) return top;
    const std::string api_version = Str(*ref, "apiVersion"), kind = Str(*ref, "kind"),
                      name = Str(*ref, "name");
    // Known owners: the enabled kinds (the shim may read no other), and a ReplicaSet (between a
    // Deployment and its pods) while Deployments are.
    const Integration* owner = registry_.ForKind(api_version, kind);
    if (owner != nullptr && options_.enabled.count(owner->info().name) == 0) owner = nullptr;
    const bool replica_set = api_version == "apps/v1" && kind == "ReplicaSet" &&
                             options_.enabled.count("deployment") != 0;
    if (owner == nullptr && !replica_set) return top;
    const std::string path = owner != nullptr
                                 ? owner->ObjectPath(ns, name)
                                 : absl::StrCat("/apis/apps/v1/namespaces/", ns, "/replicasets/",
                                                name);
    absl::StatusOr<nlohmann::json> parent = kube_.Get(path);
    if (!parent.ok()) return parent.status();
    if (Str(Meta(*parent), "uid") != Str(*ref, "uid")) return top;  // a stale reference
    const bool managed =
        owner != nullptr && owner->HasGenericJob() && !owner->info().admitted_as_pods;
    if (managed && (options_.manage_jobs_without_queue_name ||
                    !Str(Field(Meta(*parent), "labels"), kQueueNameLabel).empty())) {
      top = Ancestor{owner, *parent};
    }
    current = *std::move(parent);
    if (seen.size() > kManagedOwnersChainLimit) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "Terminated search for Kueue-managed Job because ancestor depth exceeded limit of ",
          kManagedOwnersChainLimit));
    }
  }
}

absl::Status Reconciler::ReportAncestorError(const nlohmann::json& object,
                                             const absl::Status& error) {
  if (error.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  if (error.code() == absl::StatusCode::kResourceExhausted) {
    events_.Record(object, "Warning", "JobNestingTooDeep", std::string(error.message()),
                   integration_.info().controller);
  }
  ADMITD_LOG(kWarning, "managed ancestor not found",
             {{"kind", integration_.info().kind},
              {"object", Str(Meta(object), "namespace") + "/" + Str(Meta(object), "name")},
              {"error", error.ToString()}});
  return error;
}

absl::Status Reconciler::ReconcileChild(const nlohmann::json& object, const Ancestor& ancestor) {
  std::unique_ptr<GenericJob> job = integration_.Wrap(object, RelatedOf(object), options_);
  if (job->Finished() || job->IsSuspended()) return absl::OkStatus();
  const Integration& parent = *ancestor.integration;
  const nlohmann::json owner_meta = Meta(ancestor.object);
  const std::string ns = Str(owner_meta, "namespace");
  // Its newest Workload that is not finished.
  const v1::Workload* latest = nullptr;
  const std::vector<v1::Workload> workloads =
      admitd_.WorkloadsOf(parent.info().kind, ns, Str(owner_meta, "name"));
  for (const v1::Workload& wl : workloads) {
    const v1::OwnerReference* o = ControllerOwner(wl);
    if (Finished(wl) || o == nullptr || o->uid() != Str(owner_meta, "uid")) continue;
    const auto& t = wl.metadata().creation_timestamp();
    if (latest == nullptr ||
        std::make_pair(t.seconds(), t.nanos()) >=
            std::make_pair(latest->metadata().creation_timestamp().seconds(),
                           latest->metadata().creation_timestamp().nanos())) {
      latest = &wl;
    }
  }
  // With workload slices a scale-up has no admitted slice for a while: evicted counts instead.
  const bool elastic =
      job->IsElastic() ||
      Str(Field(owner_meta, "annotations"), kElasticJobAnnotation) == "true";
  const bool suspend = latest == nullptr ? true
                       : elastic         ? ConditionTrue(*latest, "Evicted")
                                         : !Admitted(*latest);
  if (!suspend) return absl::OkStatus();
  const StopPlan plan = job->PlanStop(nullptr);
  if (plan.suspend.is_null()) return absl::OkStatus();  // a kind that cannot be suspended
  absl::StatusOr<nlohmann::json> r = PatchObject(object, plan.suspend);
  if (!r.ok()) return r.status();
  ++counters_.stops;
  RecordEvent(*job, "Suspended", "Kueue managed child job suspended");
  return absl::OkStatus();
}

}  // namespace admitd::shim
