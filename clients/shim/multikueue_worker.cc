#include "clients/shim/multikueue_worker.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/multikueue.h"
#include "clients/shim/framework/reconcile_util.h"
#include "clients/shim/integrations/pod/pod_multikueue.h"
#include "common/kueue_keys.h"
#include "common/log.h"

namespace admitd::shim {

MultiKueueWorker::MultiKueueWorker(const KubeClient& kube, const AdmitdLink& admitd,
                                   const IntegrationRegistry& registry, ObjectsOf objects_of,
                                   const ObjectCache* pods)
    : kube_(kube),
      admitd_(admitd),
      registry_(registry),
      objects_of_(std::move(objects_of)),
      pods_(pods) {}

std::vector<std::string> MultiKueueWorker::Keys() const { return admitd_.CopyKeys(); }

absl::StatusOr<bool> MultiKueueWorker::MoveToSlice(const v1::Workload& copy,
                                                   const std::string& replaced) {
  const std::string& ns = copy.metadata().namespace_();
  const std::string old_name = replaced.substr(replaced.find('/') + 1);
  int64_t moved = 0;
  for (const Integration* integration : registry_.All()) {
    const ObjectCache* cache =
        integration->multikueue() != nullptr ? objects_of_(*integration) : nullptr;
    if (cache == nullptr) continue;
    const bool job = integration->info().kind == "Job";
    for (const nlohmann::json& o : cache->Select([&](const nlohmann::json& object) {
           return reconcile::Str(reconcile::Meta(object), "namespace") == ns &&
                  IsMultiKueueWorkerJob(object) && PrebuiltWorkloadName(object) == old_name;
         })) {
      const nlohmann::json meta = reconcile::Meta(o);
      nlohmann::json patch = {
          {"metadata",
           {{"resourceVersion", reconcile::Str(meta, "resourceVersion")},
            {"annotations", {{kPrebuiltWorkloadKey, copy.metadata().name()}}}}}};
      // A Job takes the slice's count in the same write; another kind is scaled by its
      // reconcile once it has adopted the slice (GenericJob::ScalePatch).
      if (job) patch["spec"] = {{"parallelism", copy.spec().pod_sets(0).count()}};
      absl::StatusOr<nlohmann::json> r =
          kube_.Patch(integration->ObjectPath(ns, reconcile::Str(meta, "name")), patch);
      if (!r.ok()) return r.status();
      ++moved_;
      ++moved;
      ADMITD_LOG(kInfo, "multikueue object moved to its scale-up slice",
                 {{"kind", integration->info().kind},
                  {"object", ns + "/" + reconcile::Str(meta, "name")},
                  {"workload", ns + "/" + copy.metadata().name()}});
    }
  }
  return moved > 0;
}

absl::Status MultiKueueWorker::Reconcile(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  std::optional<v1::Workload> copy = admitd_.Workload(ns, name);
  if (!copy || copy->remote_job().manifest().empty() || reconcile::Finished(*copy) ||
      !copy->metadata().labels().count(kMultiKueueOriginLabel)) {
    return absl::OkStatus();
  }
  // Adopted by its object: the object is its kind's reconciler's (a copy its pods took is
  // read on: its manifest may list more pods).
  const v1::OwnerReference* adopter = ControllerOwner(*copy);
  if (adopter != nullptr && adopter->kind() != "Pod") return absl::OkStatus();
  // The kind, as the manifest says (what a copy keeps of its remote job).
  const nlohmann::json manifest =
      nlohmann::json::parse(copy->remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  // Pods: those of the manifest not created yet (a serving group grows after it was taken).
  if (IsPodsManifest(manifest)) return CreatePods(*copy);
  if (adopter != nullptr) return absl::OkStatus();
  // An elastic scale-up slice: once admitted here, the Job running on the slice it replaces
  // moves to it (its prebuilt Workload and parallelism).
  auto replaces = copy->metadata().annotations().find(kReplacementForAnnotation);
  if (replaces != copy->metadata().annotations().end()) {
    if (!reconcile::Admitted(*copy) || copy->spec().pod_sets_size() == 0) {
      return absl::OkStatus();
    }
    absl::StatusOr<bool> moved = MoveToSlice(*copy, replaces->second);
    if (!moved.ok()) return moved.status();
    if (*moved) return absl::OkStatus();
  }
  const std::string api_version = reconcile::Str(manifest, "apiVersion"),
                    kind = reconcile::Str(manifest, "kind");
  const Integration* integration = registry_.ForKind(api_version, kind);
  const ObjectCache* objects = integration != nullptr ? objects_of_(*integration) : nullptr;
  if (objects == nullptr || integration->multikueue() == nullptr) {
    ADMITD_LOG(kWarning, "multikueue copy of a kind not enabled here",
               {{"workload", key}, {"kind", api_version + ", Kind=" + kind}});
    return absl::OkStatus();  // nothing to do until the shim runs with that integration
  }
  absl::StatusOr<nlohmann::json> object =
      WorkerObjectFor(*copy, api_version, kind, *integration->multikueue());
  if (!object.ok()) {
    ADMITD_LOG(kWarning, "multikueue copy carries no usable object",
               {{"workload", key}, {"error", object.status().ToString()}});
    return absl::OkStatus();  // nothing to do until the manager hands over another
  }
  const std::string object_name = reconcile::Str((*object)["metadata"], "name");
  if (objects->Get(ns + "/" + object_name).has_value()) return absl::OkStatus();
  // The copy read above may have been withdrawn since (and an object made from it deleted):
  // read it again right before creating, so a withdrawn copy never gets a new object.
  std::optional<v1::Workload> still = admitd_.Workload(ns, name);
  if (!still || still->metadata().uid() != copy->metadata().uid() || reconcile::Finished(*still)) {
    return absl::OkStatus();
  }
  const std::string path = integration->ObjectPath(ns, object_name);
  absl::StatusOr<nlohmann::json> created =
      kube_.Create(path.substr(0, path.rfind('/')), *object);
  if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
    return created.status();
  }
  if (created.ok()) {
    ++created_;
    ADMITD_LOG(kInfo, "multikueue object created",
               {{"kind", kind}, {"object", ns + "/" + object_name}, {"workload", key}});
  }
  return absl::OkStatus();
}

}  // namespace admitd::shim

namespace admitd::shim {

absl::Status MultiKueueWorker::CreatePods(const v1::Workload& copy) {
  const std::string key = copy.metadata().namespace_() + "/" + copy.metadata().name();
  if (pods_ == nullptr) {
    ADMITD_LOG(kWarning, "multikueue copy of pods, and the pod integration is not enabled here",
               {{"workload", key}});
    return absl::OkStatus();  // nothing to do until the shim runs with it
  }
  absl::StatusOr<std::vector<nlohmann::json>> pods = WorkerPodsFor(copy);
  if (!pods.ok()) {
    ADMITD_LOG(kWarning, "multikueue copy carries no usable pods",
               {{"workload", key}, {"error", pods.status().ToString()}});
    return absl::OkStatus();
  }
  const std::string& ns = copy.metadata().namespace_();
  bool checked = false;
  for (const nlohmann::json& pod : *pods) {
    const std::string pod_name = reconcile::Str(pod["metadata"], "name");
    if (pods_->Get(ns + "/" + pod_name).has_value()) continue;
    if (!checked) {
      // As for any object: a withdrawn copy never gets new pods.
      std::optional<v1::Workload> still = admitd_.Workload(ns, copy.metadata().name());
      if (!still || still->metadata().uid() != copy.metadata().uid() ||
          reconcile::Finished(*still)) {
        return absl::OkStatus();
      }
      checked = true;
    }
    absl::StatusOr<nlohmann::json> created =
        kube_.Create(absl::StrCat("/api/v1/namespaces/", ns, "/pods"), pod);
    if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
      return created.status();
    }
    if (created.ok()) {
      ++created_;
      ADMITD_LOG(kInfo, "multikueue pod created",
                 {{"pod", ns + "/" + pod_name}, {"workload", key}});
    }
  }
  return absl::OkStatus();
}

}  // namespace admitd::shim
