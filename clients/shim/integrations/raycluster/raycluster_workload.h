// A RayCluster (ray.io/v1) as Kueue's RayCluster integration sees it (job framework §4): the
// Workload it builds (§1.6, §4.2), the patches that start and stop the cluster (§4.3, §1.9,
// §1.10), and what "active" means for the quota held after an eviction. Pure functions over the
// cluster's JSON as the API server returns it.
//
// The pod sets are `head` (count 1, the head group's template; with enableInTreeAutoscaling
// KubeRay's `autoscaler` sidecar is added to the template, with GCS fault tolerance the Ray
// container's requests are raised to KubeRay's Redis clean-up Job's) and one per worker group,
// named by its groupName in lower case, of replicas (unset: 1) × numOfHosts (when above 1) pods.
//
//   absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(cluster, {});
//   absl::StatusOr<nlohmann::json> start = RayClusterStartPatch(cluster, infos, elastic);
//   nlohmann::json stop = RayClusterStopPatch(cluster, &*wl);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WORKLOAD_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WORKLOAD_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/podset_info.h"
#include "clients/shim/framework/template_patches.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

inline constexpr char kRayClusterApiVersion[] = "ray.io/v1";
inline constexpr char kRayClusterKind[] = "RayCluster";
inline constexpr char kRayHeadPodSet[] = "head";
// jobframework.MaxPodSets: the head and at most 17 worker groups.
inline constexpr int kRayMaxPodSets = 18;

struct RayClusterWorkloadOptions {
  bool elastic_jobs = true;                  // the ElasticJobsViaWorkloadSlices gate (β, on)
  std::set<std::string> label_keys_to_copy;  // Kueue's labelKeysToCopy
};

// Whether the cluster is an elastic job: the gate on and the annotation
// kueue.x-k8s.io/elastic-job: "true".
bool RayClusterElastic(const nlohmann::json& cluster, bool elastic_jobs);

// The pod sets Kueue builds (§4.2) as Workload manifest pod sets ({name, count, template}): head
// first, then the worker groups in order. INVALID_ARGUMENT when GCS fault tolerance is on and
// the head template has no container to account the clean-up Job on.
absl::StatusOr<nlohmann::json> RayClusterPodSets(const nlohmann::json& cluster);

// The Workload: Kueue's generated name (kind RayCluster, group ray.io; an elastic cluster's
// generation as the extra part), the job-uid label, the cluster as controller owner, queueName,
// priorityClassRef, maximumExecutionTimeSeconds and the provisioning-request annotations as for
// a Job, the pod sets above. INVALID_ARGUMENT when the cluster cannot be read as one.
absl::StatusOr<v1::Workload> WorkloadForRayCluster(const nlohmann::json& cluster,
                                                   const RayClusterWorkloadOptions& options);

// Kueue's IsSuspended: spec.suspend is true.
bool RayClusterSuspended(const nlohmann::json& cluster);

// Whether the cluster still runs pods whose quota its Workload must hold: Kueue's IsActive
// (status.state is "ready"), or one of `pods` (the cluster's pods) not terminated yet (what KubeRay
// may still be deleting after a suspension; kueue#15980).
bool RayClusterActive(const nlohmann::json& cluster, const std::vector<nlohmann::json>& pods);

// The JSON merge patch that starts the cluster: spec.suspend false, podset info [0] merged into
// the head group's template and [i+1] into worker group i's. FAILED_PRECONDITION "invalid podset
// infos: expecting <1+groups> podset, got <n>", or a merge conflict (Kueue's texts).
absl::StatusOr<nlohmann::json> RayClusterStartPatch(const nlohmann::json& cluster,
                                                    const std::vector<PodSetInfo>& infos,
                                                    bool elastic);

// The JSON merge patch that stops the cluster (Kueue's generic stop, one write): spec.suspend
// true and, when `workload` has one pod set per template, every template restored to the
// Workload's (RestoreTemplatePatch); `workload` null or of another shape: only suspended. Empty
// (an empty object) when the cluster is already stopped that way.
nlohmann::json RayClusterStopPatch(const nlohmann::json& cluster, const v1::Workload* workload);


}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WORKLOAD_H_
