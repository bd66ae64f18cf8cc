#include "server/pods/multikueue_pods.h"

#include "absl/time/time.h"
#include "common/kueue_keys.h"
#include "nlohmann/json.hpp"
#include "server/pods/pod_internal.h"

namespace admitd::pods {
namespace {

using internal::ToTime;

const char* PhaseName(v1::PodPhase phase) {
  switch (phase) {
    case v1::POD_PHASE_PENDING:
      return "Pending";
    case v1::POD_PHASE_RUNNING:
      return "Running";
    case v1::POD_PHASE_SUCCEEDED:
      return "Succeeded";
    case v1::POD_PHASE_FAILED:
      return "Failed";
    case v1::POD_PHASE_UNKNOWN:
      return "Unknown";
    default:
      return "";
  }
}

}  // namespace

std::string PrebuiltWorkloadName(const v1::PodObservation& pod) {
  if (auto a = pod.annotations().find(kPrebuiltWorkloadKey); a != pod.annotations().end()) {
    if (!a->second.empty()) return a->second;
  }
  auto l = pod.labels().find(kPrebuiltWorkloadKey);
  return l == pod.labels().end() ? "" : l->second;
}

bool IsMultiKueueWorkerPod(const v1::PodObservation& pod) {
  auto origin = pod.labels().find(kMultiKueueOriginLabel);
  return origin != pod.labels().end() && !origin->second.empty() &&
         !PrebuiltWorkloadName(pod).empty();
}

bool AwaitsWorkerPods(const v1::Workload& copy) {
  const auto& labels = copy.metadata().labels();
  return labels.count(kMultiKueueOriginLabel) != 0 && labels.count(kPodClusterLabel) == 0 &&
         copy.metadata().owner_references().empty();
}

std::string RemotePodsStatus(const std::vector<v1::PodObservation>& pods) {
  nlohmann::json by_name = nlohmann::json::object();
  for (const v1::PodObservation& p : pods) {
    nlohmann::json status = nlohmann::json::object();
    if (const char* phase = PhaseName(p.phase()); *phase != '\0') status["phase"] = phase;
    if (!p.status_message().empty()) status["message"] = p.status_message();
    nlohmann::json conditions = nlohmann::json::array();
    for (const v1::Condition& c : p.conditions()) {
      nlohmann::json cond = {{"type", c.type()}, {"status", c.status()}};
      if (!c.reason().empty()) cond["reason"] = c.reason();
      if (!c.message().empty()) cond["message"] = c.message();
      if (c.has_last_transition_time()) {
        cond["lastTransitionTime"] = absl::FormatTime(
            "%Y-%m-%dT%H:%M:%SZ", ToTime(c.last_transition_time()), absl::UTCTimeZone());
      }
      conditions.push_back(std::move(cond));
    }
    if (!conditions.empty()) status["conditions"] = std::move(conditions);
    by_name[p.name()] = std::move(status);
  }
  return nlohmann::json{{"pods", std::move(by_name)}}.dump();
}

}  // namespace admitd::pods
