// The reconcile of one RayCluster (ray.io/v1) against its Workloads in admitd (job framework
// §1.7 for Kueue's RayCluster integration, §4): submit the Workload built from the cluster;
// start the cluster when its Workload is admitted (unsuspended, the admission merged into the
// head's and every worker group's template); stop it when the Workload is evicted (suspended,
// the templates restored) and give the quota back once none of its pods is active; replace a
// Workload the cluster no longer matches (§1.8); resize an elastic cluster's Workload when a
// worker group's replicas change, and ungate the pods its admitted slice has room for; delete
// the Workloads of a deleted cluster. A RayCluster never finishes (Kueue's Finished is always
// false): its Workload keeps its quota until the cluster is deleted, evicted or deactivated.
//
// Every step reads the caches (the RayCluster and pod informers, the AdmitdLink) and writes at
// most what the step needs, so a reconcile can be repeated at any time and after any restart.
//
//   RayClusterReconciler r(kube, link, clusters, pods, events, options);
//   absl::Status s = r.Reconcile("ns/cluster");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys (a WorkQueue never
// hands the same key to two workers).
#ifndef ADMITD_CLIENTS_SHIM_RAYCLUSTER_RECONCILER_H_
#define ADMITD_CLIENTS_SHIM_RAYCLUSTER_RECONCILER_H_

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/event_recorder.h"
#include "clients/shim/informer.h"
#include "clients/shim/kube_client.h"
#include "clients/shim/raycluster_workload.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The reportingComponent of the events the shim records on RayClusters (Kueue's).
inline constexpr char kRayClusterController[] = "ray.io/raycluster-kueue-controller";
// The collection the RayCluster informer lists and watches.
inline constexpr char kRayClustersPath[] = "/apis/ray.io/v1/rayclusters";
// KubeRay's pods, which carry the label ray.io/cluster.
inline constexpr char kRayPodsPath[] = "/api/v1/pods?labelSelector=ray.io%2Fcluster";

struct RayClusterReconcilerOptions {
  std::string cluster;
  // Namespaces whose RayClusters are never managed.
  std::set<std::string> excluded_namespaces;
  bool manage_jobs_without_queue_name = false;
  RayClusterWorkloadOptions workload;
};

struct RayClusterReconcilerCounters {
  std::atomic<int64_t> reconciles{0}, submits{0}, starts{0}, stops{0}, releases{0}, deletes{0},
      resizes{0}, ungated{0};
};

class RayClusterReconciler {
 public:
  // `clusters` caches kRayClustersPath, `pods` kRayPodsPath.
  RayClusterReconciler(const KubeClient& kube, AdmitdLink& admitd, const Informer& clusters,
                       const Informer& pods, EventRecorder& events,
                       RayClusterReconcilerOptions options);

  // One reconcile of the RayCluster "namespace/name" (present or deleted). An error means
  // "retry".
  absl::Status Reconcile(const std::string& key);

  const RayClusterReconcilerCounters& counters() const { return counters_; }

 private:
  absl::Status Finalize(const std::string& key, const std::vector<v1::Workload>& workloads);
  absl::Status ReconcileElastic(const nlohmann::json& rc, const v1::Workload& built,
                                const std::vector<v1::Workload>& owned,
                                const std::vector<nlohmann::json>& pods);
  // The ordinary path: one Workload that matches the cluster, the others replaced (§1.7 step 1).
  absl::Status ReconcileMatching(const nlohmann::json& rc, const v1::Workload& built,
                                 const std::vector<v1::Workload>& owned,
                                 const std::vector<nlohmann::json>& pods);
  absl::Status ReconcileWith(const nlohmann::json& rc, const v1::Workload& built,
                             const v1::Workload* workload, const std::vector<nlohmann::json>& pods,
                             bool elastic);
  // Records CreatedWorkload when it created one and `record_created`.
  absl::Status Submit(const nlohmann::json& rc, const v1::Workload& built,
                      bool record_created = true);
  absl::Status Resize(const nlohmann::json& rc, const v1::Workload& built);
  absl::Status DeleteWorkload(const v1::Workload& workload);
  absl::Status ReleaseQuota(const v1::ReleaseQuotaRequest& request);
  absl::Status Start(const nlohmann::json& rc, const v1::Workload& workload, bool elastic);
  // Suspends the cluster, restoring the templates of `workload` (none: only suspends); records
  // Stopped with `message` when it suspended the cluster now.
  absl::Status Stop(const nlohmann::json& rc, const v1::Workload* workload,
                    const std::string& message);
  absl::Status Ungate(const v1::Workload& slice, const std::vector<nlohmann::json>& pods);
  // A merge patch of the cluster carrying its resourceVersion (409: retry).
  absl::Status PatchCluster(const nlohmann::json& rc, nlohmann::json patch);
  bool Equivalent(const v1::Workload& built, const v1::Workload& workload) const;
  // The Workload the cluster makes (with the shim's label and digest), built once per version.
  absl::StatusOr<v1::Workload> Build(const std::string& key, const nlohmann::json& rc);
  // The cluster's pods (controlled by its UID).
  std::vector<nlohmann::json> PodsOf(const std::string& uid) const;

  const KubeClient& kube_;
  AdmitdLink& admitd_;
  const Informer& clusters_;
  const Informer& pods_;
  EventRecorder& events_;
  const RayClusterReconcilerOptions options_;
  RayClusterReconcilerCounters counters_;
  struct Built {
    std::string uid, resource_version;
    v1::Workload workload;
  };
  absl::Mutex built_mu_;
  std::map<std::string, Built> built_ ABSL_GUARDED_BY(built_mu_);  // by "ns/name"
};

// "ns/name" of the RayCluster that controls `pod` (a ray.io/v1 controller owner), or "".
std::string OwnerRayClusterKey(const nlohmann::json& pod);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_RAYCLUSTER_RECONCILER_H_
