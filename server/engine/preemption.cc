// Engine: classical preemption (§7 of the semantics): candidates within the ClusterQueue and,
// walking the cohort tree, in queues that use more than their nominal quota; Kueue's candidate
// order; the minimal-set search; and the conditions a victim gets.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/preemption_candidates.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

const char* VariantReason(Variant v) {
  switch (v) {
    case Variant::kWithinQueue: return "InClusterQueue";
    case Variant::kReclaimWhileBorrowing: return "InCohortReclaimWhileBorrowing";
    default: return "InCohortReclamation";
  }
}

bool BorrowWithinCohortForbidden(const v1::ClusterQueuePreemption& policy) {
  const std::string& p = policy.borrow_within_cohort().policy();
  return p.empty() || p == "Never";
}

}  // namespace

std::vector<Target> Engine::Impl::FindTargets(const ClusterQueueState& cq,
                                              const WorkloadEntry& preemptor,
                                              const FlavorResourceQuantities& requests,
                                              const std::set<FlavorResource>& needed) {
  if (options_.fair_sharing) return FindFairTargets(cq, preemptor, requests, needed);
  const v1::ClusterQueuePreemption& policy = cq.spec_object().spec().preemption();
  const std::string& own = cq.name();
  const absl::InlinedVector<int, 4> needed_ids = quota_tree_.PairIds(needed);
  auto uses_needed = [&](WorkloadEntry& c) {
    for (const auto& [id, v] : c.UsageIds(quota_tree_)) {
      if (std::find(needed_ids.begin(), needed_ids.end(), id) != needed_ids.end()) return true;
    }
    return false;
  };
  auto eligible = [&](WorkloadEntry& c) {
    // A workload reserved in this very cycle is not in the cycle's snapshot, nor is one
    // simulated gone.
    return c.reserved_cycle != cycle_ && !c.simulated_gone && uses_needed(c);
  };
  const bool bwc_forbidden = BorrowWithinCohortForbidden(policy);
  const Policy within_queue = PolicyOf(policy.within_cluster_queue());
  const Policy within_cohort = PolicyOf(policy.reclaim_within_cohort());
  auto classify = [&](WorkloadEntry& c, bool advantage) {
    const int32_t cp = c.candidate_keys().priority;
    if (!PolicyAllows(within_cohort, preemptor, c, cp)) return Variant::kNever;
    if (advantage) return Variant::kHierarchical;
    if (bwc_forbidden) return Variant::kReclaimWithoutBorrowing;
    const int32_t pp = preemptor.object().spec().priority();
    const v1::BorrowWithinCohort& bwc = policy.borrow_within_cohort();
    if (cp >= pp || (bwc.has_max_priority_threshold() && cp > bwc.max_priority_threshold())) {
      return Variant::kReclaimWithoutBorrowing;
    }
    return Variant::kReclaimWhileBorrowing;
  };

  std::vector<Candidate> found;
  size_t hierarchy = 0, priority = 0;  // candidates of those classes
  auto add = [&](WorkloadEntry& c, QuotaTree::QueueRef lca, Variant v, QuotaTree::QueueRef ref,
                 bool other_queue, uint8_t rank) {
    found.push_back(MakeCandidate(&c, lca, v, ref, other_queue, rank,
                                  static_cast<uint32_t>(found.size())));
  };
  const QuotaTree::QueueRef own_ref = quota_tree_.RefOf(own);
  const bool afs = UsesAfs(own);
  if (within_queue != Policy::kNever) {
    for (const auto& held : cq.reserved) {
      WorkloadEntry& c = *held.second;
      if (eligible(c) && PolicyAllows(within_queue, preemptor, c, c.candidate_keys().priority)) {
        add(c, QuotaTree::QueueRef(), Variant::kWithinQueue, own_ref, false, 2);
        if (afs) found.back().afs_usage = AfsUsage(LocalQueueKey(c));
      }
    }
  }
  std::vector<QuotaTree::ReclaimScope> scopes;
  if (within_cohort != Policy::kNever) {
    scopes = quota_tree_.ReclaimScopes(own, requests, needed);
    for (const QuotaTree::ReclaimScope& scope : scopes) {
      const QuotaTree::QueueRef ref = scope.queue;
      const bool other_queue = ref != own_ref;
      const ClusterQueueState* held_in = quota_tree_.Attached(ref);
      if (held_in == nullptr) held_in = &cluster_queues_.at(quota_tree_.NameOf(ref));
      for (const auto& held : held_in->reserved) {
        WorkloadEntry& c = *held.second;
        if (!eligible(c)) continue;
        const Variant v = classify(c, scope.advantage);
        if (v == Variant::kNever) continue;
        const bool in_hierarchy = v == Variant::kHierarchical;
        ++(in_hierarchy ? hierarchy : priority);
        add(c, scope.lca, v, ref, other_queue, in_hierarchy ? 0 : 1);
      }
    }
  }
  if (found.empty()) return {};

  // The pairs asked for, looked up once: the search below checks them after every removal.
  std::vector<std::pair<int, int64_t>> asked;
  for (const auto& [fr, v] : requests) asked.emplace_back(quota_tree_.PairId(fr), v);
  auto fits = [&](bool allow_borrowing) {
    for (const auto& [id, v] : asked) {
      if (!allow_borrowing &&
          quota_tree_.Usage(own_ref, id) + v > quota_tree_.Nominal(own_ref, id)) {
        return false;
      }
      if (v > quota_tree_.Available(own_ref, id)) return false;
    }
    return true;
  };
  auto valid = [&](const Candidate& c, bool allow_borrowing) {
    if (!c.other_queue) return true;
    if (allow_borrowing && c.variant == Variant::kReclaimWithoutBorrowing) return false;
    // Earlier removals may have brought its queue (or a cohort on the way) back within quota.
    return quota_tree_.StillReclaimable(c.queue, c.lca, needed_ids);
  };
  auto remove = [&](const Candidate& c, int sign) {
    quota_tree_.AddUsage(c.queue, c.entry->UsageIds(quota_tree_), -sign);
  };

  // No attempt below can free more than every candidate at once, and less usage never leaves
  // less room: when the request does not fit with all of them gone, no set of them makes it fit,
  // and they need no ordering. They are taken out queue by queue, summed.
  QuotaTree::UsageSum all;
  for (const Candidate& c : found) all.Add(c.queue, c.entry->UsageIds(quota_tree_));
  quota_tree_.AddUsage(all, -1);
  const bool possible = fits(/*allow_borrowing=*/true);
  quota_tree_.AddUsage(all, +1);
  if (!possible) return {};
  SetUidKeys(&found);
  CandidateOrder candidates(std::move(found));

  // The minimal set search (§7.5): which "allow the preemptor to borrow" settings to try.
  std::vector<bool> attempts;
  if ((hierarchy == 0 && priority == 0) ||
      (bwc_forbidden && !quota_tree_.UnderNominal(own, needed))) {
    attempts = {true};
  } else if (bwc_forbidden && hierarchy == 0) {
    attempts = {false, true};
  } else {
    attempts = {true, false};
  }
  for (bool allow_borrowing : attempts) {
    std::vector<const Candidate*> removed;
    for (size_t i = 0; const Candidate* next = candidates.at(i); ++i) {
      const Candidate& c = *next;
      if (!valid(c, allow_borrowing)) continue;
      remove(c, +1);
      removed.push_back(&c);
      if (!fits(allow_borrowing)) continue;
      // Put back earlier removals, newest first, that turn out not to be needed.
      std::vector<const Candidate*> kept = {removed.back()};
      for (size_t i = removed.size() - 1; i-- > 0;) {
        remove(*removed[i], -1);
        if (fits(allow_borrowing)) continue;
        remove(*removed[i], +1);
        kept.push_back(removed[i]);
      }
      std::vector<Target> targets;
      for (const Candidate* k : kept) {
        remove(*k, -1);
        targets.push_back({k->entry, VariantReason(k->variant)});
      }
      return targets;
    }
    for (const Candidate* c : removed) remove(*c, -1);
  }
  return {};
}

OracleAnswer Engine::Impl::SimulatePreemption(const ClusterQueueState& cq,
                                              const WorkloadEntry& preemptor,
                                              const FlavorResource& fr, int64_t value,
                                              std::vector<Target>* found) {
  std::vector<Target> targets = FindTargets(cq, preemptor, {{fr, value}}, {fr});
  if (found != nullptr) *found = targets;
  OracleAnswer answer;
  if (targets.empty()) {
    answer.possibility = OracleAnswer::Possibility::kNoCandidates;
    answer.borrowing_level = quota_tree_.BorrowingLevel(cq.name(), fr, value);
    return answer;
  }
  for (const Target& t : targets) quota_tree_.AddUsage(t.entry->cluster_queue, t.entry->usage(), -1);
  answer.borrowing_level = quota_tree_.BorrowingLevel(cq.name(), fr, value);
  for (const Target& t : targets) quota_tree_.AddUsage(t.entry->cluster_queue, t.entry->usage(), +1);
  answer.possibility = OracleAnswer::Possibility::kReclaim;
  for (const Target& t : targets) {
    if (t.entry->cluster_queue == cq.name()) answer.possibility = OracleAnswer::Possibility::kPreempt;
  }
  return answer;
}

void Engine::Impl::Preempt(WorkloadEntry& victim, const WorkloadEntry& preemptor,
                           const std::string& reason, absl::Time now) {
  const char* human = reason == "InClusterQueue"                  ? "prioritization in the ClusterQueue"
                      : reason == "InCohortReclaimWhileBorrowing" ? "reclamation within the cohort while borrowing"
                      : reason == "InCohortFairSharing"           ? "Fair Sharing within the cohort"
                                                                  : "reclamation within the cohort";
  auto job_uid = preemptor.object().metadata().labels().find("kueue.x-k8s.io/job-uid");
  const std::string uid = preemptor.object().metadata().uid();
  const std::string message = absl::StrCat(
      "Preempted to accommodate a workload (UID: ", uid.empty() ? "UNKNOWN" : uid, ", JobUID: ",
      job_uid == preemptor.object().metadata().labels().end() ? "UNKNOWN" : job_uid->second,
      ") due to ", human, "; preemptor path: ", quota_tree_.Path(preemptor.cluster_queue),
      "; preemptee path: ", quota_tree_.Path(victim.cluster_queue));
  Evict(victim, "Preempted", message, now);
  SetCondition(&victim.mutable_object(), kPreempted, true, reason, message, now);
  // Effective priority is the priority: admitd has no priority boost.
  const int32_t p = preemptor.object().spec().priority(), v = victim.object().spec().priority();
  const std::string priorities =
      absl::StrCat("; preemptor effective priority: ", p, " (base: ", p,
                   ", boost: 0); preemptee effective priority: ", v, " (base: ", v, ", boost: 0)");
  RecordEvent(victim, EventType::kNormal, "Preempted", "Preempted",
              absl::StrCat(message, priorities), now);
  RecordEvent(preemptor, EventType::kNormal, "PreemptedWorkload", "PreemptedWorkload",
              absl::StrCat("Preempted workload ", victim.key(), " (UID: ",
                           victim.object().metadata().uid(), ") in ClusterQueue ",
                           victim.cluster_queue, priorities),
              now);
}

}  // namespace admitd::engine
