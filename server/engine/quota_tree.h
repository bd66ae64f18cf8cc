// QuotaTree: ClusterQueues and cohorts as a tree, with the quota formulas of §3 of the
// semantics: subtree quota, local (unlendable) quota, usage that lands in the parent only beyond
// a node's local quota, available quota bounded by borrowing limits, and the potential quota a
// queue could ever use.
//
// ClusterQueues are leaves. A cohort exists as soon as a ClusterQueue names it; a Cohort object
// adds a parent and quota of its own. Usage changes are applied incrementally (AddUsage), so
// admission and release cost the height of the tree; Rebuild re-derives the structure and
// quotas when ClusterQueues or Cohorts change.
//
//   tree.Rebuild(cluster_queues, cohorts);
//   Amount free = tree.Available("team-a", {"default", "cpu"});
//   tree.AddUsage("team-a", usage, +1);
//
// Thread safety: none; owned by the Engine.
#ifndef ADMITD_SERVER_ENGINE_QUOTA_TREE_H_
#define ADMITD_SERVER_ENGINE_QUOTA_TREE_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/resources.h"

namespace admitd::engine {

struct ClusterQueueState;

class QuotaTree {
  struct Node;

 public:
  // Rebuilds the tree from every ClusterQueue (name -> spec) and Cohort object (name -> spec),
  // keeping each ClusterQueue's usage (`usage` by ClusterQueue name).
  void Rebuild(const std::map<std::string, const v1::ClusterQueueSpec*>& cluster_queues,
               const std::map<std::string, const v1::CohortSpec*>& cohorts,
               const std::map<std::string, FlavorResourceAmounts>& usage);

  // Adds or updates one ClusterQueue (`spec`; null removes it) with its `usage`, re-deriving
  // only the tree it leaves and the tree it joins: what Rebuild would give, at the cost of those
  // trees instead of all of them. Their generations move.
  void SetClusterQueue(const std::string& name, const v1::ClusterQueueSpec* spec,
                       const FlavorResourceAmounts& usage);

  // Quota the ClusterQueue can still use for `fr`, borrowing included; never below 0.
  Amount Available(const std::string& cq, const FlavorResource& fr) const;
  // The most the ClusterQueue could use for `fr` if nothing else used anything.
  Amount PotentialAvailable(const std::string& cq, const FlavorResource& fr) const;
  // 0 when `value` more of `fr` fits in the ClusterQueue's nominal quota (or it has no cohort);
  // otherwise the height of the lowest subtree above it where it fits (§3).
  int BorrowingLevel(const std::string& cq, const FlavorResource& fr, Amount value) const;
  // BorrowingLevel, and whether preempting could free the quota inside a strict subtree of the
  // cohort tree ("may reclaim in hierarchy", §3): true when the lowest subtree that fits has a
  // parent, or, when the request fits in the queue's nominal quota, when the queue has a parent.
  std::pair<int, bool> BorrowingLevelAndReclaim(const std::string& cq, const FlavorResource& fr,
                                                Amount value) const;
  int64_t Nominal(const std::string& cq, const FlavorResource& fr) const;
  Amount Usage(const std::string& cq, const FlavorResource& fr) const;
  // The ClusterQueue's borrowing limit for `fr`, when it has one.
  std::optional<int64_t> BorrowingLimit(const std::string& cq, const FlavorResource& fr) const;

  // For a caller that asks about the same ClusterQueue and pairs many times (the preemption
  // search): the queue and the pairs looked up once. A QueueRef stays valid until the tree's
  // shape changes (Rebuild, SetClusterQueue); an unknown queue gives a null one, and a pair no
  // node ever held the id -1, which read as they would by name.
  class QueueRef {
   public:
    QueueRef() = default;
    explicit operator bool() const { return node_ != nullptr; }
    bool operator==(const QueueRef& o) const { return node_ == o.node_; }
    bool operator!=(const QueueRef& o) const { return node_ != o.node_; }
    bool operator<(const QueueRef& o) const { return std::less<const Node*>()(node_, o.node_); }

   private:
    friend class QuotaTree;
    explicit QueueRef(Node* node) : node_(node) {}
    Node* node_ = nullptr;
  };

  // Other ClusterQueues whose workloads a preemptor in `cq` may reclaim quota from (§7.3): the
  // queues over their nominal quota in a pair of `needed`, found walking the ancestors of `cq`
  // and skipping sub-cohorts within their quota. `advantage` says whether `cq` has the
  // hierarchical advantage over that queue's workloads; `lca` is the ancestor the walk was at.
  struct ReclaimScope {
    QueueRef queue;
    QueueRef lca;  // the ancestor (a cohort) the walk was at
    bool advantage = false;
  };
  std::vector<ReclaimScope> ReclaimScopes(const std::string& cq,
                                          const FlavorResourceQuantities& requests,
                                          const std::set<FlavorResource>& needed) const;
  // Whether `cq` uses less than its nominal quota in every pair of `needed`.
  bool UnderNominal(const std::string& cq, const std::set<FlavorResource>& needed) const;

  // A counter that moves whenever quota or usage changes anywhere in `cq`'s tree (Kueue's
  // AllocatableResourceGeneration): flavor scan progress recorded before it moved is stale.
  uint64_t Generation(const std::string& cq) const;
  void BumpGeneration(const std::string& cq);

  // "/<root cohort>/…/<cq>", or "/<cq>" without a cohort: how preemption messages name queues.
  std::string Path(const std::string& cq) const;
  // The root of the ClusterQueue's tree (itself when it has no cohort).
  std::string Root(const std::string& cq) const;
  // Every cohort, whether a Cohort object or only named by its members.
  std::vector<std::string> CohortNames() const;
  // Every ClusterQueue in the tree rooted at `root`.
  std::vector<std::string> ClusterQueuesUnder(const std::string& root) const;

  // Adds (sign +1) or removes (sign -1) a workload's usage in the ClusterQueue and the part of
  // it that lands in each ancestor.
  void AddUsage(const std::string& cq, const FlavorResourceQuantities& usage, int sign);

  QueueRef RefOf(const std::string& cq) const;
  // The root of the tree `cq` is in (a cohort, or `cq` itself without one).
  QueueRef RootOf(QueueRef cq) const;
  int PairId(const FlavorResource& fr) const { return IdOf(fr); }
  // The same without building the pair's strings.
  int PairId(absl::string_view flavor, absl::string_view resource) const {
    auto it = ids_.find(PairView(flavor, resource));
    return it == ids_.end() ? -1 : it->second;
  }
  // The pair's id, given one if no node ever held it.
  int InternPair(const FlavorResource& fr) { return Intern(fr); }
  absl::InlinedVector<int, 4> PairIds(const std::set<FlavorResource>& frs) const {
    return IdsOf(frs);
  }
  Amount Available(QueueRef cq, int pair) const;
  Amount PotentialAvailable(QueueRef cq, int pair) const;
  std::pair<int, bool> BorrowingLevelAndReclaim(QueueRef cq, int pair, Amount value) const;
  int64_t Nominal(QueueRef cq, int pair) const;
  Amount Usage(QueueRef cq, int pair) const;
  // Whether a workload of `cq` is still a reclaim target: `cq` and every ancestor below `lca`
  // are above their quota in some pair of `needed`.
  bool StillReclaimable(QueueRef cq, QueueRef lca, absl::Span<const int> needed) const;
  // The engine's state of a ClusterQueue, attached to its node so that a walk of the tree reaches
  // it without a lookup by name. Attachments go with the node: Rebuild drops them all.
  void Attach(const std::string& cq, ClusterQueueState* state);
  ClusterQueueState* Attached(QueueRef cq) const {
    return cq.node_ == nullptr ? nullptr : cq.node_->state;
  }
  const std::string& NameOf(QueueRef cq) const { return cq.node_->name; }  // cq not null
  void AddUsage(QueueRef cq, const FlavorResourceQuantities& usage, int sign);
  // The same for usage given by pair id (PairUsage), as a workload entry keeps it.
  void AddUsage(QueueRef cq, absl::Span<const std::pair<int, int64_t>> usage, int sign);

  // The usage of many workloads summed per ClusterQueue and pair, to be added to or taken from
  // the tree at once. What each node holds after a set of usage changes does not depend on their
  // order (what passes a local quota telescopes), so a queue's workloads cost one walk up the
  // tree per pair instead of one per workload and pair.
  class UsageSum {
   public:
    void Add(QueueRef cq, absl::Span<const std::pair<int, int64_t>> usage);

   private:
    friend class QuotaTree;
    struct Sum {
      Node* node;
      int id;
      Amount amount;
    };
    std::vector<Sum> sums_;
    absl::flat_hash_map<std::pair<const Node*, int>, size_t> index_;  // into sums_
  };
  void AddUsage(const UsageSum& usage, int sign);

  // Fair sharing (§19.3, quota_tree_share.cc): a node's dominant resource share, its weight
  // (spec.fairSharing.weight) and whether it borrows.
  struct Share {
    double ratio = 0;      // borrowed / lendable * 1000 of the dominant resource, unweighted
    std::string resource;  // the dominant resource; "" when no borrowed resource has lendable
    bool borrowing = false;
    double weight = 1;
    absl::InlinedVector<int, 4> borrowed_pairs;  // the pair ids it borrows on
    // ratio / weight: 0 when the ratio is, +infinity for weight 0.
    double Precise() const;
    // status.fairSharing.weightedShare: Precise() rounded up, INT64_MAX when infinite.
    int64_t Weighted() const;
  };
  // The share of a ClusterQueue or of a cohort (`cohort` true), as it would be with `request`
  // (may be null) more in use at that node; a node without a parent, or unknown, has share 0.
  Share ShareOf(const std::string& name, bool cohort,
                const FlavorResourceQuantities* request = nullptr) const;
  // Kueue's CompareDRS: negative when `a` comes first for admission (a lower share), positive
  // when `b` does, 0 when equal. A weight-0 node that borrows comes after every other.
  static int CompareShares(const Share& a, const Share& b);
  // Kueue's NegativeDRS: below every share, where a search for the highest starts.
  static Share NegativeShare();

  // Walks of the tree for fair sharing (fair_tournament.cc, preemption_fair.cc), where a
  // QueueRef may also name a cohort: the share of a node with the usage it holds now, its
  // parent (null at a root), whether it is a ClusterQueue, and its children (cohorts first, then
  // ClusterQueues, each by name).
  Share ShareOf(QueueRef node) const { return ShareAt(*node.node_, nullptr); }
  QueueRef ParentOf(QueueRef node) const { return QueueRef(node.node_->parent); }
  bool IsClusterQueue(QueueRef node) const { return node.node_->is_cluster_queue; }
  std::vector<QueueRef> ChildrenOf(QueueRef node) const;
  // Kueue's IsBorrowingOn: whether the node `share` is of borrows on a pair of which `requested`
  // holds more than 0.
  bool BorrowsOn(const Share& share, const FlavorResourceQuantities& requested) const;
  // Whether a ClusterQueue uses more than its nominal quota of some pair of `pairs`.
  bool BorrowingOnAny(QueueRef cq, absl::Span<const int> pairs) const;

 private:
  // What one node holds for one flavor/resource pair. A pair a node never saw reads as zero
  // quota, zero usage and no limits.
  struct Slot {
    int64_t nominal = 0;
    bool has_borrowing_limit = false;  // absent: unlimited
    bool has_lending_limit = false;    // absent: lend everything
    int64_t borrowing_limit = 0;
    int64_t lending_limit = 0;
    Amount subtree_quota = 0;
    Amount local_quota = 0;
    Amount usage = 0;
    // The pair is in the node's resource groups (`own`), or in those of any node of its subtree
    // (`declared`: the keys of Kueue's SubtreeQuota).
    bool own = false;
    bool declared = false;
  };
  struct Node {
    std::string name;
    bool is_cluster_queue = false;
    Node* parent = nullptr;
    std::vector<Node*> children;
    int height = 0;  // distance to the furthest leaf below
    // By pair id (see Intern): a quota check walks the tree indexing vectors instead of looking
    // pairs of names up in maps at every node.
    std::vector<Slot> slots;
    uint64_t generation = 0;  // on roots only
    ClusterQueueState* state = nullptr;  // ClusterQueues: what the engine attached
    bool is_object = false;   // a cohort with a Cohort object (not only named by its members)
    double weight = 1;        // spec.fairSharing.weight

    const Slot& At(int id) const {
      static const Slot kNone;
      return id >= 0 && id < static_cast<int>(slots.size()) ? slots[id] : kNone;
    }
    Slot& Grow(int id) {
      if (id >= static_cast<int>(slots.size())) slots.resize(id + 1);
      return slots[id];
    }
  };

  // The id of a flavor/resource pair, interned on first sight (ids are never reused).
  int Intern(const FlavorResource& fr);
  // Adds `delta` of pair `id` to `node` and what lands beyond each local quota to its parents.
  static void AddPairUsage(Node* node, int id, Amount delta);
  // Its id, or -1 when no node ever held it (every figure of it is then zero).
  int IdOf(const FlavorResource& fr) const;
  absl::InlinedVector<int, 4> IdsOf(const std::set<FlavorResource>& frs) const;
  // Reads a spec's quotas and limits into the node's slots (clearing the old ones).
  void SetQuotas(Node* n, const google::protobuf::RepeatedPtrField<v1::ResourceGroup>& groups);
  // Reads spec.fairSharing's weight (1 when absent or not a quantity).
  static double WeightOf(bool has_fair_sharing, const v1::FairSharing& fs);
  Share ShareAt(const Node& n, const FlavorResourceQuantities* request) const;
  void SetUsage(Node* n, const FlavorResourceAmounts& usage);

  bool WithinNominal(const Node& n, absl::Span<const int> ids) const;
  void CollectReclaimable(const Node& at, const Node* skip, const Node& self, const Node& lca,
                          bool advantage, absl::Span<const int> needed,
                          std::vector<ReclaimScope>* out) const;

  static Amount LocalAvailable(const Node& n, int id);
  static Amount AvailableAt(const Node& n, int id);
  static Amount PotentialAt(const Node& n, int id);
  Node* Cohort(const std::string& name);
  void Derive(Node* n);
  const Node* Find(const std::string& cq) const;

  // Pair ids, found by a pair of views too (PairId asks without copying the names).
  using PairView = std::pair<absl::string_view, absl::string_view>;
  struct PairHash {
    using is_transparent = void;
    size_t operator()(PairView p) const { return absl::HashOf(p.first, p.second); }
  };
  struct PairEq {
    using is_transparent = void;
    bool operator()(PairView a, PairView b) const { return a == b; }
  };
  absl::flat_hash_map<FlavorResource, int, PairHash, PairEq> ids_;
  std::vector<FlavorResource> pairs_;  // by id
  // By name. Hashed: every query names its ClusterQueue, and with a thousand of them a hash is
  // far cheaper than a walk of string comparisons; nothing depends on their order.
  absl::flat_hash_map<std::string, std::unique_ptr<Node>> cluster_queues_;
  absl::flat_hash_map<std::string, std::unique_ptr<Node>> cohorts_;
  uint64_t generations_ = 0;
};

// Reads a resource-group list into nominal quota and limits.
void ReadQuotas(const google::protobuf::RepeatedPtrField<v1::ResourceGroup>& groups,
                FlavorResourceQuantities* nominal, std::map<FlavorResource, int64_t>* borrowing,
                std::map<FlavorResource, int64_t>* lending);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_QUOTA_TREE_H_
