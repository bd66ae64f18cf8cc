// Engine: the scheduling cycle (§6 of the semantics): heads, nomination with flavor assignment
// and preemption targets, the iteration order (classical or fair sharing's tournament) and what
// each head's attempt does.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/fair_tournament.h"

namespace admitd::engine {

const std::map<std::string, const v1::ResourceFlavor*>& Engine::Impl::FlavorMap() {
  if (!flavor_map_valid_) {
    flavor_map_.clear();
    for (const auto& [name, object] : flavors_) flavor_map_[name] = &object.resource_flavor();
    flavor_map_valid_ = true;
  }
  return flavor_map_;
}

v1::Admission BuildAdmission(const WorkloadEntry& entry, const ClusterQueueState& cq,
                             const Assignment& assignment) {
  v1::Admission admission;
  admission.set_cluster_queue(cq.name());
  for (size_t i = 0; i < entry.pod_sets().size(); ++i) {
    v1::PodSetAssignment* psa = admission.add_pod_set_assignments();
    psa->set_name(entry.pod_sets()[i].name);
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
  v1::Workload& wl = entry.mutable_object();
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
  entry.SetUsage(UsageFromAssignment(entry, assignment));
  ChargeUsage(entry, +1);
  // Admission fair sharing (§20.2): the entry penalty, settled at once when admitted.
  AfsReserved(entry);
  if (IsConditionTrue(wl, kAdmitted)) AfsSettle(entry, now);
  EmitWorkload(entry, v1::WatchEvent::MODIFIED,
               IsConditionTrue(wl, kAdmitted) ? "Admitted" : "QuotaReserved", message);
  RecordQuotaReserved(entry, FormatConsideredFlavors(assignment), now);
  if (IsConditionTrue(wl, kAdmitted)) RecordAdmitted(entry, now);
  // A slice replaces its predecessor in the same change set: the two never both hold quota.
  OnSliceAdmitted(entry, now);
}

std::optional<Assignment> Engine::Impl::PartialAssignment(
    const ClusterQueueState& cq, const WorkloadEntry& entry,
    const std::map<std::string, const v1::ResourceFlavor*>& flavors,
    const PreemptionOracle& oracle, const NominatedFlavors* nominated) {
  // §12: counts_j = count_j - floor(delta_j * i / totalDelta) for the smallest i in
  // [0, totalDelta] whose assignment fits (or preempts with targets); a binary search.
  int64_t total_delta = 0;
  for (const v1::PodSet& ps : entry.object().spec().pod_sets()) {
    if (ps.has_min_count()) total_delta += ps.count() - ps.min_count();
  }
  if (total_delta <= 0) return std::nullopt;
  const ScanProgress* resume =
      entry.last_assignment.has_value() ? &entry.last_assignment->progress : nullptr;
  auto assign = [&](int64_t i) {
    std::vector<PodSetRequest> reduced = entry.pod_sets();
    for (size_t j = 0; j < reduced.size(); ++j) {
      const v1::PodSet& ps = entry.object().spec().pod_sets(static_cast<int>(j));
      const int64_t delta = ps.has_min_count() ? ps.count() - ps.min_count() : 0;
      reduced[j].count = static_cast<int32_t>(ps.count() - delta * i / total_delta);
    }
    return AssignFlavors(cq, quota_tree_, flavors, reduced, &oracle, resume, /*explain=*/false,
                         /*replaced=*/nullptr, nominated, options_.fair_sharing);
  };
  auto usable = [&](const Assignment& a) {
    return a.fits || (a.preempt && !FindTargets(cq, entry, a.usage, a.needs_preemption).empty());
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

Assignment Engine::Impl::AssignWithTargets(
    const ClusterQueueState& cq, WorkloadEntry& entry,
    const std::map<std::string, const v1::ResourceFlavor*>& flavors,
    std::vector<Target>* targets, const NominatedFlavors* nominated) {
  // Scan progress older than the previous cycle is stale once the tree's quota or usage moved.
  if (entry.last_assignment.has_value() && cycle_ - entry.last_assignment->cycle > 1 &&
      quota_tree_.Generation(cq.name()) > entry.last_assignment->generation) {
    entry.last_assignment.reset();
  }
  // The oracle's searches, by what they were asked: the assignment's own search below is
  // usually one of them, against the same state (the oracle leaves the tree as it found it).
  std::map<std::pair<FlavorResource, int64_t>, std::vector<Target>> searched;
  const PreemptionOracle oracle = [&](const FlavorResource& fr, int64_t value) {
    return SimulatePreemption(cq, entry, fr, value, &searched[{fr, value}]);
  };
  const ScanProgress* resume =
      entry.last_assignment.has_value() ? &entry.last_assignment->progress : nullptr;
  std::optional<SliceBase> base;
  if (WorkloadEntry* old = ReplacedSlice(entry, cq)) base = SliceBaseOf(*old);
  Assignment assignment =
      AssignFlavors(cq, quota_tree_, flavors, entry.pod_sets(), &oracle, resume,
                    /*explain=*/false, base ? &*base : nullptr, nominated, options_.fair_sharing);
  targets->clear();
  if (assignment.preempt) {
    auto known = assignment.usage.size() == 1 && assignment.needs_preemption.size() == 1 &&
                         assignment.usage.begin()->first == *assignment.needs_preemption.begin()
                     ? searched.find(*assignment.usage.begin())
                     : searched.end();
    *targets = known != searched.end()
                   ? std::move(known->second)
                   : FindTargets(cq, entry, assignment.usage, assignment.needs_preemption);
  }
  if (!assignment.fits && targets->empty()) {
    if (auto partial = PartialAssignment(cq, entry, flavors, oracle, nominated)) {
      assignment = *std::move(partial);
      if (assignment.preempt) {
        *targets = FindTargets(cq, entry, assignment.usage, assignment.needs_preemption);
      }
    }
  }
  entry.last_assignment = WorkloadEntry::LastAssignment{
      std::move(assignment.progress), quota_tree_.Generation(cq.name()), cycle_};
  return assignment;
}

CycleStats Engine::Impl::RunCycle(absl::Time now) {
  CycleStats stats;
  ++cycle_;
  in_cycle_ = true;
  // One head from every ClusterQueue that has work (§6.1).
  struct Head {
    ClusterQueueState* cq;
    WorkloadEntry* entry;
    Assignment assignment;
    std::vector<Target> targets;
  };
  std::vector<Head> heads;
  heads.reserve(cqs_with_heads_.size());
  std::vector<ClusterQueueState*> visited;
  visited.reserve(cqs_with_heads_.size());
  for (const std::string& name : cqs_with_heads_) {
    ClusterQueueState* const found = FindClusterQueue(name);
    if (found == nullptr) continue;  // not reached: a deleted queue leaves cqs_with_heads_
    ClusterQueueState& cq = *found;
    visited.push_back(&cq);
    QueueKey* first = cq.pending.Front();
    if (!cq.sticky.empty()) {
      // The sticky preemptor stays first while it waits in the heap (§5.2).
      auto sticky = workloads_.find(cq.sticky);
      if (sticky != workloads_.end() && sticky->second.cluster_queue == name &&
          cq.pending.IsActive(&sticky->second.queue_key)) {
        first = &sticky->second.queue_key;
      }
    }
    WorkloadEntry* head = nullptr;
    if (first != nullptr) {
      head = first->entry;
      cq.pending.Remove(first);
      head->where = WorkloadEntry::Where::kNone;
    }
    if (head != nullptr) heads.push_back({&cq, head, Assignment(), {}});
  }
  // Nomination (§6.3): every head gets its flavor assignment and preemption targets against
  // the state at the start of the cycle; the iteration below then processes them in order.
  const auto& flavors = FlavorMap();
  int set_aside = 0;   // heads moved to the inadmissible set: their queue has a new head
  int retry = 0;       // heads back in the heap with flavors still to try
  std::vector<Head> nominated;
  nominated.reserve(heads.size());
  for (Head& head : heads) {
    ClusterQueueState& cq = *head.cq;
    WorkloadEntry& entry = *head.entry;
    ++stats.heads;
    const std::string& lq_name = entry.object().spec().queue_name();
    auto lq = local_queues_.end();
    if (stopped_local_queues_ > 0) {
      lq = local_queues_.find(absl::StrCat(entry.object().metadata().namespace_(), "/", lq_name));
    }
    if (lq != local_queues_.end() && (lq->second.local_queue().spec().stop_policy() == "Hold" ||
                                      lq->second.local_queue().spec().stop_policy() ==
                                          "HoldAndDrain")) {
      // A stopped LocalQueue holds its workloads until the stop is lifted (§6.6).
      MarkPendingAfterAttempt(entry, kReasonSuspended,
                              absl::StrCat("LocalQueue ", lq_name, " is inactive"), now);
      cq.pending.AddAlone(&entry.queue_key, entry.SchedulingHash());
      entry.where = WorkloadEntry::Where::kQueued;
      ++set_aside;
      continue;
    }
    if (HasFailedChecks(entry.object())) {
      // A Retry or Rejected reported while it was already evicted survives the release; such a
      // workload is not tried (§10).
      MarkPendingAfterAttempt(entry, kReasonPendingEvaluation,
                              "The workload has failed admission checks", now);
      cq.pending.AddAlone(&entry.queue_key, entry.SchedulingHash());
      entry.where = WorkloadEntry::Where::kQueued;
      ++set_aside;
      continue;
    }
    if (!Selects(cq, entry.object().metadata().namespace_())) {
      // Misconfigured entries wait for a change in either strategy (§5.3).
      MarkPendingAfterAttempt(entry, kReasonMisconfigured,
                              "workload namespace doesn't match ClusterQueue selector", now);
      cq.pending.AddAlone(&entry.queue_key, entry.SchedulingHash());
      entry.where = WorkloadEntry::Where::kQueued;
      ++set_aside;
      continue;
    }
    head.assignment = AssignWithTargets(cq, entry, flavors, &head.targets);
    nominated.push_back(std::move(head));
  }
  // Iteration order: with fair sharing, the tournament of shares (§19.5), recomputed after each
  // head; otherwise (§6.4) lower borrowing level, then higher priority, then earlier time. (One
  // head needs no sort, nor the buffer stable_sort allocates.)
  std::optional<FairTournament> tournament;
  if (options_.fair_sharing && nominated.size() > 1) {
    std::vector<FairTournament::Contender> contenders;
    contenders.reserve(nominated.size());
    for (const Head& head : nominated) {
      contenders.push_back({quota_tree_.RefOf(head.cq->name()), &head.assignment.usage,
                            head.entry->queue_key.priority, head.entry->queue_key.timestamp});
    }
    tournament.emplace(&quota_tree_, std::move(contenders));
  } else if (nominated.size() > 1) {
    std::stable_sort(nominated.begin(), nominated.end(), [](const Head& a, const Head& b) {
      if (a.assignment.borrowing_level != b.assignment.borrowing_level) {
        return a.assignment.borrowing_level < b.assignment.borrowing_level;
      }
      return a.entry->queue_key < b.entry->queue_key;
    });
  }

  // Victims of this cycle's preemptions, and usage added to the tree for this cycle only
  // (preemptors and reservations; admissions are charged for good). Both are also listed by the
  // root of their quota tree: an entry's checks add and take back only what lies in its own tree,
  // the only part of the quota they read (over many cohorts, taking back every victim of the
  // cycle for every entry would cost the square of the cycle's heads).
  std::map<std::string, WorkloadEntry*> preempted;
  struct Victim {
    QuotaTree::QueueRef queue;
    WorkloadEntry* entry;
  };
  // A tree's victims, and their usage summed by queue for the checks that take them all out at
  // once (a victim holds its quota until the cycle ends; even a pod workload's is released after).
  struct TreeVictims {
    std::vector<Victim> list;
    QuotaTree::UsageSum usage;
  };
  std::map<QuotaTree::QueueRef, TreeVictims> victims_in;  // by root
  struct CycleUsage {
    QuotaTree::QueueRef queue;
    std::vector<std::pair<int, int64_t>> usage;  // by pair id
  };
  std::vector<CycleUsage> cycle_usage;
  std::map<QuotaTree::QueueRef, std::vector<size_t>> cycle_usage_in;  // indexes of cycle_usage
  auto add_cycle_usage = [&](const std::string& cq_name, const FlavorResourceQuantities& usage) {
    CycleUsage& added = cycle_usage.emplace_back();
    added.queue = quota_tree_.RefOf(cq_name);
    for (const auto& [fr, v] : usage) added.usage.emplace_back(quota_tree_.InternPair(fr), v);
    quota_tree_.AddUsage(added.queue, added.usage, +1);
    cycle_usage_in[quota_tree_.RootOf(added.queue)].push_back(cycle_usage.size() - 1);
  };
  auto add_victim = [&](WorkloadEntry* v) {
    if (!preempted.emplace(v->key(), v).second) return;
    const QuotaTree::QueueRef queue = quota_tree_.RefOf(v->cluster_queue);
    TreeVictims& in_tree = victims_in[quota_tree_.RootOf(queue)];
    in_tree.list.push_back({queue, v});
    in_tree.usage.Add(queue, v->UsageIds(quota_tree_));
  };
  static const TreeVictims kNoVictims;
  auto victims_of = [&](QuotaTree::QueueRef root) -> const TreeVictims& {
    auto it = victims_in.find(root);
    return it == victims_in.end() ? kNoVictims : it->second;
  };
  auto simulate_removal = [&](const std::vector<Victim>& victims, int sign) {
    for (const Victim& v : victims) {
      quota_tree_.AddUsage(v.queue, v.entry->UsageIds(quota_tree_), -sign);
    }
  };
  auto overlaps = [&](const std::vector<Target>& targets) {
    for (const Target& t : targets) {
      if (preempted.count(t.entry->key())) return true;
    }
    return false;
  };
  // Whether the assignment's usage fits with `victims` and `also_gone` simulated removed.
  auto fits_without = [&](const ClusterQueueState& cq, const Assignment& a,
                          const QuotaTree::UsageSum& victims,
                          const std::vector<Victim>& also_gone) {
    quota_tree_.AddUsage(victims, -1);
    simulate_removal(also_gone, +1);
    bool ok = true;
    const QuotaTree::QueueRef queue = quota_tree_.RefOf(cq.name());
    for (const auto& [fr, v] : a.usage) {
      ok = ok && v <= quota_tree_.Available(queue, quota_tree_.PairId(fr.first, fr.second));
    }
    simulate_removal(also_gone, -1);
    quota_tree_.AddUsage(victims, +1);
    return ok;
  };
  // §6.5.7: with this cycle's victims and the entry's own targets gone, does its usage fit?
  auto fits_after = [&](const ClusterQueueState& cq, QuotaTree::QueueRef root, const Assignment& a,
                        const std::vector<Target>& targets, WorkloadEntry* replaced) {
    std::vector<Victim> gone;
    for (const Target& t : targets) {
      if (!preempted.count(t.entry->key())) {
        gone.push_back({quota_tree_.RefOf(t.entry->cluster_queue), t.entry});
      }
    }
    // A slice is checked for what it adds: the slice it replaces counts as gone (§13.3).
    if (WorkloadEntry* old = replaced; old != nullptr && !preempted.count(old->key())) {
      gone.push_back({quota_tree_.RefOf(old->cluster_queue), old});
    }
    return fits_without(cq, a, victims_of(root).usage, gone);
  };
  // An entry admitted now must also fit the quota as it is held now: this cycle's victims keep
  // theirs until they are released, and the preemptors and reservations of the cycle hold
  // nothing yet. (Kueue checks only the state after the preemptions, so while a victim larger
  // than its preemptor is being released, entries admitted beside them could take more than the
  // quota; see docs/semantics.md.) Without victims in its tree this cycle, the check above
  // implies this one.
  auto fits_now = [&](const ClusterQueueState& cq, QuotaTree::QueueRef root, const Assignment& a,
                      WorkloadEntry* replaced) {
    if (victims_of(root).list.empty()) return true;
    const std::vector<size_t>& added = cycle_usage_in[root];
    for (size_t i : added) quota_tree_.AddUsage(cycle_usage[i].queue, cycle_usage[i].usage, -1);
    std::vector<Victim> gone;
    if (replaced != nullptr && !preempted.count(replaced->key())) {
      gone.push_back({quota_tree_.RefOf(replaced->cluster_queue), replaced});
    }
    const bool ok = fits_without(cq, a, kNoVictims.usage, gone);
    for (size_t i : added) quota_tree_.AddUsage(cycle_usage[i].queue, cycle_usage[i].usage, +1);
    return ok;
  };

  enum class Requeue { kNoFit, kNoCandidates, kAfterNomination, kPendingPreemption };
  size_t in_order = 0;
  auto next_head = [&]() -> Head* {
    if (tournament.has_value()) {
      const int i = tournament->Next();
      return i < 0 ? nullptr : &nominated[static_cast<size_t>(i)];
    }
    return in_order < nominated.size() ? &nominated[in_order++] : nullptr;
  };
  while (Head* const next = next_head()) {
    Head& head = *next;
    ClusterQueueState& cq = *head.cq;
    WorkloadEntry& entry = *head.entry;
    bool deferred_fit = false;
    bool recomputed = false;
    bool issued_preemption = false;
    const QuotaTree::QueueRef root = quota_tree_.RootOf(quota_tree_.RefOf(cq.name()));
    if (overlaps(head.targets)) {
      recomputed = true;
      // §6.5.1: recompute as if the other preemptions of this cycle had completed: their
      // victims leave the snapshot, usage and all, so they are no candidates either; the
      // flavors of the nomination are kept.
      const TreeVictims& gone = victims_of(root);
      quota_tree_.AddUsage(gone.usage, -1);
      for (const Victim& v : gone.list) v.entry->simulated_gone = true;
      entry.last_assignment.reset();
      const NominatedFlavors nominated = head.assignment.flavors;
      head.assignment = AssignWithTargets(cq, entry, flavors, &head.targets, &nominated);
      for (const Victim& v : gone.list) v.entry->simulated_gone = false;
      quota_tree_.AddUsage(gone.usage, +1);
      deferred_fit = head.assignment.fits;
    }
    const Assignment& assignment = head.assignment;
    Requeue requeue = Requeue::kAfterNomination;
    std::string reason, message;
    if (!assignment.fits && !assignment.preempt) {
      requeue = Requeue::kNoFit;
      reason = assignment.reason;
      message = assignment.message;
    } else if (assignment.preempt && head.targets.empty()) {
      requeue = Requeue::kNoCandidates;
      reason = kReasonWaitingForQuota;
      message = assignment.message;
      // §6.5.3: unless the queue can always reclaim, hold back what it would get so that
      // lower-ordered entries of the cohort cannot take it in this cycle.
      if (cq.spec_object().spec().preemption().reclaim_within_cohort() != "Any") {
        FlavorResourceQuantities reserve;
        for (const auto& [fr, v] : assignment.usage) {
          const Amount used = quota_tree_.Usage(cq.name(), fr);
          const Amount nominal = quota_tree_.Nominal(cq.name(), fr);
          // Each bound is at most v, so it is a quantity again.
          if (assignment.borrowing_level > 0) {
            const auto limit = quota_tree_.BorrowingLimit(cq.name(), fr);
            reserve[fr] = limit.has_value()
                              ? static_cast<int64_t>(std::min<Amount>(v, nominal + *limit - used))
                              : v;
          } else {
            reserve[fr] = static_cast<int64_t>(std::max<Amount>(0, std::min<Amount>(v, nominal - used)));
          }
        }
        add_cycle_usage(cq.name(), reserve);
      }
    } else if (deferred_fit) {
      requeue = Requeue::kPendingPreemption;
      reason = kReasonWaitingForPreemptedWorkloads;
      message =
          "Workload has overlapping preemption targets with another workload, but will fit "
          "after these preemptions complete";
      entry.last_assignment.reset();
      add_cycle_usage(cq.name(), assignment.usage);
    } else if (overlaps(head.targets)) {
      reason = kReasonWaitingForQuota;
      message = "Workload has overlapping preemption targets with another workload";
      ++stats.preemption_skips[cq.name()];
    } else if (!fits_after(cq, root, assignment, head.targets, ReplacedSlice(entry, cq)) ||
               (!assignment.preempt &&
                !fits_now(cq, root, assignment, ReplacedSlice(entry, cq)))) {
      reason = kReasonWaitingForQuota;
      message = "Workload no longer fits after processing another workload";
      if (assignment.preempt) ++stats.preemption_skips[cq.name()];
    } else if (assignment.preempt) {
      for (const Target& t : head.targets) add_victim(t.entry);
      add_cycle_usage(cq.name(), assignment.usage);
      for (const Target& t : head.targets) {
        // An already evicted victim counts as preempted: its quota comes back on release.
        if (!IsConditionTrue(t.entry->object(), kEvicted)) Preempt(*t.entry, entry, t.reason, now);
      }
      entry.last_assignment.reset();
      requeue = Requeue::kPendingPreemption;
      reason = kReasonWaitingForPreemptedWorkloads;
      message = absl::StrCat(assignment.message, ". Pending the preemption of ",
                             head.targets.size(), " workload(s)");
      issued_preemption = true;
    } else if (options_.wait_for_pods_ready.enabled &&
               options_.wait_for_pods_ready.block_admission && !not_ready_.empty()) {
      // §21.7: while a workload holds quota without its pods ready, nothing is admitted. Kueue
      // holds its scheduler until then; here the entry keeps its place at the head of its
      // queue, its quota held for this cycle, and is tried again once a workload gets ready.
      reason = kReasonWaitingForPodsReady;
      message = "waiting for all admitted workloads to be in PodsReady condition";
      add_cycle_usage(cq.name(), assignment.usage);
    } else {
      entry.reserved_cycle = cycle_;
      if (cq.sticky == entry.key()) cq.sticky.clear();
      Admit(entry, cq, assignment, now);
      ++stats.admitted;
      continue;
    }
    if (recomputed) {
      stats.recomputations.emplace_back(cq.name(), deferred_fit        ? "deferred_fit"
                                                   : issued_preemption ? "new_targets"
                                                                       : "skipped");
    }
    MarkPendingAfterAttempt(entry, reason, message, now);
    // Requeue (§5.3).
    bool to_heap;
    if (cq.strict_fifo) {
      to_heap = true;  // stays the head and blocks the queue
    } else {
      to_heap = requeue == Requeue::kAfterNomination || requeue == Requeue::kPendingPreemption ||
                (entry.last_assignment.has_value() && entry.last_assignment->PendingFlavors());
      if (requeue == Requeue::kPendingPreemption) cq.sticky = entry.key();
    }
    entry.where = WorkloadEntry::Where::kQueued;
    if (to_heap) {
      cq.pending.Add(&entry.queue_key, entry.SchedulingHash());
      if (!cq.strict_fifo && (requeue == Requeue::kNoFit || requeue == Requeue::kNoCandidates)) {
        ++retry;  // the next attempt resumes at the next flavor
      }
    } else {
      cq.pending.AddAlone(&entry.queue_key, entry.SchedulingHash());
      ++set_aside;
      if (requeue == Requeue::kNoFit || requeue == Requeue::kNoCandidates) {
        SetAsideShape(cq, entry, reason);  // never in StrictFIFO, which requeues to the heap
      }
    }
  }
  for (auto it = cycle_usage.rbegin(); it != cycle_usage.rend(); ++it) {
    quota_tree_.AddUsage(it->queue, it->usage, -1);
  }
  for (ClusterQueueState* cq : visited) RefreshHeads(*cq);
  // Another cycle can only help where a queue has a head it has not tried yet: after an
  // admission, after a head was set aside, or when a head has flavors left to try. A head that
  // failed otherwise blocks its queue until something changes, so it alone never asks for more.
  in_cycle_ = false;
  // Pod workloads preempted in this cycle whose pods are already inactive give their quota back
  // now, with the cycle's books closed.
  for (const std::string& key : std::exchange(evicted_pod_workloads_, {})) {
    if (workloads_.count(key)) ReconcilePodWorkload(key, now);
  }
  stats.more = (stats.admitted > 0 || set_aside > 0 || retry > 0) && !cqs_with_heads_.empty();
  return stats;
}

}  // namespace admitd::engine
