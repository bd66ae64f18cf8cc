#include "server/engine/pending_queue.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace admitd::engine {

bool PendingQueue::Add(QueueKey* key, uint64_t shape) {
  key->shape = shape;
  key->in = QueueKey::In::kGroup;
  Group& group = groups_[shape];
  auto [it, inserted] = group.members.insert(key);
  (void)inserted;
  if (group.set_aside) {
    ++inadmissible_;
    return false;
  }
  ++active_;
  if (it == group.members.begin()) {
    // The group's new first workload stands for it in the queue's order.
    if (auto next = std::next(it); next != group.members.end()) fronts_.erase(*next);
    fronts_.insert(key);
  }
  return true;
}

void PendingQueue::AddAlone(QueueKey* key, uint64_t shape) {
  key->shape = shape;
  key->in = QueueKey::In::kAlone;
  alone_.insert(key);
  ++inadmissible_;
}

void PendingQueue::Remove(QueueKey* key) {
  switch (key->in) {
    case QueueKey::In::kNone: return;
    case QueueKey::In::kAlone:
      alone_.erase(key);
      --inadmissible_;
      break;
    case QueueKey::In::kGroup: {
      auto group = groups_.find(key->shape);
      Ordered& members = group->second.members;
      auto it = members.find(key);
      const bool first = it == members.begin();
      members.erase(it);
      if (group->second.set_aside) {
        --inadmissible_;
        break;  // kept, empty or not, to set later arrivals aside until RequeueAll
      }
      --active_;
      if (first) {
        fronts_.erase(key);
        if (!members.empty()) fronts_.insert(*members.begin());
      }
      if (members.empty()) groups_.erase(group);
      break;
    }
  }
  key->in = QueueKey::In::kNone;
}

bool PendingQueue::IsActive(const QueueKey* key) const {
  if (key->in != QueueKey::In::kGroup) return false;
  auto group = groups_.find(key->shape);
  return group != groups_.end() && !group->second.set_aside;
}

size_t PendingQueue::SetAside(uint64_t shape, std::string reason) {
  Group& group = groups_[shape];
  if (group.set_aside) return 0;
  group.set_aside = true;
  group.reason = std::move(reason);
  set_aside_.push_back(shape);
  if (group.members.empty()) return 0;
  fronts_.erase(*group.members.begin());
  active_ -= group.members.size();
  inadmissible_ += group.members.size();
  return group.members.size();
}

bool PendingQueue::IsSetAside(uint64_t shape) const { return SetAsideReason(shape) != nullptr; }

const std::string* PendingQueue::SetAsideReason(uint64_t shape) const {
  auto group = groups_.find(shape);
  return group != groups_.end() && group->second.set_aside ? &group->second.reason : nullptr;
}

void PendingQueue::RequeueAll() {
  for (uint64_t shape : set_aside_) {
    auto group = groups_.find(shape);
    group->second.set_aside = false;
    group->second.reason.clear();
    if (group->second.members.empty()) {
      groups_.erase(group);
      continue;
    }
    fronts_.insert(*group->second.members.begin());
    active_ += group->second.members.size();
    inadmissible_ -= group->second.members.size();
  }
  set_aside_.clear();
  for (QueueKey* key : std::exchange(alone_, {})) {
    --inadmissible_;
    Add(key, key->shape);
  }
}

std::vector<QueueKey*> PendingQueue::InOrder() const {
  std::vector<QueueKey*> active, inadmissible;
  active.reserve(active_);
  inadmissible.reserve(inadmissible_);
  for (const auto& [shape, group] : groups_) {
    auto& out = group.set_aside ? inadmissible : active;
    out.insert(out.end(), group.members.begin(), group.members.end());
  }
  inadmissible.insert(inadmissible.end(), alone_.begin(), alone_.end());
  std::sort(active.begin(), active.end(), ByOrder());
  std::sort(inadmissible.begin(), inadmissible.end(), ByOrder());
  active.insert(active.end(), inadmissible.begin(), inadmissible.end());
  return active;
}

}  // namespace admitd::engine
