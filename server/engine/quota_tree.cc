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
    ReadQuotas(spec->resource_groups(), &n->nominal, &n->borrowing_limit, &n->lending_limit);
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
    ReadQuotas(spec->resource_groups(), &node->nominal, &node->borrowing_limit,
               &node->lending_limit);
    if (!spec->cohort_name().empty()) {
      node->parent = Cohort(spec->cohort_name());
      node->parent->children.push_back(node.get());
    }
    auto u = usage.find(name);
    if (u != usage.end()) node->usage = u->second;
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
    n->nominal.clear();
    n->borrowing_limit.clear();
    n->lending_limit.clear();
    ReadQuotas(spec->resource_groups(), &n->nominal, &n->borrowing_limit, &n->lending_limit);
    n->usage = usage;
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
  n->subtree_quota.clear();
  for (const auto& [fr, q] : n->nominal) n->subtree_quota[fr] = q;
  if (!n->is_cluster_queue) n->usage.clear();
  for (Node* child : n->children) {
    Derive(child);
    n->height = std::max(n->height, child->height + 1);
    for (const auto& [fr, q] : child->subtree_quota) {
      n->subtree_quota[fr] += q - Get(child->local_quota, fr);
    }
    for (const auto& [fr, u] : child->usage) {
      const Amount lands = std::max<Amount>(0, u - Get(child->local_quota, fr));
      if (lands > 0) n->usage[fr] += lands;
    }
  }
  n->local_quota.clear();
  for (const auto& [fr, limit] : n->lending_limit) {
    n->local_quota[fr] = std::max<Amount>(0, Get(n->subtree_quota, fr) - limit);
  }
}

const QuotaTree::Node* QuotaTree::Find(const std::string& cq) const {
  auto it = cluster_queues_.find(cq);
  return it == cluster_queues_.end() ? nullptr : it->second.get();
}

Amount QuotaTree::LocalAvailable(const Node& n, const FlavorResource& fr) const {
  return std::max<Amount>(0, Get(n.local_quota, fr) - Get(n.usage, fr));
}

Amount QuotaTree::AvailableAt(const Node& n, const FlavorResource& fr) const {
  if (n.parent == nullptr) return Get(n.subtree_quota, fr) - Get(n.usage, fr);
  Amount from_parent = AvailableAt(*n.parent, fr);
  auto limit = n.borrowing_limit.find(fr);
  if (limit != n.borrowing_limit.end()) {
    const Amount local = Get(n.local_quota, fr);
    const Amount cap = (Get(n.subtree_quota, fr) - local) -
                       std::max<Amount>(0, Get(n.usage, fr) - local) + limit->second;
    from_parent = std::min(from_parent, cap);
  }
  return LocalAvailable(n, fr) + from_parent;
}

Amount QuotaTree::PotentialAt(const Node& n, const FlavorResource& fr) const {
  if (n.parent == nullptr) return Get(n.subtree_quota, fr);
  Amount potential = Get(n.local_quota, fr) + PotentialAt(*n.parent, fr);
  auto limit = n.borrowing_limit.find(fr);
  if (limit != n.borrowing_limit.end()) {
    potential = std::min(potential, Get(n.subtree_quota, fr) + limit->second);
  }
  return potential;
}

Amount QuotaTree::Available(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : std::max<Amount>(0, AvailableAt(*n, fr));
}

Amount QuotaTree::PotentialAvailable(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : PotentialAt(*n, fr);
}

int QuotaTree::BorrowingLevel(const std::string& cq, const FlavorResource& fr,
                              Amount value) const {
  const Node* n = Find(cq);
  if (n == nullptr || n->parent == nullptr) return 0;
  if (Get(n->nominal, fr) >= Get(n->usage, fr) + value) return 0;
  Amount remaining = value - LocalAvailable(*n, fr);
  const Node* a = n->parent;
  while (true) {
    if (Get(a->subtree_quota, fr) >= Get(a->usage, fr) + remaining) return a->height;
    if (a->parent == nullptr) return a->height;
    remaining -= LocalAvailable(*a, fr);
    a = a->parent;
  }
}

std::pair<int, bool> QuotaTree::BorrowingLevelAndReclaim(const std::string& cq,
                                                         const FlavorResource& fr,
                                                         Amount value) const {
  const Node* n = Find(cq);
  if (n == nullptr) return {0, false};
  if (n->parent == nullptr) return {0, false};
  if (Get(n->nominal, fr) >= Get(n->usage, fr) + value) return {0, true};
  Amount remaining = value - LocalAvailable(*n, fr);
  for (const Node* a = n->parent; a != nullptr; a = a->parent) {
    if (Get(a->subtree_quota, fr) >= Get(a->usage, fr) + remaining) {
      return {a->height, a->parent != nullptr};
    }
    if (a->parent == nullptr) return {a->height, false};
    remaining -= LocalAvailable(*a, fr);
  }
  return {0, false};
}

int64_t QuotaTree::Nominal(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : Get(n->nominal, fr);
}

Amount QuotaTree::Usage(const std::string& cq, const FlavorResource& fr) const {
  const Node* n = Find(cq);
  return n == nullptr ? 0 : Get(n->usage, fr);
}

std::optional<int64_t> QuotaTree::BorrowingLimit(const std::string& cq,
                                                 const FlavorResource& fr) const {
  const Node* n = Find(cq);
  if (n == nullptr || n->parent == nullptr) return std::nullopt;
  auto it = n->borrowing_limit.find(fr);
  if (it == n->borrowing_limit.end()) return std::nullopt;
  return it->second;
}

bool QuotaTree::WithinNominal(const Node& n, const std::set<FlavorResource>& frs) const {
  for (const FlavorResource& fr : frs) {
    if (Get(n.subtree_quota, fr) < Get(n.usage, fr)) return false;
  }
  return true;
}

bool QuotaTree::UnderNominal(const std::string& cq, const std::set<FlavorResource>& needed) const {
  const Node* n = Find(cq);
  if (n == nullptr) return false;
  for (const FlavorResource& fr : needed) {
    if (Get(n->nominal, fr) <= Get(n->usage, fr)) return false;
  }
  return true;
}

void QuotaTree::CollectReclaimable(const Node& at, const Node* skip, const Node& self,
                                   const std::string& lca, bool advantage,
                                   const std::set<FlavorResource>& needed,
                                   std::vector<ReclaimScope>* out) const {
  for (const Node* child : at.children) {
    if (child->is_cluster_queue || child == skip) continue;
    // A sub-cohort within its quota lends nothing that could be reclaimed.
    if (WithinNominal(*child, needed)) continue;
    CollectReclaimable(*child, skip, self, lca, advantage, needed, out);
  }
  for (const Node* child : at.children) {
    if (!child->is_cluster_queue || child == &self) continue;
    if (!WithinNominal(*child, needed)) out->push_back({child->name, lca, advantage});
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
      if (Get(n.subtree_quota, fr) < Get(n.usage, fr) + v) fits = false;
      rest[fr] = std::max<Amount>(0, v - LocalAvailable(n, fr));
    }
    remaining = std::move(rest);
    return fits;
  };
  bool advantage = fits_in(*self, FlavorResourceAmounts(requests.begin(), requests.end()));
  const Node* previous = nullptr;
  for (const Node* a = self->parent; a != nullptr; a = a->parent) {
    CollectReclaimable(*a, previous, *self, a->name, advantage, needed, &out);
    const FlavorResourceAmounts want = remaining;
    advantage = fits_in(*a, want) || advantage;
    previous = a;
  }
  return out;
}

bool QuotaTree::StillReclaimable(const std::string& cq, const std::string& lca,
                                 const std::set<FlavorResource>& needed) const {
  const Node* n = Find(cq);
  if (n == nullptr || WithinNominal(*n, needed)) return false;
  for (const Node* a = n->parent; a != nullptr && a->name != lca; a = a->parent) {
    if (WithinNominal(*a, needed)) return false;
  }
  return true;
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
  auto it = cluster_queues_.find(cq);
  if (it == cluster_queues_.end()) return;
  for (const auto& [fr, v] : usage) {
    Amount delta = sign * Amount(v);
    for (Node* n = it->second.get(); n != nullptr && delta != 0; n = n->parent) {
      const Amount local = Get(n->local_quota, fr);
      const Amount before = Get(n->usage, fr);
      const Amount after = before + delta;
      if (after == 0) {
        n->usage.erase(fr);
      } else {
        n->usage[fr] = after;
      }
      // Only what lies beyond the node's local quota lands in its parent.
      delta = std::max<Amount>(0, after - local) - std::max<Amount>(0, before - local);
    }
  }
}

}  // namespace admitd::engine
