// Engine: preemption while fair sharing is on (§19.6 of the semantics; Kueue's fairPreemptions):
// candidates in the preemptor's ClusterQueue and in every borrowing ClusterQueue of its cohort
// tree, taken queue by queue from the highest share down while a strategy says that taking one
// leaves the preemptor's side no better off than the target's; then the targets not needed are
// put back.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "server/engine/engine_impl.h"
#include "server/engine/preemption_candidates.h"

namespace admitd::engine {
namespace {

using Share = QuotaTree::Share;
using QueueRef = QuotaTree::QueueRef;

bool Strategy(FairPreemptionStrategy s, const Share& preemptor_new, const Share& target_old,
              const Share& target_new) {
  if (s == FairPreemptionStrategy::kLessThanOrEqualToFinalShare) {
    return QuotaTree::CompareShares(preemptor_new, target_new) <= 0;
  }
  return QuotaTree::CompareShares(preemptor_new, target_old) < 0;
}

// Kueue's TargetClusterQueueOrdering: which ClusterQueue to take a candidate from next. The
// candidates of each queue wait in candidate order; a queue leaves the ordering once it no
// longer borrows (unless it is the preemptor's), has no candidate left or is dropped, and a
// cohort once it no longer borrows (unless it is on the preemptor's path) or has nothing left.
class TargetOrdering {
 public:
  TargetOrdering(const QuotaTree& tree, QueueRef preemptor_cq,
                 const std::vector<const Candidate*>& candidates)
      : tree_(tree), preemptor_cq_(preemptor_cq) {
    for (QueueRef a = tree.ParentOf(preemptor_cq); a; a = tree.ParentOf(a)) ancestors_.insert(a);
    for (const Candidate* c : candidates) by_queue_[c->queue].push_back(c);
  }

  // The next target queue, or a null ref when the ordering is done.
  QueueRef Next() {
    if (!tree_.ParentOf(preemptor_cq_)) {
      return pruned_.count(preemptor_cq_) || !HasCandidates(preemptor_cq_) ? QueueRef()
                                                                           : preemptor_cq_;
    }
    const QueueRef root = tree_.RootOf(preemptor_cq_);
    while (!pruned_.count(root)) {
      if (QueueRef target = NextUnder(root)) return target;
    }
    return QueueRef();
  }

  bool HasCandidates(QueueRef cq) const {
    auto it = by_queue_.find(cq);
    return it != by_queue_.end() && !it->second.empty();
  }
  const Candidate* Pop(QueueRef cq) {
    std::deque<const Candidate*>& q = by_queue_[cq];
    const Candidate* c = q.front();
    q.pop_front();
    return c;
  }
  void Drop(QueueRef cq) { pruned_.insert(cq); }
  QueueRef preemptor_cq() const { return preemptor_cq_; }
  bool OnPreemptorPath(QueueRef cohort) const { return ancestors_.count(cohort) > 0; }

 private:
  QueueRef NextUnder(QueueRef cohort) {
    QueueRef best_cq;
    Share best_cq_share = QuotaTree::NegativeShare();
    QueueRef best_cohort;
    Share best_cohort_share = QuotaTree::NegativeShare();
    for (QueueRef child : tree_.ChildrenOf(cohort)) {
      if (pruned_.count(child)) continue;
      Share share = tree_.ShareOf(child);
      if (tree_.IsClusterQueue(child)) {
        if ((!share.borrowing && child != preemptor_cq_) || !HasCandidates(child)) {
          pruned_.insert(child);
          continue;
        }
        const int c = QuotaTree::CompareShares(share, best_cq_share);
        if (c == 0) {
          // Equal shares: the queue whose next candidate comes first in candidate order.
          if (Before(*by_queue_[child].front(), *by_queue_[best_cq].front())) best_cq = child;
        } else if (c > 0) {
          best_cq_share = std::move(share);
          best_cq = child;
        }
      } else {
        if (!share.borrowing && !OnPreemptorPath(child)) {
          pruned_.insert(child);
        } else if (QuotaTree::CompareShares(share, best_cohort_share) >= 0) {
          best_cohort_share = std::move(share);
          best_cohort = child;
        }
      }
    }
    if (!best_cq && !best_cohort) {
      pruned_.insert(cohort);
      return QueueRef();
    }
    if (QuotaTree::CompareShares(best_cohort_share, best_cq_share) >= 0) {
      return NextUnder(best_cohort);
    }
    return best_cq;
  }

  const QuotaTree& tree_;
  const QueueRef preemptor_cq_;
  std::set<QueueRef> ancestors_;
  std::map<QueueRef, std::deque<const Candidate*>> by_queue_;
  std::set<QueueRef> pruned_;  // queues and cohorts
};

// The node below the lowest common ancestor of the preemptor's and the target's queues, on
// `cq`'s side (the queue itself when its parent is that ancestor).
QueueRef AlmostLca(const QuotaTree& tree, const TargetOrdering& ordering, QueueRef target,
                   QueueRef cq) {
  QueueRef lca;
  for (QueueRef a = tree.ParentOf(target); a; a = tree.ParentOf(a)) {
    if (ordering.OnPreemptorPath(a)) {
      lca = a;
      break;
    }
  }
  QueueRef below = cq;
  for (QueueRef a = tree.ParentOf(cq); a && a != lca; a = tree.ParentOf(a)) below = a;
  return below;
}

}  // namespace

std::vector<Target> Engine::Impl::FindFairTargets(const ClusterQueueState& cq,
                                                  const WorkloadEntry& preemptor,
                                                  const FlavorResourceQuantities& requests,
                                                  const std::set<FlavorResource>& needed) {
  const v1::ClusterQueuePreemption& policy = cq.spec_object().spec().preemption();
  const QueueRef own = quota_tree_.RefOf(cq.name());
  if (!own) return {};
  const absl::InlinedVector<int, 4> needed_ids = quota_tree_.PairIds(needed);
  auto eligible = [&](WorkloadEntry& c) {
    // Not reserved in this very cycle, not simulated gone, and using a pair that needs
    // preemption.
    if (c.reserved_cycle == cycle_ || c.simulated_gone) return false;
    for (const auto& [id, v] : c.UsageIds(quota_tree_)) {
      if (std::find(needed_ids.begin(), needed_ids.end(), id) != needed_ids.end()) return true;
    }
    return false;
  };

  // Candidates (Kueue's findCandidates): in the queue by withinClusterQueue, and in every other
  // queue of the tree that borrows on a needed pair by reclaimWithinCohort.
  std::vector<Candidate> found;
  const Policy within_queue = PolicyOf(policy.within_cluster_queue());
  if (within_queue != Policy::kNever) {
    for (const auto& held : cq.reserved) {
      WorkloadEntry& c = *held.second;
      if (eligible(c) && PolicyAllows(within_queue, preemptor, c, c.candidate_keys().priority)) {
        found.push_back(MakeCandidate(&c, QueueRef(), Variant::kWithinQueue, own, false, 0,
                                      static_cast<uint32_t>(found.size())));
        if (UsesAfs(cq.name())) found.back().afs_usage = AfsUsage(LocalQueueKey(c));
      }
    }
  }
  const Policy within_cohort = PolicyOf(policy.reclaim_within_cohort());
  if (quota_tree_.ParentOf(own) && within_cohort != Policy::kNever) {
    for (const std::string& name : quota_tree_.ClusterQueuesUnder(
             quota_tree_.NameOf(quota_tree_.RootOf(own)))) {
      const QueueRef other = quota_tree_.RefOf(name);
      if (other == own || !quota_tree_.BorrowingOnAny(other, needed_ids)) continue;
      const ClusterQueueState* held_in = quota_tree_.Attached(other);
      if (held_in == nullptr) held_in = &cluster_queues_.at(name);
      for (const auto& held : held_in->reserved) {
        WorkloadEntry& c = *held.second;
        if (eligible(c) && PolicyAllows(within_cohort, preemptor, c, c.candidate_keys().priority)) {
          found.push_back(MakeCandidate(&c, QueueRef(), Variant::kFairSharing, other, true, 0,
                                        static_cast<uint32_t>(found.size())));
        }
      }
    }
  }
  if (found.empty()) return {};
  SetUidKeys(&found);
  std::sort(found.begin(), found.end(), Before);
  std::vector<const Candidate*> sorted;
  sorted.reserve(found.size());
  for (const Candidate& c : found) sorted.push_back(&c);

  // The requests by pair id; the shares below are all "with the preemptor admitted".
  std::vector<std::pair<int, int64_t>> asked;
  for (const auto& [fr, v] : requests) asked.emplace_back(quota_tree_.InternPair(fr), v);
  auto fits = [&]() {  // request <= Available for every pair, borrowing allowed
    for (const auto& [id, v] : asked) {
      if (v > quota_tree_.Available(own, id)) return false;
    }
    return true;
  };
  auto fits_without_preemptor = [&]() {
    quota_tree_.AddUsage(own, asked, -1);
    const bool ok = fits();
    quota_tree_.AddUsage(own, asked, +1);
    return ok;
  };
  auto remove = [&](const Candidate& c, int sign) {
    quota_tree_.AddUsage(c.queue, c.entry->UsageIds(quota_tree_), -sign);
  };
  struct Taken {
    const Candidate* candidate;
    const char* reason;
  };
  std::vector<Taken> targets;
  auto take = [&](const Candidate* c, const char* reason) {
    remove(*c, +1);
    targets.push_back({c, reason});
    return fits_without_preemptor();
  };

  quota_tree_.AddUsage(own, asked, +1);
  const std::vector<FairPreemptionStrategy>& strategies = options_.fair_preemption_strategies;
  const FairPreemptionStrategy first = strategies.empty()
                                           ? FairPreemptionStrategy::kLessThanOrEqualToFinalShare
                                           : strategies.front();
  // Kueue's FairSharingPreemptWithinNominal (beta, on): a queue within its nominal quota in
  // every needed pair, the preemptor included, reclaims without comparing shares.
  bool within_nominal = true;
  for (int id : needed_ids) {
    within_nominal = within_nominal && quota_tree_.Usage(own, id) <= quota_tree_.Nominal(own, id);
  }
  bool fit = false;
  std::vector<const Candidate*> retry;
  {
    TargetOrdering ordering(quota_tree_, own, sorted);
    while (!fit) {
      const QueueRef target = ordering.Next();
      if (!target) break;
      if (target == own) {
        fit = take(ordering.Pop(target), "InClusterQueue");
        continue;
      }
      if (within_nominal) {
        fit = take(ordering.Pop(target), "InCohortReclamation");
        continue;
      }
      const Share preemptor_new = quota_tree_.ShareOf(AlmostLca(quota_tree_, ordering, target, own));
      const QueueRef target_side = AlmostLca(quota_tree_, ordering, target, target);
      const Share target_old = quota_tree_.ShareOf(target_side);
      if (std::isinf(preemptor_new.Precise()) && !std::isinf(target_old.Precise())) {
        // No candidate of this queue can pass either strategy: kept for the second one.
        while (ordering.HasCandidates(target)) retry.push_back(ordering.Pop(target));
        continue;
      }
      while (ordering.HasCandidates(target)) {
        const Candidate* c = ordering.Pop(target);
        remove(*c, +1);
        const Share target_new = quota_tree_.ShareOf(target_side);
        remove(*c, -1);
        if (!Strategy(first, preemptor_new, target_old, target_new)) {
          retry.push_back(c);
          continue;
        }
        fit = take(c, "InCohortFairSharing");
        break;  // shares changed: back to the ordering
      }
    }
  }
  if (!fit && strategies.size() > 1) {
    // The second strategy (LessThanInitialShare) over what the first passed over: at most one
    // target per queue.
    TargetOrdering ordering(quota_tree_, own, retry);
    while (!fit) {
      const QueueRef target = ordering.Next();
      if (!target) break;
      const Share preemptor_new = quota_tree_.ShareOf(AlmostLca(quota_tree_, ordering, target, own));
      const Share target_old =
          quota_tree_.ShareOf(AlmostLca(quota_tree_, ordering, target, target));
      const Candidate* c = ordering.Pop(target);
      if (Strategy(FairPreemptionStrategy::kLessThanInitialShare, preemptor_new, target_old,
                   target_old)) {
        fit = take(c, "InCohortFairSharing");
      }
      ordering.Drop(target);
    }
  }
  quota_tree_.AddUsage(own, asked, -1);
  if (!fit) {
    for (const Taken& t : targets) remove(*t.candidate, -1);
    return {};
  }
  // Put back, newest but one first, each target the preemptor still fits without.
  for (size_t i = targets.size() - 1; i-- > 0;) {
    remove(*targets[i].candidate, -1);
    if (fits()) {
      targets[i] = targets.back();
      targets.pop_back();
    } else {
      remove(*targets[i].candidate, +1);
    }
  }
  std::vector<Target> out;
  out.reserve(targets.size());
  for (const Taken& t : targets) {
    remove(*t.candidate, -1);
    out.push_back({t.candidate->entry, t.reason});
  }
  return out;
}

}  // namespace admitd::engine
