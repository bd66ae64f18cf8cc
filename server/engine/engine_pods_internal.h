// Helpers the engine's pod files share (engine_pods.cc, engine_pod_directives.cc). Internal to
// server/engine.
#ifndef ADMITD_SERVER_ENGINE_ENGINE_PODS_INTERNAL_H_
#define ADMITD_SERVER_ENGINE_ENGINE_PODS_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/pods.pb.h"
#include "server/pods/pod_group.h"

namespace admitd::engine::pod_workloads {

// The key of a stored pod: "<cluster>/<namespace>/<name>".
std::string PodKey(const std::string& cluster, const std::string& ns, const std::string& name);
// The Workload was made from reported pods (it carries the admitd.io/pod-cluster label).
bool IsPodWorkload(const v1::Workload& wl);
// It carries kueue.x-k8s.io/is-group-workload: "true".
bool IsGroupWorkload(const v1::Workload& wl);
// §14.3: the pods made this Workload: made of reported pods and, for a group, a pod group
// Workload. Kueue never adopts another controller's Workload.
bool OwnsWorkload(const v1::Workload& wl, bool is_group);
// What pods do with a Workload of their name that is not theirs: they stay gated, inactive ones
// are finalized, and a group gets MatchGroupWorkload's WorkloadNameConflict event.
pods::GroupMatch NameConflict(const std::vector<v1::PodObservation>& pods, const v1::Workload& wl,
                              bool is_group, absl::Time now, const pods::PodOptions& options);
// `pod` is one of the Workload's owners (kind Pod, the pod's name and uid).
bool IsOwnedByPod(const v1::Workload& wl, const v1::PodObservation& pod);
// The cluster whose pods made a pod Workload.
const std::string& ClusterOf(const v1::Workload& wl);
// Moves the pods of clusters other than `cluster` out of `pods` and returns them: a Workload is
// made of one cluster's pods, and another cluster's same-named group does not join it.
std::vector<v1::PodObservation> TakeOtherClusters(std::vector<v1::PodObservation>* pods,
                                                  const std::string& cluster);

}  // namespace admitd::engine::pod_workloads

#endif  // ADMITD_SERVER_ENGINE_ENGINE_PODS_INTERNAL_H_
