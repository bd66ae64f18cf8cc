// Elastic jobs (KEP-77) on the client side: which pods a job controller may release from the
// kueue.x-k8s.io/elastic-job scheduling gate once its workload slice is admitted. Every shim uses
// the same rule, so a scale-up never starts more pods than the admitted slice grants.
//
//   std::vector<std::string> release = admitd::clients::PodsToUngate(slice, pods);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_ELASTIC_H_
#define ADMITD_CLIENTS_ELASTIC_H_

#include <string>
#include <vector>

#include "admitd/v1/objects.pb.h"

namespace admitd::clients {

inline constexpr char kElasticJobSchedulingGate[] = "kueue.x-k8s.io/elastic-job";
inline constexpr char kPodSetLabel[] = "kueue.x-k8s.io/podset";
inline constexpr char kWorkloadSliceNameAnnotation[] = "kueue.x-k8s.io/workload-slice-name";
inline constexpr char kWorkloadSliceReplacementForAnnotation[] =
    "kueue.x-k8s.io/workload-slice-replacement-for";

// What a shim observes of one pod of the job.
struct PodObservation {
  std::string name;
  std::string pod_set;  // the value of its kueue.x-k8s.io/podset label
  bool gated = false;   // it still carries the kueue.x-k8s.io/elastic-job scheduling gate
  bool terminated = false;  // Succeeded or Failed, or being deleted
};

// The pods to ungate now (KEP-77 §13.5). `active_slice` is the job's live workload slice. For
// each pod set the room is the count the admission grants (status.admission's
// pod_set_assignments[].count, only while the slice is admitted: QuotaReserved and Admitted
// true, not Evicted or Finished) minus the non-terminated pods that are already ungated; at most
// that many gated, non-terminated pods are ungated, lowest name first. A slice that is not
// admitted ungates nothing. The result is sorted by pod set, then name.
std::vector<std::string> PodsToUngate(const v1::Workload& active_slice,
                                      const std::vector<PodObservation>& pods);

// The granted count of every pod set of an admitted slice: min(admission count, spec count);
// empty when it is not admitted.
std::vector<std::pair<std::string, int>> GrantedCounts(const v1::Workload& slice);

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_ELASTIC_H_
