#include "server/engine/quota_tree.h"

#include <algorithm>
#include <functional>
#include <set>


namespace admitd::engine {

void ReadQuotas(const google::protobuf::RepeatedPtrField<v1::ResourceGroup>& groups,
                FlavorResourceQuantities* nominal, std::map<FlavorResource, int64_t>* borrowing,
                std::map<FlavorResource, int64_t>* lending) {
  for (const v1::ResourceGroup& g : groups) {
    for (const v1::FlavorQuotas& fq : g.flavors()) {
      for (const v1::ResourceQuota& q : fq.resources()) {
        const FlavorResource fr{fq.name(), q.name()};
        auto v = ParseQuantity(q.name(), q.nominal_quota());
        (*nominal)[fr] = v.ok() ? *v : 0;
        if (q.has_borrowing_limit()) {
          auto b = ParseQuantity(q.name(), q.borrowing_limit());
          (*borrowing)[fr] = b.ok() ? *b : 0;
        }
        if (q.has_lending_limit()) {
          auto l = ParseQuantity(q.name(), q.lending_limit());
          (*lending)[fr] = l.ok() ? *l : 0;
        }
      }
    }
  }
}

int QuotaTree::Intern(const FlavorResource& fr) {
  auto [it, inserted] = ids_.try_emplace(fr, static_cast<int>(ids_.size()));
  if (inserted) pairs_.push_back(fr);
  return it->second;
}

int QuotaTree::IdOf(const FlavorResource& fr) const {
  auto it = ids_.find(fr);
  return it == ids_.end() ? -1 : it->second;
}

absl::InlinedVector<int, 4> QuotaTree::IdsOf(const std::set<FlavorResource>& frs) const {
  absl::InlinedVector<int, 4> out;
  out.reserve(frs.size());
  for (const FlavorResource& fr : frs) out.push_back(IdOf(fr));
  return out;
}

void QuotaTree::SetQuotas(Node* n,
                          const google::protobuf::RepeatedPtrField<v1::ResourceGroup>& groups) {
  FlavorResourceQuantities nominal;
  std::map<FlavorResource, int64_t> borrowing, lending;
  ReadQuotas(groups, &nominal, &borrowing, &lending);
  for (Slot& slot : n->slots) {
    slot.nominal = 0;
    slot.has_borrowing_limit = slot.has_lending_limit = false;
    slot.borrowing_limit = slot.lending_limit = 0;
    slot.own = false;
  }
  for (const auto& [fr, v] : nominal) {
    Slot& slot = n->Grow(Intern(fr));
    slot.nominal = v;
    slot.own = true;
  }
  for (const auto& [fr, v] : borrowing) {
    Slot& slot = n->Grow(Intern(fr));
    slot.has_borrowing_limit = true;
    slot.borrowing_limit = v;
  }
  for (const auto& [fr, v] : lending) {
    Slot& slot = n->Grow(Intern(fr));
    slot.has_lending_limit = true;
    slot.lending_limit = v;
  }
}

void QuotaTree::SetUsage(Node* n, const FlavorResourceAmounts& usage) {
  for (Slot& slot : n->slots) slot.usage = 0;
  for (const auto& [fr, v] : usage) n->Grow(Intern(fr)).usage = v;
}

QuotaTree::Node* QuotaTree::Cohort(const std::string& name) {
  std::unique_ptr<Node>& slot = cohorts_[name];
  if (!slot) {
    slot = std::make_unique<Node>();
    slot->name = name;
  }
  return slot.get();
}

void QuotaTree::Rebuild(const std::map<std::string, const v1::ClusterQueueSpec*>& cluster_queues,
                        const std::map<std::string, const v1::CohortSpec*>& cohorts,
                        const std::map<std::string, FlavorResourceAmounts>& usage) {
  cluster_queues_.clear();
  cohorts_.clear();
  // Cohort objects first: their quota, limits and parents.
  for (const auto& [name, spec] : cohorts) {
    Node* n = Cohort(name);
    n->is_object = true;
    SetQuotas(n, spec->resource_groups());
    n->weight = WeightOf(spec->has_fair_sharing(), spec->fair_sharing());
  }
  for (const auto& [name, spec] : cohorts) {
    if (spec->parent_name().empty()) continue;
    // A parent that would close a cycle is ignored: the cohort becomes a root.
    std::set<std::string> seen = {name};
    std::string up = spec->parent_name();
    bool cycle = false;
    while (!up.empty()) {
      if (!seen.insert(up).second) {
        cycle = true;
        break;
      }
      auto it = cohorts.find(up);
      up = it == cohorts.end() ? "" : it->second->parent_name();
    }
    if (cycle) continue;
    Node* n = Cohort(name);
    n->parent = Cohort(spec->parent_name());  // a missing parent is a cohort without quota
    n->parent->children.push_back(n);
  }
  for (const auto& [name, spec] : cluster_queues) {
    auto node = std::make_unique<Node>();
    node->name = name;
    node->is_cluster_queue = true;
    SetQuotas(node.get(), spec->resource_groups());
    node->weight = WeightOf(spec->has_fair_sharing(), spec->fair_sharing());
    if (!spec->cohort_name().empty()) {
      node->parent = Cohort(spec->cohort_name());
      node->parent->children.push_back(node.get());
    }
    auto u = usage.find(name);
    if (u != usage.end()) SetUsage(node.get(), u->second);
    cluster_queues_[name] = std::move(node);
  }
  ++generations_;
  for (auto& [name, node] : cohorts_) {
    if (node->parent == nullptr) {
      Derive(node.get());
      node->generation = generations_;
    }
  }
  for (auto& [name, node] : cluster_queues_) {
    if (node->parent == nullptr) {
      Derive(node.get());
      node->generation = generations_;
    }
  }
}

void QuotaTree::SetClusterQueue(const std::string& name, const v1::ClusterQueueSpec* spec,
                                const FlavorResourceAmounts& usage) {
  auto root_of = [](Node* n) {
    while (n->parent != nullptr) n = n->parent;
    return n;
  };
  Node* old_root = nullptr;
  auto it = cluster_queues_.find(name);
  if (it != cluster_queues_.end()) {
    Node* n = it->second.get();
    if (Node* parent = n->parent; parent != nullptr) {
      parent->children.erase(std::find(parent->children.begin(), parent->children.end(), n));
      n->parent = nullptr;
      old_root = root_of(parent);
      // A cohort that only existed because its members named it goes with its last member.
      if (!parent->is_object && parent->children.empty() && parent->parent == nullptr) {
        if (old_root == parent) old_root = nullptr;
        const std::string gone = parent->name;
        cohorts_.erase(gone);
      }
    }
    if (spec == nullptr) cluster_queues_.erase(it);
  }
  Node* new_root = nullptr;
  if (spec != nullptr) {
    std::unique_ptr<Node>& slot = cluster_queues_[name];
    if (!slot) slot = std::make_unique<Node>();
    Node* n = slot.get();
    n->name = name;
    n->is_cluster_queue = true;
    SetQuotas(n, spec->resource_groups());
    n->weight = WeightOf(spec->has_fair_sharing(), spec->fair_sharing());
    SetUsage(n, usage);
    if (!spec->cohort_name().empty()) {
      n->parent = Cohort(spec->cohort_name());
      // Where Rebuild puts it: after the child cohorts, among the ClusterQueues by name.
      std::vector<Node*>& siblings = n->parent->children;
      auto at = std::find_if(siblings.begin(), siblings.end(), [n](const Node* c) {
        return c->is_cluster_queue && c->name > n->name;
      });
      siblings.insert(at, n);
    }
    new_root = root_of(n);
  }
  if (old_root != nullptr) {
    Derive(old_root);
    old_root->generation = ++generations_;
  }
  if (new_root != nullptr && new_root != old_root) {
    Derive(new_root);
    new_root->generation = ++generations_;
  }
}

// Post-order: heights, subtree and local quotas, and the usage that lands in each cohort.
void QuotaTree::Derive(Node* n) {
  n->height = 0;
  for (Slot& slot : n->slots) {
    slot.subtree_quota = slot.nominal;
    slot.declared = slot.own;
    if (!n->is_cluster_queue) slot.usage = 0;
  }
  for (Node* child : n->children) {
    Derive(child);
    n->height = std::max(n->height, child->height + 1);
    if (n->slots.size() < child->slots.size()) n->slots.resize(child->slots.size());
    for (size_t id = 0; id < child->slots.size(); ++id) {
      const Slot& c = child->slots[id];
      Slot& slot = n->slots[id];
      slot.subtree_quota += c.subtree_quota - c.local_quota;
      slot.declared = slot.declared || c.declared;
      slot.usage += std::max<Amount>(0, c.usage - c.local_quota);
    }
  }
  for (Slot& slot : n->slots) {
    slot.local_quota =
        slot.has_lending_limit ? std::max<Amount>(0, slot.subtree_quota - slot.lending_limit) : 0;
  }
}

const QuotaTree::Node* QuotaTree::Find(const std::string& cq) const {
  auto it = cluster_queues_.find(cq);
  return it == cluster_queues_.end() ? nullptr : it->second.get();
}

Amount QuotaTree::LocalAvailable(const Node& n, int id) {
  const Slot& slot = n.At(id);
  return std::max<Amount>(0, slot.local_quota - slot.usage);
}

Amount QuotaTree::AvailableAt(const Node& n, int id) {
  const Slot& slot = n.At(id);
  if (n.parent == nullptr) return slot.subtree_quota - slot.usage;
  Amount from_parent = AvailableAt(*n.parent, id);
  if (slot.has_borrowing_limit) {
    const Amount local = slot.local_quota;
    const Amount cap = (slot.subtree_quota - local) - std::max<Amount>(0, slot.usage - local) +
                       slot.borrowing_limit;
    from_parent = std::min(from_parent, cap);
  }
  return LocalAvailable(n, id) + from_parent;
}

Amount QuotaTree::PotentialAt(const Node& n, int id) {
  const Slot& slot = n.At(id);
  if (n.parent == nullptr) return slot.subtree_quota;
  Amount potential = slot.local_quota + PotentialAt(*n.parent, id);
  if (slot.has_borrowing_limit) {
    potential = std::min(potential, slot.subtree_quota + slot.borrowing_limit);
  }
  return potential;
}

Amount QuotaTree::Available(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : std::max<Amount>(0, AvailableAt(*n, IdOf(fr)));
}

Amount QuotaTree::PotentialAvailable(const std::string& cq, const FlavorResource& fr) const {
  return PotentialAvailable(RefOf(cq), IdOf(fr));
}

Amount QuotaTree::PotentialAvailable(QueueRef cq, int pair) const {
  return cq.node_ == nullptr ? 0 : PotentialAt(*cq.node_, pair);
}

int QuotaTree::BorrowingLevel(const std::string& cq, const FlavorResource& fr,
                              Amount value) const {
  const Node* n = Find(cq);
  if (n == nullptr || n->parent == nullptr) return 0;
  const int id = IdOf(fr);
  if (n->At(id).nominal >= n->At(id).usage + value) return 0;
  Amount remaining = value - LocalAvailable(*n, id);
  const Node* a = n->parent;
  while (true) {
    if (a->At(id).subtree_quota >= a->At(id).usage + remaining) return a->height;
    if (a->parent == nullptr) return a->height;
    remaining -= LocalAvailable(*a, id);
    a = a->parent;
  }
}

std::pair<int, bool> QuotaTree::BorrowingLevelAndReclaim(const std::string& cq,
                                                         const FlavorResource& fr,
                                                         Amount value) const {
  return BorrowingLevelAndReclaim(RefOf(cq), IdOf(fr), value);
}

std::pair<int, bool> QuotaTree::BorrowingLevelAndReclaim(QueueRef cq, int id, Amount value) const {
  const Node* n = cq.node_;
  if (n == nullptr) return {0, false};
  if (n->parent == nullptr) return {0, false};
  if (n->At(id).nominal >= n->At(id).usage + value) return {0, true};
  Amount remaining = value - LocalAvailable(*n, id);
  for (const Node* a = n->parent; a != nullptr; a = a->parent) {
    if (a->At(id).subtree_quota >= a->At(id).usage + remaining) {
      return {a->height, a->parent != nullptr};
    }
    if (a->parent == nullptr) return {a->height, false};
    remaining -= LocalAvailable(*a, id);
  }
  return {0, false};
}

int64_t QuotaTree::Nominal(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : n->At(IdOf(fr)).nominal;
}

Amount QuotaTree::Usage(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : n->At(IdOf(fr)).usage;
}

std::optional<int64_t> QuotaTree::BorrowingLimit(const std::string& cq,
                                                 const FlavorResource& fr) const {
  const Node* n = Find(cq);
  if (n == nullptr || n->parent == nullptr) return std::nullopt;
  const Slot& slot = n->At(IdOf(fr));
  if (!slot.has_borrowing_limit) return std::nullopt;
  return slot.borrowing_limit;
}

bool QuotaTree::WithinNominal(const Node& n, absl::Span<const int> ids) const {
  for (int id : ids) {
    if (n.At(id).subtree_quota < n.At(id).usage) return false;
  }
  return true;
}

bool QuotaTree::UnderNominal(const std::string& cq, const std::set<FlavorResource>& needed) const {
  const Node* n = Find(cq);
  if (n == nullptr) return false;
  for (const FlavorResource& fr : needed) {
    const Slot& slot = n->At(IdOf(fr));
    if (slot.nominal <= slot.usage) return false;
  }
  return true;
}

void QuotaTree::CollectReclaimable(const Node& at, const Node* skip, const Node& self,
                                   const Node& lca, bool advantage, absl::Span<const int> needed,
                                   std::vector<ReclaimScope>* out) const {
  for (const Node* child : at.children) {
    if (child->is_cluster_queue || child == skip) continue;
    // A sub-cohort within its quota lends nothing that could be reclaimed.
    if (WithinNominal(*child, needed)) continue;
    CollectReclaimable(*child, skip, self, lca, advantage, needed, out);
  }
  for (const Node* child : at.children) {
    if (!child->is_cluster_queue || child == &self) continue;
    if (!WithinNominal(*child, needed)) {
      out->push_back({QueueRef(const_cast<Node*>(child)), QueueRef(const_cast<Node*>(&lca)),
                      advantage});
    }
  }
}

std::vector<QuotaTree::ReclaimScope> QuotaTree::ReclaimScopes(
    const std::string& cq, const FlavorResourceQuantities& requests,
    const std::set<FlavorResource>& needed) const {
  std::vector<ReclaimScope> out;
  const Node* self = Find(cq);
  if (self == nullptr || self->parent == nullptr) return out;
  // Whether the request fits in a node's subtree quota, and what remains for its parent.
  FlavorResourceAmounts remaining;
  auto fits_in = [&](const Node& n, const FlavorResourceAmounts& want) {
    bool fits = true;
    FlavorResourceAmounts rest;
    for (const auto& [fr, v] : want) {
      const int id = IdOf(fr);
      if (n.At(id).subtree_quota < n.At(id).usage + v) fits = false;
      rest[fr] = std::max<Amount>(0, v - LocalAvailable(n, id));
    }
    remaining = std::move(rest);
    return fits;
  };
  bool advantage = fits_in(*self, FlavorResourceAmounts(requests.begin(), requests.end()));
  const absl::InlinedVector<int, 4> needed_ids = IdsOf(needed);
  const Node* previous = nullptr;
  for (const Node* a = self->parent; a != nullptr; a = a->parent) {
    CollectReclaimable(*a, previous, *self, *a, advantage, needed_ids, &out);
    const FlavorResourceAmounts want = remaining;
    advantage = fits_in(*a, want) || advantage;
    previous = a;
  }
  return out;
}

bool QuotaTree::StillReclaimable(QueueRef cq, QueueRef lca, absl::Span<const int> needed) const {
  const Node* n = cq.node_;
  if (n == nullptr || WithinNominal(*n, needed)) return false;
  for (const Node* a = n->parent; a != nullptr && a != lca.node_; a = a->parent) {
    if (WithinNominal(*a, needed)) return false;
  }
  return true;
}

void QuotaTree::Attach(const std::string& cq, ClusterQueueState* state) {
  if (auto it = cluster_queues_.find(cq); it != cluster_queues_.end()) it->second->state = state;
}

QuotaTree::QueueRef QuotaTree::RefOf(const std::string& cq) const {
  auto it = cluster_queues_.find(cq);
  return QueueRef(it == cluster_queues_.end() ? nullptr : it->second.get());
}

QuotaTree::QueueRef QuotaTree::RootOf(QueueRef cq) const {
  Node* n = cq.node_;
  while (n != nullptr && n->parent != nullptr) n = n->parent;
  return QueueRef(n);
}

Amount QuotaTree::Available(QueueRef cq, int pair) const {
  return cq.node_ == nullptr ? 0 : std::max<Amount>(0, AvailableAt(*cq.node_, pair));
}

int64_t QuotaTree::Nominal(QueueRef cq, int pair) const {
  return cq.node_ == nullptr ? 0 : cq.node_->At(pair).nominal;
}

Amount QuotaTree::Usage(QueueRef cq, int pair) const {
  return cq.node_ == nullptr ? 0 : cq.node_->At(pair).usage;
}

uint64_t QuotaTree::Generation(const std::string& cq) const {
  const Node* n = Find(cq);
  if (n == nullptr) return 0;
  while (n->parent != nullptr) n = n->parent;
  return n->generation;
}

void QuotaTree::BumpGeneration(const std::string& cq) {
  auto it = cluster_queues_.find(cq);
  if (it == cluster_queues_.end()) return;
  Node* n = it->second.get();
  while (n->parent != nullptr) n = n->parent;
  n->generation = ++generations_;
}

std::string QuotaTree::Path(const std::string& cq) const {
  std::string path;
  for (const Node* n = Find(cq); n != nullptr; n = n->parent) path = "/" + n->name + path;
  return path.empty() ? "/" + cq : path;
}

std::string QuotaTree::Root(const std::string& cq) const {
  const Node* n = Find(cq);
  if (n == nullptr) return cq;
  while (n->parent != nullptr) n = n->parent;
  return n->name;
}

std::vector<std::string> QuotaTree::ClusterQueuesUnder(const std::string& root) const {
  std::vector<std::string> out;
  const Node* start = nullptr;
  if (auto it = cohorts_.find(root); it != cohorts_.end()) start = it->second.get();
  if (start == nullptr) start = Find(root);
  if (start == nullptr) return out;
  std::function<void(const Node*)> walk = [&](const Node* n) {
    if (n->is_cluster_queue) out.push_back(n->name);
    for (const Node* c : n->children) walk(c);
  };
  walk(start);
  return out;
}

void QuotaTree::AddUsage(const std::string& cq, const FlavorResourceQuantities& usage, int sign) {
  AddUsage(RefOf(cq), usage, sign);
}

void QuotaTree::AddUsage(QueueRef cq, const FlavorResourceQuantities& usage, int sign) {
  if (cq.node_ == nullptr) return;
  for (const auto& [fr, v] : usage) AddPairUsage(cq.node_, Intern(fr), sign * Amount(v));
}

void QuotaTree::AddUsage(QueueRef cq, absl::Span<const std::pair<int, int64_t>> usage,
                         int sign) {
  if (cq.node_ == nullptr) return;
  for (const auto& [id, v] : usage) AddPairUsage(cq.node_, id, sign * Amount(v));
}

void QuotaTree::UsageSum::Add(QueueRef cq, absl::Span<const std::pair<int, int64_t>> usage) {
  if (cq.node_ == nullptr) return;
  for (const auto& [id, v] : usage) {
    auto [it, added] = index_.try_emplace(std::make_pair(cq.node_, id), sums_.size());
    if (added) {
      sums_.push_back({cq.node_, id, Amount(v)});
    } else {
      sums_[it->second].amount += v;
    }
  }
}

void QuotaTree::AddUsage(const UsageSum& usage, int sign) {
  for (const UsageSum::Sum& s : usage.sums_) AddPairUsage(s.node, s.id, sign * s.amount);
}

void QuotaTree::AddPairUsage(Node* node, int id, Amount delta) {
  for (Node* n = node; n != nullptr && delta != 0; n = n->parent) {
    Slot& slot = n->Grow(id);
    const Amount before = slot.usage;
    slot.usage += delta;
    // Only what lies beyond the node's local quota lands in its parent.
    delta = std::max<Amount>(0, slot.usage - slot.local_quota) -
            std::max<Amount>(0, before - slot.local_quota);
  }
}

}  // namespace admitd::engine
