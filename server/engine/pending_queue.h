// PendingQueue: the pending workloads of one ClusterQueue (§5). Active workloads give heads, in
// Kueue's queue order (§5.2: priority, then queue-order time, then UID); inadmissible ones wait
// for a requeue event (§5.3).
//
// Active workloads are kept in groups of one scheduling shape (§5.4), and the queue's order is
// the order of each group's first workload. A shape that failed is set aside in one step, and
// requeued in one step, however many workloads share it: the cost of a cycle does not grow with
// the equivalent workloads behind a failed head.
//
// The queue holds pointers to the QueueKeys of the engine's workload entries (whose nodes never
// move); a key must not change while queued. Thread safety: none; owned by its ClusterQueue.
#ifndef ADMITD_SERVER_ENGINE_PENDING_QUEUE_H_
#define ADMITD_SERVER_ENGINE_PENDING_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"

namespace admitd::engine {

struct WorkloadEntry;

// Where a pending workload sorts in its ClusterQueue.
struct QueueKey {
  // Admission fair sharing (§20.3): the LocalQueue's usage, compared before everything else in
  // a ClusterQueue that uses it (0 in every other).
  double afs_usage = 0;
  int32_t priority = 0;
  absl::Time timestamp;
  std::string uid;
  std::string key;  // namespace/name, the tie breaker of last resort
  // The workload itself (an entry of the engine's workload map, whose nodes never move); not
  // part of the order.
  WorkloadEntry* entry = nullptr;

  // PendingQueue's bookkeeping, not part of the order: the shape it was queued with, and
  // whether it is queued in its shape's group or set aside on its own.
  uint64_t shape = 0;
  enum class In : uint8_t { kNone, kGroup, kAlone } in = In::kNone;

  bool operator<(const QueueKey& o) const {
    if (afs_usage != o.afs_usage) return afs_usage < o.afs_usage;
    if (priority != o.priority) return priority > o.priority;
    if (timestamp != o.timestamp) return timestamp < o.timestamp;
    if (uid != o.uid) return uid < o.uid;
    return key < o.key;
  }
};

class PendingQueue {
 public:
  // Queues a workload with its shape: active, unless its shape is set aside (then it waits
  // with the shape). Returns whether it is active. `key` must not be queued already.
  bool Add(QueueKey* key, uint64_t shape);
  // Queues a workload as inadmissible on its own (its shape stays as it is).
  void AddAlone(QueueKey* key, uint64_t shape);
  // Takes a workload out, wherever it waits; nothing when it is not queued.
  void Remove(QueueKey* key);
  // Changes a queued workload's place in the order (`change` edits its key), keeping it where it
  // waits: active, with its set-aside shape, or alone.
  template <typename F>
  void Rekey(QueueKey* key, F change) {
    if (key->in != QueueKey::In::kGroup) {  // not queued, or alone (unordered)
      change(key);
      return;
    }
    const uint64_t shape = key->shape;
    Remove(key);
    change(key);
    Add(key, shape);
  }

  // The first active workload, or nullptr.
  QueueKey* Front() const { return fronts_.empty() ? nullptr : *fronts_.begin(); }
  // Whether a queued workload is active (false when it is not queued here).
  bool IsActive(const QueueKey* key) const;

  // Sets every workload of this shape aside, those queued now and those queued later, until
  // RequeueAll, without visiting them; `reason` says why (the failure's). Returns how many were
  // active. A shape already set aside keeps its first reason.
  size_t SetAside(uint64_t shape, std::string reason);
  bool IsSetAside(uint64_t shape) const;
  // Why the shape is set aside, or nullptr when it is not.
  const std::string* SetAsideReason(uint64_t shape) const;
  bool AnySetAside() const { return !set_aside_.empty(); }
  // Every inadmissible workload becomes active again, and no shape is set aside.
  void RequeueAll();

  size_t active() const { return active_; }
  size_t inadmissible() const { return inadmissible_; }
  bool empty() const { return active_ == 0 && inadmissible_ == 0; }
  // Every queued workload: the active ones in queue order, then the inadmissible ones in queue
  // order.
  std::vector<QueueKey*> InOrder() const;
  // Calls f(const QueueKey&) for every queued workload, in no particular order.
  template <typename F>
  void ForEach(F f) const {
    for (const auto& [shape, group] : groups_) {
      for (const QueueKey* k : group.members) f(*k);
    }
    for (const QueueKey* k : alone_) f(*k);
  }

 private:
  struct ByOrder {
    bool operator()(const QueueKey* a, const QueueKey* b) const { return *a < *b; }
  };
  using Ordered = std::set<QueueKey*, ByOrder>;
  struct Group {
    Ordered members;
    bool set_aside = false;
    std::string reason;  // while set aside
  };

  // Every shape with queued workloads, and every shape set aside (possibly with none).
  absl::flat_hash_map<uint64_t, Group> groups_;
  Ordered fronts_;                     // the first workload of every group not set aside
  absl::flat_hash_set<QueueKey*> alone_;  // inadmissible on their own
  std::vector<uint64_t> set_aside_;    // the shapes set aside, in the order they were
  size_t active_ = 0;
  size_t inadmissible_ = 0;
};

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_PENDING_QUEUE_H_
