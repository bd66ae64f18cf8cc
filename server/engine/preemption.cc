// Engine: preemption within a ClusterQueue (§7 of the semantics, classical).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"

namespace admitd::engine {
namespace {

// Whether `policy` lets preemptor P take candidate C's quota (§7.2).
bool PolicyAllows(const std::string& policy, const WorkloadEntry& p, const WorkloadEntry& c) {
  const int32_t pp = p.object.spec().priority(), cp = c.object.spec().priority();
  if (policy == "LowerPriority") return cp < pp;
  if (policy == "LowerOrNewerEqualPriority") {
    return cp < pp || (cp == pp && p.queue_key.timestamp < c.queue_key.timestamp);
  }
  return false;
}

absl::Time ReservedAt(const v1::Workload& wl) {
  const v1::Condition* c = FindCondition(wl, kQuotaReserved);
  return c == nullptr ? absl::InfiniteFuture() : FromProto(c->last_transition_time());
}

}  // namespace

std::vector<WorkloadEntry*> Engine::Impl::FindTargets(const ClusterQueueState& cq,
                                                      const WorkloadEntry& preemptor,
                                                      const FlavorResourceQuantities& requests) {
  const std::string& policy = cq.spec_object().spec().preemption().within_cluster_queue();
  std::vector<WorkloadEntry*> candidates;
  for (const std::string& key : cq.reserved_keys) {
    WorkloadEntry& c = workloads_.at(key);
    bool uses = false;
    for (const auto& [fr, v] : requests) uses = uses || c.usage.count(fr) > 0;
    if (uses && PolicyAllows(policy, preemptor, c)) candidates.push_back(&c);
  }
  if (candidates.empty()) return {};
  // Candidate order (§7.4): evicted first, lower priority, most recently reserved, UID.
  std::sort(candidates.begin(), candidates.end(), [](WorkloadEntry* a, WorkloadEntry* b) {
    const bool ea = IsConditionTrue(a->object, kEvicted), eb = IsConditionTrue(b->object, kEvicted);
    if (ea != eb) return ea;
    if (a->object.spec().priority() != b->object.spec().priority()) {
      return a->object.spec().priority() < b->object.spec().priority();
    }
    const absl::Time ra = ReservedAt(a->object), rb = ReservedAt(b->object);
    if (ra != rb) return ra > rb;
    return a->object.metadata().uid() < b->object.metadata().uid();
  });
  auto fits = [&] {
    for (const auto& [fr, v] : requests) {
      if (v > quota_tree_.Available(cq.name(), fr)) return false;
    }
    return true;
  };
  // Simulate removals on the live tree; every change is undone before returning.
  std::vector<WorkloadEntry*> removed;
  for (WorkloadEntry* c : candidates) {
    quota_tree_.AddUsage(cq.name(), c->usage, -1);
    removed.push_back(c);
    if (fits()) break;
  }
  std::vector<WorkloadEntry*> targets;
  if (fits()) {
    // Minimal set: put back earlier removals (newest first) that are not needed after all.
    targets.push_back(removed.back());
    for (size_t i = removed.size() - 1; i-- > 0;) {
      quota_tree_.AddUsage(cq.name(), removed[i]->usage, +1);
      if (fits()) continue;  // not needed: it stays
      quota_tree_.AddUsage(cq.name(), removed[i]->usage, -1);
      targets.push_back(removed[i]);
    }
    for (WorkloadEntry* t : targets) quota_tree_.AddUsage(cq.name(), t->usage, +1);
  } else {
    for (WorkloadEntry* c : removed) quota_tree_.AddUsage(cq.name(), c->usage, +1);
  }
  return targets;
}

void Engine::Impl::Preempt(WorkloadEntry& victim, const WorkloadEntry& preemptor, absl::Time now) {
  auto job_uid = preemptor.object.metadata().labels().find("kueue.x-k8s.io/job-uid");
  const std::string uid = preemptor.object.metadata().uid();
  const std::string message = absl::StrCat(
      "Preempted to accommodate a workload (UID: ", uid.empty() ? "UNKNOWN" : uid, ", JobUID: ",
      job_uid == preemptor.object.metadata().labels().end() ? "UNKNOWN" : job_uid->second,
      ") due to prioritization in the ClusterQueue; preemptor path: ",
      quota_tree_.Path(preemptor.cluster_queue),
      "; preemptee path: ", quota_tree_.Path(victim.cluster_queue));
  SetCondition(&victim.object, kEvicted, true, "Preempted", message, now);
  SetCondition(&victim.object, kPreempted, true, "InClusterQueue", message, now);
  EmitWorkload(victim, v1::WatchEvent::MODIFIED, "Evicted", message);
}

}  // namespace admitd::engine
