// MultiKueue for pods and pod groups (Kueue's pod adapter), the part the pods themselves decide:
// which pods a worker cluster's shim made from a manager's copy (they belong to that copy, never
// to a Workload of their own), and the status the copy carries back to the manager, whose pods
// take it (docs/multikueue.md, "Pods, Deployments and StatefulSets"). Pure functions.
#ifndef ADMITD_SERVER_PODS_MULTIKUEUE_PODS_H_
#define ADMITD_SERVER_PODS_MULTIKUEUE_PODS_H_

#include <string>
#include <vector>

#include "admitd/v1/objects.pb.h"
#include "admitd/v1/pods.pb.h"

namespace admitd::pods {

// The Workload the pod names as its prebuilt one (annotation, else label), or "".
std::string PrebuiltWorkloadName(const v1::PodObservation& pod);

// A pod a worker cluster's shim created for a manager's copy: the origin label and a prebuilt
// Workload name.
bool IsMultiKueueWorkerPod(const v1::PodObservation& pod);

// A copy a manager dispatched that no pods took yet: the origin label, no owner, not made of a
// cluster's pods.
bool AwaitsWorkerPods(const v1::Workload& copy);

// The copy's remote_job.status for its pods: a JSON object {"pods": {"<name>": {"phase",
// "message", "conditions"}}} with Kubernetes' spelling of each pod's phase and conditions.
std::string RemotePodsStatus(const std::vector<v1::PodObservation>& pods);

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_MULTIKUEUE_PODS_H_
