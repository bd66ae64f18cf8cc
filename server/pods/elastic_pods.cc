#include "server/pods/elastic_pods.h"

#include <algorithm>
#include <map>

#include "server/pods/pod_group.h"

namespace admitd::pods {
namespace {

bool ConditionTrue(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return c.status() == "True";
  }
  return false;
}

bool HasElasticGate(const v1::PodObservation& pod) {
  for (const v1::PodSchedulingGate& g : pod.scheduling_gates()) {
    if (g.name() == kElasticJobGate) return true;
  }
  return false;
}

}  // namespace

bool IsElasticJobPod(const v1::PodObservation& pod) {
  auto it = pod.annotations().find(kSliceNameAnnotation);
  return it != pod.annotations().end() && !it->second.empty();
}

bool IsActiveSlice(const v1::Workload& slice) {
  return slice.status().has_admission() && ConditionTrue(slice, "QuotaReserved") &&
         ConditionTrue(slice, "Admitted") && !ConditionTrue(slice, "Evicted") &&
         !ConditionTrue(slice, "Finished");
}

std::vector<std::string> ElasticPodsToUngate(const v1::Workload* active_slice,
                                             const std::vector<v1::PodObservation>& pods) {
  std::vector<std::string> out;
  if (active_slice == nullptr || !IsActiveSlice(*active_slice)) return out;
  std::map<std::string, int> room;
  for (const v1::PodSetAssignment& psa : active_slice->status().admission().pod_set_assignments()) {
    // A scale-down lowers the spec count in place and keeps the admission: the smaller counts.
    int count = psa.count();
    for (const v1::PodSet& ps : active_slice->spec().pod_sets()) {
      if (ps.name() == psa.name()) count = std::min(count, ps.count());
    }
    room[psa.name()] = count;
  }
  std::map<std::string, std::vector<std::string>> gated;
  for (const v1::PodObservation& pod : pods) {
    if (IsTerminated(pod)) continue;
    auto label = pod.labels().find(kPodSetLabel);
    auto it = room.find(label == pod.labels().end() ? std::string() : label->second);
    if (it == room.end()) continue;  // no pod set the slice grants anything to
    if (HasElasticGate(pod)) {
      gated[it->first].push_back(pod.name());
    } else {
      --it->second;
    }
  }
  for (auto& [pod_set, names] : gated) {
    std::sort(names.begin(), names.end());
    const int n = std::min<int>(room[pod_set], static_cast<int>(names.size()));
    for (int i = 0; i < n; ++i) out.push_back(names[i]);
  }
  return out;
}

v1::PodDirective ElasticUngateDirective(const v1::PodObservation& pod, int64_t revision) {
  v1::PodDirective d;
  d.set_action(v1::PodDirective::UNGATE);
  *d.mutable_pod() = RefOf(pod);
  d.set_scheduling_gate(kElasticJobGate);
  d.set_revision(revision);
  return d;
}

}  // namespace admitd::pods
