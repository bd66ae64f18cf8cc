// Preemption candidates (§7.2–§7.4 of the semantics), shared by the classical search
// (preemption.cc) and fair sharing's (preemption_fair.cc): the preemption policies, a
// candidate with Kueue's ordering keys packed once, and an order settled only as far as a
// search reads it.
#ifndef ADMITD_SERVER_ENGINE_PREEMPTION_CANDIDATES_H_
#define ADMITD_SERVER_ENGINE_PREEMPTION_CANDIDATES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "server/engine/quota_tree.h"
#include "server/engine/workload_entry.h"

namespace admitd::engine {

// How a candidate may be preempted (§7.3).
enum class Variant { kNever, kWithinQueue, kHierarchical, kReclaimWithoutBorrowing,
                     kReclaimWhileBorrowing, kFairSharing };

// A preemption policy's value (§7.2), read once per search instead of once per candidate.
enum class Policy { kNever, kAny, kLowerPriority, kLowerOrNewerEqualPriority };

Policy PolicyOf(const std::string& policy);

// Whether `policy` lets preemptor P take candidate C's quota (§7.2); `cp` is C's priority.
bool PolicyAllows(Policy policy, const WorkloadEntry& p, const WorkloadEntry& c, int32_t cp);

struct Candidate {
  WorkloadEntry* entry;
  QuotaTree::QueueRef lca;  // for candidates of other queues: where the tree walk found them
  Variant variant;
  QuotaTree::QueueRef queue;  // its ClusterQueue in the quota tree
  bool other_queue = false;
  // The candidate order's keys (§7.4), packed once instead of read on every comparison: evicted,
  // class rank (Kueue concatenates the classes as hierarchy 0, other queues by priority 1, own
  // queue 2; fair sharing sorts them all as one class), other queue and priority in one word;
  // the reservation time as nanoseconds inverted (later first); the UID's first bytes; and
  // `index`, the order candidates were found in, for what the keys leave tied. The UID bytes are
  // those after the prefix every candidate's UID shares (UIDs admitd makes differ only in their
  // last 12 characters).
  uint64_t major = 0;
  // Admission fair sharing (§20.3): the usage of the candidate's LocalQueue, for candidates of
  // the preemptor's own ClusterQueue when it uses it (higher first, before priority); else 0.
  double afs_usage = 0;
  int64_t later_first = 0;
  uint64_t uid_prefix = 0;
  uint32_t index = 0;
};

// The candidate order (§7.4) within each class, and Kueue's concatenation of the classes:
// evicted candidates of every class first, then the rest, each as hierarchy, other queues, own
// queue. A strict total order (`index` breaks the last ties).
bool Before(const Candidate& a, const Candidate& b);

Candidate MakeCandidate(WorkloadEntry* entry, QuotaTree::QueueRef lca, Variant variant,
                        QuotaTree::QueueRef queue, bool other_queue, uint8_t rank,
                        uint32_t index);

// Fills each candidate's uid_prefix: the 8 bytes of its UID (big-endian, zero-padded) after
// the prefix all the candidates' UIDs share. Comparing those compares the UIDs as strings as far
// as they go, and they tell apart what the other keys leave tied without reading the strings.
// `candidates` must not be empty.
void SetUidKeys(std::vector<Candidate>* candidates);

// The candidates in Before order, ordered only as far as the search reads them: a search that
// succeeds usually stops after a few candidates, so the order is settled a chunk at a time, each
// chunk the smallest of what is left (nth_element) sorted on its own, chunks doubling in size;
// reading k of n candidates costs about n log k instead of the n log n of sorting them all (a
// search that fails reads them all).
class CandidateOrder {
 public:
  explicit CandidateOrder(std::vector<Candidate> candidates) : all_(std::move(candidates)) {
    order_.reserve(all_.size());
    for (const Candidate& c : all_) order_.push_back(&c);
  }
  // The i-th candidate, or nullptr past the last.
  const Candidate* at(size_t i) {
    while (sorted_ <= i && sorted_ < order_.size()) {
      const size_t chunk = std::min(order_.size() - sorted_, std::max(kFirstChunk, sorted_));
      const auto from = order_.begin() + static_cast<std::ptrdiff_t>(sorted_);
      const auto to = from + static_cast<std::ptrdiff_t>(chunk);
      if (to != order_.end()) std::nth_element(from, to, order_.end(), Less);
      std::sort(from, to, Less);
      sorted_ += chunk;
    }
    return i < sorted_ ? order_[i] : nullptr;
  }

 private:
  static constexpr size_t kFirstChunk = 16;
  static bool Less(const Candidate* a, const Candidate* b) { return Before(*a, *b); }
  const std::vector<Candidate> all_;
  std::vector<const Candidate*> order_;  // [0, sorted_) in Before order, the rest after them
  size_t sorted_ = 0;
};

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_PREEMPTION_CANDIDATES_H_
