// A RayJob (ray.io/v1, Kueue's ray.io/rayjob; kueue-jobframework.md §7) as the job framework
// reads it: the pod sets of the RayCluster it will create (from spec.rayClusterSpec, as a
// RayCluster's) and, in K8sJobMode, the submitter's; its state from status.jobDeploymentStatus;
// and where the templates its admission is merged into are.
//
// In K8sJobMode without spec.submitterPodTemplate the submitter pod set's template is Kueue's copy
// of KubeRay's default submitter, and starting the RayJob stores it (with the admission's info)
// in spec.submitterPodTemplate (RayJobForStart).
//
//   absl::StatusOr<nlohmann::json> pod_sets = RayJobPodSets(rayjob);
//   absl::StatusOr<nlohmann::json> start = StartPatchFor(rayjob, RayJobLayout(filled), infos, false);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_WORKLOAD_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_WORKLOAD_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/template_patches.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

inline constexpr char kRayJobApiVersion[] = "ray.io/v1";
inline constexpr char kRayJobKind[] = "RayJob";
inline constexpr char kRayJobSubmitterPodSet[] = "submitter";
inline constexpr char kRayClusterGenerationAnnotation[] = "kueue.x-k8s.io/raycluster-generation";

// The Workload's pod sets ({name, count, template}): head, the worker groups, then (K8sJobMode,
// the CRD's default) `submitter` of one pod; in SidecarMode the submitter container is added to
// the head's template instead. INVALID_ARGUMENT when there is no spec.rayClusterSpec.
absl::StatusOr<nlohmann::json> RayJobPodSets(const nlohmann::json& rayjob);
// The suspend switch and the templates, in the pod sets' order (the submitter's at
// /spec/submitterPodTemplate in K8sJobMode).
TemplateLayout RayJobLayout(const nlohmann::json& rayjob);
// `rayjob` with, in K8sJobMode and without one, the default submitter template in
// spec.submitterPodTemplate: what a start writes (Kueue's RunWithPodSetsInfo).
nlohmann::json RayJobForStart(const nlohmann::json& rayjob);

// An elastic RayJob (Kueue §7.5): its pod sets' counts as its live RayCluster (the one of
// `clusters`, the RayClusters it controls, named status.rayClusterName) has them: each worker
// group with replicas set gives replicas × numOfHosts. FAILED_PRECONDITION "PodSet name mismatch:
// RayCluster <rc> has worker group <g> which is not found in Ray object <rayjob> spec"; nothing
// changes while the cluster is not there.
absl::Status RayJobLiveCounts(const nlohmann::json& rayjob,
                              const std::vector<nlohmann::json>& clusters,
                              nlohmann::json* pod_sets);
// The annotation kueue.x-k8s.io/raycluster-generation as Kueue keeps it on an elastic RayJob:
// its live cluster's metadata.generation, "" without one. The merge patch that sets it, nullopt
// when it is set so.
std::optional<nlohmann::json> RayJobGenerationPatch(const nlohmann::json& rayjob,
                                                    const std::vector<nlohmann::json>& clusters);
// Kueue's GetWorkloadNameExtraPart: "<generation>", then "_<raycluster-generation>" when set.
std::string RayJobNameExtra(const nlohmann::json& rayjob);

// Kueue's Skip: the RayJob runs on an existing cluster (spec.clusterSelector is not empty).
bool RayJobSkipped(const nlohmann::json& rayjob);
bool RayJobSuspended(const nlohmann::json& rayjob);
// jobDeploymentStatus Complete or Failed; succeeded when jobStatus is SUCCEEDED; status.message.
std::optional<JobFinish> RayJobFinished(const nlohmann::json& rayjob);
// jobDeploymentStatus neither "" (new) nor Suspended (nor ValidationFailed: no cluster was
// made): KubeRay may still run its cluster.
bool RayJobActive(const nlohmann::json& rayjob);
// Kueue's IsOnHold: jobDeploymentStatus ValidationFailed.
bool RayJobOnHold(const nlohmann::json& rayjob);
// status.rayClusterStatus.state is "ready".
bool RayJobPodsReady(const nlohmann::json& rayjob);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_RAYJOB_RAYJOB_WORKLOAD_H_
