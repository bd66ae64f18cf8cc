// QuotaTree's fair sharing (§19.3): each node's dominant resource share, weighted.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/container/inlined_vector.h"
#include "server/engine/quantity.h"
#include "server/engine/quota_tree.h"

namespace admitd::engine {

double QuotaTree::Share::Precise() const {
  if (ratio == 0) return 0;
  if (weight == 0) return std::numeric_limits<double>::infinity();
  return ratio / weight;
}

int64_t QuotaTree::Share::Weighted() const {
  const double precise = Precise();
  if (std::isinf(precise) || precise >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(std::ceil(precise));
}

int QuotaTree::CompareShares(const Share& a, const Share& b) {
  auto cmp = [](double x, double y) { return x < y ? -1 : x > y ? 1 : 0; };
  const bool a_zero = a.weight == 0 && a.ratio > 0;
  const bool b_zero = b.weight == 0 && b.ratio > 0;
  if (a_zero && b_zero) return cmp(a.ratio, b.ratio);
  if (a_zero) return 1;
  if (b_zero) return -1;
  return cmp(a.Precise(), b.Precise());
}

QuotaTree::Share QuotaTree::NegativeShare() {
  Share share;
  share.ratio = -1;
  return share;
}

std::vector<QuotaTree::QueueRef> QuotaTree::ChildrenOf(QueueRef node) const {
  std::vector<QueueRef> out;
  out.reserve(node.node_->children.size());
  for (bool cluster_queues : {false, true}) {
    const size_t first = out.size();
    for (Node* child : node.node_->children) {
      if (child->is_cluster_queue == cluster_queues) out.push_back(QueueRef(child));
    }
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
              [](QueueRef a, QueueRef b) { return a.node_->name < b.node_->name; });
  }
  return out;
}

bool QuotaTree::BorrowsOn(const Share& share, const FlavorResourceQuantities& requested) const {
  for (int id : share.borrowed_pairs) {
    auto it = requested.find(pairs_[id]);
    if (it != requested.end() && it->second > 0) return true;
  }
  return false;
}

bool QuotaTree::BorrowingOnAny(QueueRef cq, absl::Span<const int> pairs) const {
  if (cq.node_->parent == nullptr) return false;
  for (int id : pairs) {
    const Slot& slot = cq.node_->At(id);
    if (slot.usage > slot.subtree_quota) return true;
  }
  return false;
}

double QuotaTree::WeightOf(bool has_fair_sharing, const v1::FairSharing& fs) {
  if (!has_fair_sharing || !fs.has_weight()) return 1;
  absl::StatusOr<double> weight = ParseQuantityAsDouble(fs.weight());
  return weight.ok() && *weight >= 0 ? *weight : 1;  // validation refuses the others
}

std::vector<std::string> QuotaTree::CohortNames() const {
  std::vector<std::string> out;
  out.reserve(cohorts_.size());
  for (const auto& [name, node] : cohorts_) out.push_back(name);
  return out;
}

QuotaTree::Share QuotaTree::ShareOf(const std::string& name, bool cohort,
                                    const FlavorResourceQuantities* request) const {
  const auto& nodes = cohort ? cohorts_ : cluster_queues_;
  auto it = nodes.find(name);
  if (it == nodes.end()) return Share{};
  return ShareAt(*it->second, request);
}

QuotaTree::Share QuotaTree::ShareAt(const Node& n, const FlavorResourceQuantities* request) const {
  Share share;
  share.weight = n.weight;
  if (n.parent == nullptr) return share;
  // What the node uses beyond its subtree's quota, per resource, over the pairs it declares.
  // Few resources: small vectors searched in turn, no allocation (this runs for every head of a
  // fair-sharing tournament, at every level, after every head).
  struct PerResource {
    const std::string* resource;
    Amount amount;
  };
  auto at = [](absl::InlinedVector<PerResource, 4>& v, const std::string& r) -> Amount& {
    for (PerResource& e : v) {
      if (*e.resource == r) return e.amount;
    }
    v.push_back({&r, 0});
    return v.back().amount;
  };
  absl::InlinedVector<PerResource, 4> borrowed;
  for (size_t id = 0; id < n.slots.size(); ++id) {
    const Slot& slot = n.slots[id];
    if (!slot.declared) continue;
    Amount usage = slot.usage;
    if (request != nullptr) {
      auto r = request->find(pairs_[id]);
      if (r != request->end()) usage += r->second;
    }
    if (const Amount b = usage - slot.subtree_quota; b > 0) {
      at(borrowed, pairs_[id].second) += b;
      share.borrowed_pairs.push_back(static_cast<int>(id));
    }
  }
  if (borrowed.empty()) return share;
  share.borrowing = true;
  // What the parent could lend of each resource: its potential quota over every pair of the
  // resource the whole tree declares.
  const Node* root = &n;
  while (root->parent != nullptr) root = root->parent;
  absl::InlinedVector<PerResource, 4> lendable;
  for (const PerResource& b : borrowed) lendable.push_back({b.resource, 0});
  for (size_t id = 0; id < root->slots.size(); ++id) {
    if (!root->slots[id].declared) continue;
    const std::string& resource = pairs_[id].second;
    for (PerResource& l : lendable) {
      if (*l.resource == resource) l.amount += PotentialAt(*n.parent, id);
    }
  }
  const std::string* dominant = nullptr;
  for (size_t i = 0; i < borrowed.size(); ++i) {
    const Amount l = lendable[i].amount;
    if (l <= 0) continue;
    const double ratio = static_cast<double>(borrowed[i].amount) * 1000.0 / static_cast<double>(l);
    // Equal ratios go to the smaller resource name.
    if (ratio > share.ratio ||
        (ratio == share.ratio && dominant != nullptr && *borrowed[i].resource < *dominant)) {
      share.ratio = ratio;
      dominant = borrowed[i].resource;
    }
  }
  if (dominant != nullptr) share.resource = *dominant;
  return share;
}

}  // namespace admitd::engine
