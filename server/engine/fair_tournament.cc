// FairTournament (see fair_tournament.h).
#include "server/engine/fair_tournament.h"

#include <utility>

namespace admitd::engine {

FairTournament::FairTournament(QuotaTree* tree, std::vector<Contender> contenders)
    : tree_(tree), contenders_(std::move(contenders)) {
  roots_.reserve(contenders_.size());
  taken_.assign(contenders_.size(), false);
  values_.resize(contenders_.size());
  for (size_t i = 0; i < contenders_.size(); ++i) {
    roots_.push_back(tree_->RootOf(contenders_[i].cluster_queue));
    by_queue_[contenders_[i].cluster_queue] = static_cast<int>(i);
  }
}

int FairTournament::Next() {
  // Kueue starts from any ClusterQueue left (Go's map order); admitd from the first by name,
  // which only orders trees against each other: within a tree the tournament decides.
  int first = -1;
  for (size_t i = 0; i < contenders_.size() && first < 0; ++i) {
    if (!taken_[i]) first = static_cast<int>(i);
  }
  if (first < 0) return -1;
  int winner = first;
  if (tree_->ParentOf(contenders_[first].cluster_queue)) {
    ComputeValues(roots_[first]);
    winner = Run(roots_[first]);
  }
  taken_[winner] = true;
  by_queue_.erase(contenders_[winner].cluster_queue);
  return winner;
}

void FairTournament::ComputeValues(QuotaTree::QueueRef root) {
  for (size_t i = 0; i < contenders_.size(); ++i) {
    if (taken_[i] || roots_[i] != root) continue;
    const Contender& c = contenders_[i];
    // The shares along the path as they would be with this contender admitted alone.
    tree_->AddUsage(c.cluster_queue, *c.usage, +1);
    std::vector<Value>& values = values_[i];
    values.clear();
    QuotaTree::Share share = tree_->ShareOf(c.cluster_queue);
    for (QuotaTree::QueueRef at = tree_->ParentOf(c.cluster_queue); at; at = tree_->ParentOf(at)) {
      values.push_back({at, std::move(share)});
      share = tree_->ShareOf(at);
    }
    tree_->AddUsage(c.cluster_queue, *c.usage, -1);
  }
}

int FairTournament::Run(QuotaTree::QueueRef cohort) {
  // The winners of the child cohorts, then the contenders of the child ClusterQueues.
  std::vector<int> candidates;
  for (QuotaTree::QueueRef child : tree_->ChildrenOf(cohort)) {
    if (!tree_->IsClusterQueue(child)) {
      if (const int w = Run(child); w >= 0) candidates.push_back(w);
    } else if (auto it = by_queue_.find(child); it != by_queue_.end()) {
      candidates.push_back(it->second);
    }
  }
  if (candidates.empty()) return -1;
  int best = candidates[0];
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (Less(candidates[i], best, cohort)) best = candidates[i];
  }
  return best;
}

const QuotaTree::Share& FairTournament::ValueAt(int contender, QuotaTree::QueueRef cohort) const {
  for (const Value& v : values_[contender]) {
    if (v.at == cohort) return v.share;
  }
  static const QuotaTree::Share kNone;
  return kNone;  // not reached: a contender competes only at its own ancestors
}

bool FairTournament::Less(int a, int b, QuotaTree::QueueRef cohort) const {
  const QuotaTree::Share& sa = ValueAt(a, cohort);
  const QuotaTree::Share& sb = ValueAt(b, cohort);
  // Kueue's FairSharingPrioritizeNonBorrowing (beta, on): a subtree that would not borrow on
  // what its candidate asks for goes first.
  const bool a_borrows = tree_->BorrowsOn(sa, *contenders_[a].usage);
  const bool b_borrows = tree_->BorrowsOn(sb, *contenders_[b].usage);
  if (a_borrows != b_borrows) return !a_borrows;
  if (const int c = QuotaTree::CompareShares(sa, sb); c != 0) return c < 0;
  // PrioritySortingWithinCohort (beta, on).
  if (contenders_[a].priority != contenders_[b].priority) {
    return contenders_[a].priority > contenders_[b].priority;
  }
  return contenders_[a].queue_time < contenders_[b].queue_time;
}

}  // namespace admitd::engine
