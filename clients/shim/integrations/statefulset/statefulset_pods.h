// A StatefulSet's pods as one serving pod group (kueue-jobframework.md §11.3): the labels and
// annotations Kueue's StatefulSet pod reconciler writes on each pod its webhook marked
// (kueue.x-k8s.io/pod-suspending-parent: statefulset), so that the pod integration admits the
// pods together, as a fast-admission serving group named after the StatefulSet's Workload, with
// the one pod set `main`.
//
//   std::string group = StatefulSetGroupName(sts);          // "statefulset-sts-a-55118"
//   std::optional<nlohmann::json> patch = StatefulSetPodPatch(pod, sts, options);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_PODS_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_PODS_H_

#include <optional>
#include <string>

#include "clients/shim/framework/generic_job.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

inline constexpr char kStatefulSetApiVersion[] = "apps/v1";
inline constexpr char kStatefulSetKind[] = "StatefulSet";
// The pod-suspending-parent value (Kueue's framework name).
inline constexpr char kStatefulSetFramework[] = "statefulset";
// The pod set of the group (kueue.DefaultPodSetName), also the pods' role hash.
inline constexpr char kStatefulSetPodSet[] = "main";
// The pod label a StatefulSet's pods carry their ordinal in.
inline constexpr char kStatefulSetPodIndexLabel[] = "apps.kubernetes.io/pod-index";

// Kueue's Workload name for the StatefulSet (kind StatefulSet, group apps), the pods' group name.
std::string StatefulSetGroupName(const nlohmann::json& statefulset);

// The JSON merge patch (with the pod's resourceVersion: a strict patch) that makes `pod` a member
// of `statefulset`'s group: the managed label, the queue name and priority class, the group name
// and prebuilt Workload name, the total count (spec.replicas, 1 when unset), fast admission,
// serving, the pod-index label's name, and the role hash `main`. A pod already in the group only
// has its queue name kept in step with the StatefulSet's. nullopt when nothing is to change: the
// pod is not marked for the StatefulSet, is terminated or being deleted, or the StatefulSet has
// no queue name (and manageJobsWithoutQueueName is off).
std::optional<nlohmann::json> StatefulSetPodPatch(const nlohmann::json& pod,
                                                  const nlohmann::json& statefulset,
                                                  const FrameworkOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_PODS_H_
