// The pods of an elastic Job (KEP-77, semantics §13.5) as a shim reports them: which pods belong
// to a job's slice chain, and which of them the server releases from the
// kueue.x-k8s.io/elastic-job scheduling gate once a slice is admitted.
//
//   if (IsElasticJobPod(pod)) ...
//   std::vector<std::string> names = ElasticPodsToUngate(&active_slice, pods);
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_PODS_ELASTIC_PODS_H_
#define ADMITD_SERVER_PODS_ELASTIC_PODS_H_

#include <string>
#include <vector>

#include "admitd/v1/objects.pb.h"
#include "admitd/v1/pods.pb.h"
#include "common/kueue_keys.h"

namespace admitd::pods {


// A pod of an elastic Job: it carries the workload-slice-name annotation Kueue puts on them (the
// gate may already be gone).
bool IsElasticJobPod(const v1::PodObservation& pod);

// Whether the slice may run pods: it holds a reservation and is admitted, not evicted or
// finished (the chain's active slice is the newest such one).
bool IsActiveSlice(const v1::Workload& slice);

// The pods to ungate now. Per pod set of the active slice (the pod label kueue.x-k8s.io/podset):
// room = the granted count (the smaller of the admission's count and the spec's) minus the
// non-terminated pods already ungated; at most that many gated non-terminated pods, lowest name
// first. Nothing without an active slice. Sorted by pod set, then name.
std::vector<std::string> ElasticPodsToUngate(const v1::Workload* active_slice,
                                             const std::vector<v1::PodObservation>& pods);

// UNGATE for the elastic-job gate: only the gate goes (the job's template carries the rest).
v1::PodDirective ElasticUngateDirective(const v1::PodObservation& pod, int64_t revision);

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_ELASTIC_PODS_H_
