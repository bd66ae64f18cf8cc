// Engine: preemption within a ClusterQueue (§7 of the semantics, classical).
#include <algorithm>
#include <map>

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

bool ReclaimsWhileBorrowing(const ClusterQueueState& cq) {
  return cq.spec_object().spec().preemption().borrow_within_cohort().policy() == "LowerPriority";
}

// §7.3: a candidate of another queue may be reclaimed while the preemptor borrows only when it
// has lower priority than the preemptor and, with a threshold, a priority at most the threshold.
bool BorrowWithinCohortAllows(const ClusterQueueState& cq, const WorkloadEntry& p,
                              const WorkloadEntry& c) {
  const v1::BorrowWithinCohort& bwc = cq.spec_object().spec().preemption().borrow_within_cohort();
  if (bwc.policy() != "LowerPriority") return false;
  const int32_t cp = c.object.spec().priority();
  if (cp >= p.object.spec().priority()) return false;
  return !bwc.has_max_priority_threshold() || cp <= bwc.max_priority_threshold();
}

absl::Time ReservedAt(const v1::Workload& wl) {
  const v1::Condition* c = FindCondition(wl, kQuotaReserved);
  return c == nullptr ? absl::InfiniteFuture() : FromProto(c->last_transition_time());
}

}  // namespace

std::vector<WorkloadEntry*> Engine::Impl::FindTargets(const ClusterQueueState& cq,
                                                      const WorkloadEntry& preemptor,
                                                      const FlavorResourceQuantities& requests) {
  const v1::ClusterQueuePreemption& policy = cq.spec_object().spec().preemption();
  const std::string& reclaim = policy.reclaim_within_cohort();
  const bool in_cohort = !cq.spec_object().spec().cohort_name().empty();
  auto uses_needed = [&](const WorkloadEntry& c) {
    for (const auto& [fr, v] : requests) {
      if (c.usage.count(fr) > 0) return true;
    }
    return false;
  };
  std::vector<WorkloadEntry*> candidates;
  bool other_queues = false;
  for (const std::string& key : cq.reserved_keys) {
    WorkloadEntry& c = workloads_.at(key);
    if (uses_needed(c) && PolicyAllows(policy.within_cluster_queue(), preemptor, c)) {
      candidates.push_back(&c);
    }
  }
  // Reclaim within the cohort (§7.3): workloads of other ClusterQueues of the tree that borrow.
  if (in_cohort && (reclaim == "LowerPriority" || reclaim == "Any")) {
    for (const std::string& name : quota_tree_.ClusterQueuesUnder(quota_tree_.Root(cq.name()))) {
      if (name == cq.name()) continue;
      const ClusterQueueState& other = cluster_queues_.at(name);
      for (const std::string& key : other.reserved_keys) {
        WorkloadEntry& c = workloads_.at(key);
        if (!uses_needed(c)) continue;
        if (reclaim == "LowerPriority" &&
            c.object.spec().priority() >= preemptor.object.spec().priority()) {
          continue;
        }
        candidates.push_back(&c);
        other_queues = true;
      }
    }
  }
  if (candidates.empty()) return {};
  // Candidate order (§7.4): evicted first, other ClusterQueues before the preemptor's, lower
  // priority, most recently reserved, UID.
  const std::string& own = cq.name();
  std::sort(candidates.begin(), candidates.end(), [&own](WorkloadEntry* a, WorkloadEntry* b) {
    const bool ea = IsConditionTrue(a->object, kEvicted), eb = IsConditionTrue(b->object, kEvicted);
    if (ea != eb) return ea;
    const bool oa = a->cluster_queue != own, ob = b->cluster_queue != own;
    if (oa != ob) return oa;
    if (a->object.spec().priority() != b->object.spec().priority()) {
      return a->object.spec().priority() < b->object.spec().priority();
    }
    const absl::Time ra = ReservedAt(a->object), rb = ReservedAt(b->object);
    if (ra != rb) return ra > rb;
    return a->object.metadata().uid() < b->object.metadata().uid();
  });

  // One attempt of the minimal set search (§7.5), simulated on the live tree and undone.
  auto attempt = [&](bool allow_borrowing, bool own_only) -> std::vector<WorkloadEntry*> {
    std::map<std::string, FlavorResourceQuantities> removed_usage;  // by ClusterQueue
    auto queue_usage = [&](const ClusterQueueState& q, const FlavorResource& fr) {
      auto u = q.usage.find(fr);
      int64_t v = u == q.usage.end() ? 0 : u->second;
      auto r = removed_usage[q.name()].find(fr);
      return v - (r == removed_usage[q.name()].end() ? 0 : r->second);
    };
    auto fits = [&] {
      for (const auto& [fr, v] : requests) {
        if (v > quota_tree_.Available(own, fr)) return false;
        if (!allow_borrowing) {
          auto n = cq.nominal.find(fr);
          if (queue_usage(cq, fr) + v > (n == cq.nominal.end() ? 0 : n->second)) return false;
        }
      }
      return true;
    };
    auto remove = [&](WorkloadEntry* c, int sign) {
      quota_tree_.AddUsage(c->cluster_queue, c->usage, -sign);
      AddTo(&removed_usage[c->cluster_queue], c->usage, sign);
    };
    std::vector<WorkloadEntry*> removed;
    for (WorkloadEntry* c : candidates) {
      if (c->cluster_queue != own) {
        if (own_only) continue;
        if (allow_borrowing && !BorrowWithinCohortAllows(cq, preemptor, *c)) continue;
        // Still a valid reclaim target only while its queue borrows in a needed pair.
        const ClusterQueueState& q = cluster_queues_.at(c->cluster_queue);
        bool borrows = false;
        for (const auto& [fr, v] : requests) {
          auto n = q.nominal.find(fr);
          borrows = borrows || queue_usage(q, fr) > (n == q.nominal.end() ? 0 : n->second);
        }
        if (!borrows) continue;
      }
      remove(c, +1);
      removed.push_back(c);
      if (fits()) break;
    }
    std::vector<WorkloadEntry*> targets;
    if (!removed.empty() && fits()) {
      // Minimal set: put back earlier removals (newest first) that are not needed after all.
      targets.push_back(removed.back());
      for (size_t i = removed.size() - 1; i-- > 0;) {
        remove(removed[i], -1);
        if (fits()) continue;
        remove(removed[i], +1);
        targets.push_back(removed[i]);
      }
      for (WorkloadEntry* t : targets) remove(t, -1);
    } else {
      for (WorkloadEntry* c : removed) remove(c, -1);
    }
    return targets;
  };
  if (!other_queues) return attempt(/*allow_borrowing=*/true, /*own_only=*/false);
  std::vector<WorkloadEntry*> targets = attempt(/*allow_borrowing=*/false, /*own_only=*/false);
  if (targets.empty()) {
    // While borrowing, other queues' workloads are fair game only under borrowWithinCohort, and
    // only below the preemptor's priority (and the threshold, when set).
    targets = attempt(/*allow_borrowing=*/true, /*own_only=*/!ReclaimsWhileBorrowing(cq));
  }
  return targets;
}

void Engine::Impl::Preempt(WorkloadEntry& victim, const WorkloadEntry& preemptor,
                           const FlavorResourceQuantities& preemptor_usage, absl::Time now) {
  const bool in_queue = victim.cluster_queue == preemptor.cluster_queue;
  // Reclaiming while borrowing: the preemptor's queue is above its nominal quota in a pair the
  // victim uses once the victim is gone.
  bool while_borrowing = false;
  if (!in_queue) {
    const ClusterQueueState& pq = cluster_queues_.at(preemptor.cluster_queue);
    for (const auto& [fr, v] : preemptor_usage) {
      auto n = pq.nominal.find(fr);
      auto u = pq.usage.find(fr);
      const int64_t used = (u == pq.usage.end() ? 0 : u->second) + v;
      if (victim.usage.count(fr) && used > (n == pq.nominal.end() ? 0 : n->second)) {
        while_borrowing = true;
      }
    }
  }
  const char* human = in_queue          ? "prioritization in the ClusterQueue"
                      : while_borrowing ? "reclamation within the cohort while borrowing"
                                        : "reclamation within the cohort";
  const char* variant = in_queue          ? "InClusterQueue"
                        : while_borrowing ? "InCohortReclaimWhileBorrowing"
                                          : "InCohortReclamation";
  auto job_uid = preemptor.object.metadata().labels().find("kueue.x-k8s.io/job-uid");
  const std::string uid = preemptor.object.metadata().uid();
  const std::string message = absl::StrCat(
      "Preempted to accommodate a workload (UID: ", uid.empty() ? "UNKNOWN" : uid, ", JobUID: ",
      job_uid == preemptor.object.metadata().labels().end() ? "UNKNOWN" : job_uid->second,
      ") due to ", human,
      "; preemptor path: ",
      quota_tree_.Path(preemptor.cluster_queue),
      "; preemptee path: ", quota_tree_.Path(victim.cluster_queue));
  Evict(victim, "Preempted", message, now);
  SetCondition(&victim.object, kPreempted, true, variant, message, now);
}

}  // namespace admitd::engine
