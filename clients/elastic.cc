#include "clients/elastic.h"

#include <algorithm>
#include <map>

namespace admitd::clients {
namespace {

bool IsTrue(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return c.status() == "True";
  }
  return false;
}

bool Admitted(const v1::Workload& wl) {
  return wl.status().has_admission() && IsTrue(wl, "QuotaReserved") && IsTrue(wl, "Admitted") &&
         !IsTrue(wl, "Evicted") && !IsTrue(wl, "Finished");
}

}  // namespace

std::vector<std::pair<std::string, int>> GrantedCounts(const v1::Workload& slice) {
  std::vector<std::pair<std::string, int>> out;
  if (!Admitted(slice)) return out;
  const v1::Admission& admission = slice.status().admission();
  for (int i = 0; i < admission.pod_set_assignments_size(); ++i) {
    const v1::PodSetAssignment& psa = admission.pod_set_assignments(i);
    // A scale-down changes the spec count in place and leaves the admission as it was; the
    // quota charged (and so the pods that may run) is the smaller of the two (§2.4).
    int count = psa.count();
    for (const v1::PodSet& ps : slice.spec().pod_sets()) {
      if (ps.name() == psa.name()) count = std::min(count, ps.count());
    }
    out.emplace_back(psa.name(), count);
  }
  return out;
}

std::vector<std::string> PodsToUngate(const v1::Workload& active_slice,
                                      const std::vector<PodObservation>& pods) {
  std::map<std::string, int> room;
  for (const auto& [pod_set, count] : GrantedCounts(active_slice)) room[pod_set] = count;
  std::map<std::string, std::vector<std::string>> gated;
  for (const PodObservation& pod : pods) {
    if (pod.terminated) continue;
    auto it = room.find(pod.pod_set);
    if (it == room.end()) continue;  // not a pod set the slice grants anything to
    if (pod.gated) {
      gated[pod.pod_set].push_back(pod.name);
    } else {
      --it->second;
    }
  }
  std::vector<std::string> out;
  for (auto& [pod_set, names] : gated) {
    const int n = room[pod_set];
    if (n <= 0) continue;
    std::sort(names.begin(), names.end());
    for (int i = 0; i < n && i < static_cast<int>(names.size()); ++i) out.push_back(names[i]);
  }
  return out;
}

}  // namespace admitd::clients
