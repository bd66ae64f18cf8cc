// FairTournament: the order in which a scheduling cycle takes its nominated heads while fair
// sharing is on (§19.5 of the semantics; Kueue's fair sharing iterator). Each call picks the
// next head: one from a ClusterQueue without a cohort as it comes, otherwise the winner of a
// tournament over the head's cohort tree, where each cohort's children compete with the share
// they would have with their candidate admitted: a child that would not borrow on what its
// candidate asks for first, then the lower dominant resource share, the higher priority, the
// earlier queue-order time.
//
//   FairTournament order(&tree, contenders);
//   for (int i; (i = order.Next()) >= 0;) process(heads[i]);  // admissions change the tree
//
// Shares are computed again at every call, from the tree as the cycle has left it.
//
// Thread safety: none; the tree is the engine's.
#ifndef ADMITD_SERVER_ENGINE_FAIR_TOURNAMENT_H_
#define ADMITD_SERVER_ENGINE_FAIR_TOURNAMENT_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "server/engine/quota_tree.h"
#include "server/engine/resources.h"

namespace admitd::engine {

class FairTournament {
 public:
  struct Contender {
    QuotaTree::QueueRef cluster_queue;
    const FlavorResourceQuantities* usage = nullptr;  // what its admission would add (not null)
    int32_t priority = 0;
    absl::Time queue_time;  // the queue-order timestamp (§5.2)
  };

  // At most one contender per ClusterQueue; `tree` must outlive the tournament.
  FairTournament(QuotaTree* tree, std::vector<Contender> contenders);

  // The index of the next contender, or -1 when every one was taken.
  int Next();

 private:
  // The share a contender's path gives at cohort `at`: that of at's child on the path, with
  // the contender admitted.
  struct Value {
    QuotaTree::QueueRef at;
    QuotaTree::Share share;
  };
  void ComputeValues(QuotaTree::QueueRef root);
  int Run(QuotaTree::QueueRef cohort);
  const QuotaTree::Share& ValueAt(int contender, QuotaTree::QueueRef cohort) const;
  bool Less(int a, int b, QuotaTree::QueueRef cohort) const;

  QuotaTree* tree_;
  std::vector<Contender> contenders_;
  std::vector<QuotaTree::QueueRef> roots_;  // by contender
  std::vector<bool> taken_;
  std::map<QuotaTree::QueueRef, int> by_queue_;  // contenders not taken yet
  std::vector<std::vector<Value>> values_;       // by contender, from its parent up to the root
};

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_FAIR_TOURNAMENT_H_
