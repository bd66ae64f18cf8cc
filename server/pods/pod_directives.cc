// Quota release (IsActive) and the directives a pod shim applies: the half of pod_group.h that
// acts on pods once their Workload exists.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/pods/pod_group.h"
#include "server/pods/pod_internal.h"
#include "server/pods/role_hash.h"

namespace admitd::pods {

using internal::SortByName;
using internal::ToTime;
using v1::PodObservation;

// ---- Quota release ------------------------------------------------------------------------------

bool PodKeepsGroupActive(const PodObservation& pod, absl::Time now, bool fast_quota_release) {
  if (pod.phase() != v1::POD_PHASE_RUNNING) return false;
  if (!pod.has_deletion_timestamp()) return true;
  if (fast_quota_release) return false;
  if (pod.has_deletion_grace_period_seconds()) {
    const absl::Time deadline =
        ToTime(pod.deletion_timestamp()) + absl::Seconds(pod.deletion_grace_period_seconds());
    if (now > deadline) return false;
  }
  return true;
}

bool GroupIsActive(const std::vector<PodObservation>& pods, absl::Time now, bool fast_quota_release) {
  return std::any_of(pods.begin(), pods.end(), [&](const PodObservation& p) {
    return PodKeepsGroupActive(p, now, fast_quota_release);
  });
}

bool WorkloadIsActive(bool is_group, const std::vector<PodObservation>& pods, absl::Time now,
                      bool fast_quota_release) {
  return is_group && GroupIsActive(pods, now, fast_quota_release);
}

// ---- Directives ---------------------------------------------------------------------------------

v1::PodRef RefOf(const PodObservation& pod) {
  v1::PodRef ref;
  ref.set_cluster(pod.cluster());
  ref.set_namespace_(pod.namespace_());
  ref.set_name(pod.name());
  ref.set_uid(pod.uid());
  return ref;
}

v1::PodDirective UngateDirective(const PodObservation& pod, const UngateInfo& info, int64_t revision) {
  v1::PodDirective d;
  d.set_action(v1::PodDirective::UNGATE);
  *d.mutable_pod() = RefOf(pod);
  d.set_scheduling_gate(kAdmissionGate);
  for (const auto& [k, v] : info.node_selector) (*d.mutable_node_selector())[k] = v;
  auto& labels = *d.mutable_labels();
  labels[kPodSetLabel] = info.pod_set;
  if (!info.local_queue.empty()) labels[kLocalQueueNameLabel] = info.local_queue;
  if (!info.cluster_queue.empty()) labels[kClusterQueueNameLabel] = info.cluster_queue;
  (*d.mutable_annotations())[kWorkloadAnnotation] = info.workload_name;
  d.set_revision(revision);
  return d;
}

v1::PodDirective DeleteDirective(const PodObservation& pod, int64_t revision) {
  v1::PodDirective d;
  d.set_action(v1::PodDirective::DELETE);
  *d.mutable_pod() = RefOf(pod);
  d.set_revision(revision);
  return d;
}

v1::PodDirective RemoveFinalizerDirective(const PodObservation& pod, int64_t revision) {
  v1::PodDirective d;
  d.set_action(v1::PodDirective::REMOVE_FINALIZER);
  *d.mutable_pod() = RefOf(pod);
  d.set_revision(revision);
  return d;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PodsToUngate(
    std::vector<PodObservation> pods, const v1::Workload& workload, bool is_group) {
  std::vector<std::pair<std::string, std::string>> out;
  SortByName(&pods);
  if (!is_group) {
    if (workload.spec().pod_sets_size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("invalid podset infos: expecting 1 pod set got ",
                                                     workload.spec().pod_sets_size()));
    }
    for (const auto& pod : pods) {
      if (IsGated(pod)) out.emplace_back(pod.name(), workload.spec().pod_sets(0).name());
    }
    return out;
  }
  const RoleResolver roles = RoleResolver::ForWorkload(workload);
  for (const auto& pod : pods) {
    if (!IsGated(pod)) continue;
    absl::StatusOr<std::string> role = roles.RoleOf(pod);
    if (!role.ok()) return role.status();
    if (role->empty()) continue;  // a declared group's pod of no declared set stays gated
    bool found = false;
    for (const auto& ps : workload.spec().pod_sets()) found = found || ps.name() == *role;
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid podset infos: podSetInfo with the name '", *role, "' is not found"));
    }
    out.emplace_back(pod.name(), *role);
  }
  return out;
}

namespace {
constexpr size_t kMaxEventMessage = 1024;
constexpr absl::string_view kTruncatedSuffix = " ...";
}  // namespace

std::string TruncateEventMessage(absl::string_view message) {
  if (message.size() <= kMaxEventMessage) return std::string(message);
  return absl::StrCat(message.substr(0, kMaxEventMessage - kTruncatedSuffix.size()),
                      kTruncatedSuffix);
}

void TruncateEventMessageInPlace(std::string* message) {
  if (message->size() <= kMaxEventMessage) return;
  message->resize(kMaxEventMessage - kTruncatedSuffix.size());
  message->append(kTruncatedSuffix.data(), kTruncatedSuffix.size());
}

std::string EvictionStopReason(absl::string_view evicted_reason) {
  return absl::StrCat("WorkloadEvictedDueTo", evicted_reason);
}

std::vector<v1::PodDirective> StopDirectives(const std::vector<PodObservation>& pods,
                                             absl::string_view stop_reason, absl::string_view message,
                                             bool workload_deleted, bool is_group, int64_t revision) {
  std::vector<PodObservation> sorted = pods;
  SortByName(&sorted);
  std::vector<v1::PodDirective> out;
  for (const auto& pod : sorted) {
    if (pod.has_deletion_timestamp()) continue;
    if (!workload_deleted && (IsTerminated(pod) || IsGated(pod))) continue;
    v1::PodDirective d = DeleteDirective(pod, revision);
    d.set_termination_reason(std::string(stop_reason));
    d.set_termination_message(std::string(message));
    out.push_back(std::move(d));
  }
  if (is_group && workload_deleted) {
    for (const auto& pod : sorted) {
      if (HasManagedFinalizer(pod)) out.push_back(RemoveFinalizerDirective(pod, revision));
    }
  }
  return out;
}

}  // namespace admitd::pods
