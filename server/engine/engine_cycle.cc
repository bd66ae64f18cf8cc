// Engine: the scheduling cycle (§6 of the semantics) and dry-run explanations.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"

namespace admitd::engine {

std::map<std::string, const v1::ResourceFlavor*> Engine::Impl::FlavorMap() const {
  std::map<std::string, const v1::ResourceFlavor*> out;
  for (const auto& [name, object] : flavors_) out[name] = &object.resource_flavor();
  return out;
}

v1::Admission BuildAdmission(const WorkloadEntry& entry, const ClusterQueueState& cq,
                             const Assignment& assignment) {
  v1::Admission admission;
  admission.set_cluster_queue(cq.name());
  for (size_t i = 0; i < entry.pod_sets.size(); ++i) {
    v1::PodSetAssignment* psa = admission.add_pod_set_assignments();
    psa->set_name(entry.pod_sets[i].name);
    ResourceList usage;
    for (const auto& [resource, flavor] : assignment.flavors[i]) {
      (*psa->mutable_flavors())[resource] = flavor;
      usage[resource] = assignment.totals[i].at(resource);
    }
    RenderResourceList(usage, psa->mutable_resource_usage());
    psa->set_count(assignment.counts[i]);
  }
  return admission;
}

void Engine::Impl::Admit(WorkloadEntry& entry, ClusterQueueState& cq, const Assignment& assignment,
                         absl::Time now) {
  v1::Workload& wl = entry.object;
  *wl.mutable_status()->mutable_admission() = BuildAdmission(entry, cq, assignment);
  const std::string message = absl::StrCat("Quota reserved in ClusterQueue ", cq.name());
  SetCondition(&wl, kQuotaReserved, true, "QuotaReserved", message, now);
  // A reservation clears what an earlier eviction or preemption said.
  for (const char* type : {kEvicted, kPreempted}) {
    const v1::Condition* c = FindCondition(wl, type);
    if (c != nullptr && c->status() == "True") {
      SetCondition(&wl, type, false, "QuotaReserved", absl::StrCat("Previously: ", c->message()),
                   now);
    }
  }
  wl.mutable_status()->clear_resource_requests();
  entry.cluster_queue = cq.name();
  // Admitted only once every admission check the assigned flavors need is Ready (§10).
  SyncAdmissionChecks(entry, cq, now);
  SyncAdmitted(entry, now);
  entry.usage = UsageFromAdmission(entry);
  ChargeUsage(entry, +1);
  EmitWorkload(entry, v1::WatchEvent::MODIFIED,
               IsConditionTrue(wl, kAdmitted) ? "Admitted" : "QuotaReserved", message);
}

std::optional<Assignment> Engine::Impl::PartialAssignment(
    const ClusterQueueState& cq, const WorkloadEntry& entry,
    const std::map<std::string, const v1::ResourceFlavor*>& flavors,
    const PreemptionOracle& oracle) {
  // §12: counts_j = count_j - floor(delta_j * i / totalDelta) for the smallest i in
  // [0, totalDelta] whose assignment fits (or preempts with targets); a binary search.
  int64_t total_delta = 0;
  for (const v1::PodSet& ps : entry.object.spec().pod_sets()) {
    if (ps.has_min_count()) total_delta += ps.count() - ps.min_count();
  }
  if (total_delta <= 0) return std::nullopt;
  auto assign = [&](int64_t i) {
    std::vector<PodSetRequest> reduced = entry.pod_sets;
    for (size_t j = 0; j < reduced.size(); ++j) {
      const v1::PodSet& ps = entry.object.spec().pod_sets(static_cast<int>(j));
      const int64_t delta = ps.has_min_count() ? ps.count() - ps.min_count() : 0;
      reduced[j].count = static_cast<int32_t>(ps.count() - delta * i / total_delta);
    }
    return AssignFlavors(cq, quota_tree_, flavors, reduced, &oracle);
  };
  auto usable = [&](const Assignment& a) {
    return a.fits || (a.preempt && !FindTargets(cq, entry, a.usage).empty());
  };
  Assignment smallest = assign(total_delta);
  if (!usable(smallest)) return std::nullopt;
  int64_t lo = 1, hi = total_delta;  // i = 0 (full counts) is already known not to work
  Assignment best = std::move(smallest);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    Assignment a = assign(mid);
    if (usable(a)) {
      best = std::move(a);
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return best;  // the assignment for `hi`: every usable probe moved `hi` to itself
}

CycleStats Engine::Impl::RunCycle(absl::Time now) {
  CycleStats stats;
  // One head from every ClusterQueue that has work (§6.1).
  struct Head {
    ClusterQueueState* cq;
    WorkloadEntry* entry;
    Assignment assignment;
  };
  std::vector<Head> heads;
  heads.reserve(cqs_with_heads_.size());
  for (const std::string& name : cqs_with_heads_) {
    ClusterQueueState& cq = cluster_queues_.at(name);
    auto first = cq.heap.begin();
    WorkloadEntry& entry = workloads_.at(first->key);
    cq.heap.erase(first);
    entry.where = WorkloadEntry::Where::kNone;
    heads.push_back({&cq, &entry, Assignment()});
  }
  // Nomination (§6.3): every head gets its flavor assignment against the state at the start of
  // the cycle; the iteration below then admits them in Kueue's order.
  const auto flavors = FlavorMap();
  int set_aside = 0;  // heads moved to the inadmissible set: their queue has a new head
  std::vector<Head> nominated;
  for (Head& head : heads) {
    ClusterQueueState& cq = *head.cq;
    WorkloadEntry& entry = *head.entry;
    ++stats.heads;
    const std::string& lq_name = entry.object.spec().queue_name();
    auto lq = local_queues_.find(absl::StrCat(entry.object.metadata().namespace_(), "/", lq_name));
    if (lq != local_queues_.end() && (lq->second.local_queue().spec().stop_policy() == "Hold" ||
                                      lq->second.local_queue().spec().stop_policy() ==
                                          "HoldAndDrain")) {
      // A stopped LocalQueue holds its workloads until the stop is lifted (§6.6).
      MarkPending(entry, kReasonSuspended, absl::StrCat("LocalQueue ", lq_name, " is inactive"),
                  now);
      cq.inadmissible.insert(entry.queue_key);
      entry.where = WorkloadEntry::Where::kInadmissible;
      ++set_aside;
      continue;
    }
    if (HasFailedChecks(entry.object)) {
      // A Retry or Rejected reported while it was already evicted survives the release; such a
      // workload is not tried (§10).
      MarkPending(entry, kReasonPendingEvaluation, "The workload has failed admission checks",
                  now);
      cq.inadmissible.insert(entry.queue_key);
      entry.where = WorkloadEntry::Where::kInadmissible;
      ++set_aside;
      continue;
    }
    if (!cq.SelectsNamespace(entry.object.metadata().namespace_())) {
      // Misconfigured entries wait for a change in either strategy (§5.3).
      MarkPending(entry, kReasonMisconfigured,
                  "workload namespace doesn't match ClusterQueue selector", now);
      cq.inadmissible.insert(entry.queue_key);
      entry.where = WorkloadEntry::Where::kInadmissible;
      ++set_aside;
      continue;
    }
    const PreemptionOracle oracle = [&](const FlavorResource& fr, int64_t value) {
      return !FindTargets(cq, entry, {{fr, value}}).empty();
    };
    head.assignment = AssignFlavors(cq, quota_tree_, flavors, entry.pod_sets, &oracle);
    if (!head.assignment.fits &&
        !(head.assignment.preempt && !FindTargets(cq, entry, head.assignment.usage).empty())) {
      if (auto partial = PartialAssignment(cq, entry, flavors, oracle)) {
        head.assignment = *std::move(partial);
      }
    }
    nominated.push_back(std::move(head));
  }
  // Iteration order (§6.4): lower borrowing level, then higher priority, then earlier time.
  std::sort(nominated.begin(), nominated.end(), [](const Head& a, const Head& b) {
    if (a.assignment.borrowing_level != b.assignment.borrowing_level) {
      return a.assignment.borrowing_level < b.assignment.borrowing_level;
    }
    return a.entry->queue_key < b.entry->queue_key;
  });
  for (Head& head : nominated) {
    ClusterQueueState& cq = *head.cq;
    WorkloadEntry& entry = *head.entry;
    const Assignment& assignment = head.assignment;
    if (assignment.fits) {
      // Earlier admissions of this cycle in the same cohort may have taken the quota (§6.5.7).
      bool still_fits = true;
      for (const auto& [fr, v] : assignment.usage) {
        still_fits = still_fits && v <= quota_tree_.Available(cq.name(), fr);
      }
      if (still_fits) {
        Admit(entry, cq, assignment, now);
        ++stats.admitted;
        continue;
      }
      MarkPending(entry, kReasonWaitingForQuota,
                  "Workload no longer fits after processing another workload", now);
      cq.heap.insert(entry.queue_key);  // failed after nomination: back to the heap
      entry.where = WorkloadEntry::Where::kHeap;
      continue;
    }
    if (assignment.preempt) {
      std::vector<WorkloadEntry*> targets = FindTargets(cq, entry, assignment.usage);
      if (!targets.empty()) {
        for (WorkloadEntry* victim : targets) {
          // An already evicted victim counts as preempted: its quota comes back on release.
          if (!IsConditionTrue(victim->object, kEvicted)) {
            Preempt(*victim, entry, assignment.usage, now);
          }
        }
        MarkPending(entry, kReasonWaitingForPreemptedWorkloads,
                    absl::StrCat(assignment.message, ". Pending the preemption of ",
                                 targets.size(), " workload(s)"),
                    now);
        cq.heap.insert(entry.queue_key);  // stays first in line until the victims are gone
        entry.where = WorkloadEntry::Where::kHeap;
        continue;
      }
    }
    MarkPending(entry, assignment.reason, assignment.message, now);
    if (cq.strict_fifo) {
      cq.heap.insert(entry.queue_key);  // stays the head and blocks the queue
      entry.where = WorkloadEntry::Where::kHeap;
    } else {
      cq.inadmissible.insert(entry.queue_key);
      entry.where = WorkloadEntry::Where::kInadmissible;
      ++set_aside;
    }
  }
  for (Head& head : heads) RefreshHeads(*head.cq);
  // Another cycle can only help where a queue has a head it has not tried yet: after an
  // admission or after a head was set aside. A StrictFIFO head that failed blocks its queue
  // until something changes, so it alone never asks for more.
  stats.more = (stats.admitted > 0 || set_aside > 0) && !cqs_with_heads_.empty();
  return stats;
}

absl::StatusOr<v1::AdmitResponse> Engine::Impl::Describe(const v1::AdmitRequest& request,
                                                         absl::Time now) const {
  const WorkloadEntry* entry = FindWorkload(request.namespace_(), request.name());
  if (entry == nullptr) {
    return NotFound("Workload", absl::StrCat(request.namespace_(), "/", request.name()), "name");
  }
  v1::AdmitResponse out;
  *out.mutable_workload() = entry->object;
  out.set_state(StateOf(entry->object));
  out.set_admitted(out.state() == v1::WORKLOAD_STATE_ADMITTED);
  if (out.state() == v1::WORKLOAD_STATE_PENDING) {
    if (const v1::Condition* c = FindCondition(entry->object, kQuotaReserved)) {
      out.set_pending_reason(c->reason());
      out.set_pending_message(c->message());
    }
  }
  if (!request.dry_run()) return out;

  v1::Explanation* why = out.mutable_explanation();
  why->set_cluster_queue(entry->cluster_queue);
  auto cq_it = cluster_queues_.find(entry->cluster_queue);
  if (out.state() != v1::WORKLOAD_STATE_PENDING) {
    why->set_message(absl::StrCat("the workload is not pending (",
                                  v1::WorkloadState_Name(out.state()), ")"));
    return out;
  }
  if (cq_it == cluster_queues_.end()) {
    why->set_message(absl::StrCat("ClusterQueue ", entry->cluster_queue, " doesn't exist"));
    return out;
  }
  const ClusterQueueState& cq = cq_it->second;
  int position = 0;
  for (const QueueKey& k : cq.heap) {
    if (k.key == entry->key()) break;
    ++position;
  }
  if (entry->where == WorkloadEntry::Where::kInadmissible) {
    // Inadmissible workloads queue behind the heap, in their own order.
    for (const QueueKey& k : cq.inadmissible) {
      if (k.key == entry->key()) break;
      ++position;
    }
  }
  why->set_queue_position(position);
  if (!cq.active()) {
    why->set_message(absl::StrCat("ClusterQueue ", cq.name(), " is inactive: ",
                                  cq.inactive_message));
    return out;
  }
  if (!cq.SelectsNamespace(entry->object.metadata().namespace_())) {
    why->set_message("workload namespace doesn't match ClusterQueue selector");
    return out;
  }
  Engine::Impl* self = const_cast<Engine::Impl*>(this);  // FindTargets undoes what it simulates
  const PreemptionOracle oracle = [&](const FlavorResource& fr, int64_t value) {
    return !self->FindTargets(cq, *entry, {{fr, value}}).empty();
  };
  Assignment assignment = AssignFlavors(cq, quota_tree_, FlavorMap(), entry->pod_sets, &oracle);
  for (const FlavorAttempt& a : assignment.attempts) {
    v1::FlavorConsideration* f = why->add_flavors();
    f->set_pod_set(a.pod_set);
    f->set_resource(a.resource);
    f->set_flavor(a.flavor);
    f->set_mode(a.mode);
    f->set_reason(a.reason);
  }
  why->set_would_admit(assignment.fits);
  if (assignment.preempt) {
    for (WorkloadEntry* victim : self->FindTargets(cq, *entry, assignment.usage)) {
      why->add_would_preempt(victim->key());
    }
  }
  if (assignment.fits) {
    *why->mutable_admission() = BuildAdmission(*entry, cq, assignment);
    why->set_message(absl::StrCat("would reserve quota in ClusterQueue ", cq.name()));
  } else {
    why->set_message(assignment.message);
  }
  return out;
}

}  // namespace admitd::engine
