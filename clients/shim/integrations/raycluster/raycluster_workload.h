// A RayCluster (ray.io/v1) as Kueue's RayCluster integration sees it (job framework §4): the
// Workload it builds (§1.6, §4.2), where its templates are for the start and stop (§4.3, §1.9,
// §1.10), and its state. Pure functions over the cluster's JSON as the API server returns it.
//
// The pod sets are `head` (count 1, the head group's template; with enableInTreeAutoscaling
// KubeRay's `autoscaler` sidecar is added to the template, with GCS fault tolerance the Ray
// container's requests are raised to KubeRay's Redis clean-up Job's) and one per worker group,
// named by its groupName in lower case, of replicas (unset: 1) × numOfHosts (when above 1) pods.
//
//   absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(cluster, {});
//   absl::StatusOr<nlohmann::json> start =
//       StartPatchFor(cluster, RayClusterLayout(cluster), infos, elastic);
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

// Kueue's IsActive and PodsReady: status.state is "ready". (The shim also holds the quota of a
// stopped cluster while one of its pods has not terminated: LayoutKind::active_while_pods_run.)
bool RayClusterReady(const nlohmann::json& cluster);

// The suspend switch (spec.suspend) and the templates: the head group's, then each worker
// group's (StartPatchFor and StopPatchFor, framework/template_patches.h).
TemplateLayout RayClusterLayout(const nlohmann::json& cluster);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYCLUSTER_RAYCLUSTER_WORKLOAD_H_
