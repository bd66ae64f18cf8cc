// Preemption candidates (see preemption_candidates.h).
#include "server/engine/preemption_candidates.h"

#include <algorithm>
#include <cstring>

namespace admitd::engine {

Policy PolicyOf(const std::string& policy) {
  if (policy == "Any") return Policy::kAny;
  if (policy == "LowerPriority") return Policy::kLowerPriority;
  if (policy == "LowerOrNewerEqualPriority") return Policy::kLowerOrNewerEqualPriority;
  return Policy::kNever;
}

bool PolicyAllows(Policy policy, const WorkloadEntry& p, const WorkloadEntry& c, int32_t cp) {
  const int32_t pp = p.object().spec().priority();
  switch (policy) {
    case Policy::kAny: return true;
    case Policy::kLowerPriority: return cp < pp;
    case Policy::kLowerOrNewerEqualPriority:
      return cp < pp || (cp == pp && p.queue_key.timestamp < c.queue_key.timestamp);
    case Policy::kNever: return false;
  }
  return false;
}

bool Before(const Candidate& a, const Candidate& b) {
  // Evicted, class and other queue (the bits above the priority) first; then, between two
  // candidates of the preemptor's own queue, the LocalQueue that used more.
  if ((a.major >> 32) != (b.major >> 32)) return a.major < b.major;
  if (!a.other_queue && !b.other_queue && a.afs_usage != b.afs_usage) {
    return a.afs_usage > b.afs_usage;
  }
  if (a.major != b.major) return a.major < b.major;
  if (a.later_first != b.later_first) return a.later_first < b.later_first;
  if (a.uid_prefix != b.uid_prefix) return a.uid_prefix < b.uid_prefix;
  if (int c = a.entry->queue_key.uid.compare(b.entry->queue_key.uid); c != 0) return c < 0;
  return a.index < b.index;
}

Candidate MakeCandidate(WorkloadEntry* entry, QuotaTree::QueueRef lca, Variant variant,
                        QuotaTree::QueueRef queue, bool other_queue, uint8_t rank,
                        uint32_t index) {
  Candidate c{entry, lca, variant, queue, other_queue};
  const WorkloadEntry::CandidateKeys& keys = entry->candidate_keys();
  c.major = (uint64_t{keys.evicted ? 0u : 1u} << 40) | (uint64_t{rank} << 36) |
            (uint64_t{other_queue ? 0u : 1u} << 32) |
            (static_cast<uint32_t>(keys.priority) ^ 0x80000000u);
  c.later_first = ~absl::ToUnixNanos(keys.reserved_at);
  c.index = index;
  return c;
}

void SetUidKeys(std::vector<Candidate>* candidates) {
  const std::string& first = candidates->front().entry->queue_key.uid;
  size_t shared = first.size();
  for (const Candidate& c : *candidates) {
    const std::string& uid = c.entry->queue_key.uid;
    // Usually the whole prefix is shared: one memcmp says so.
    if (uid.size() >= shared && std::memcmp(uid.data(), first.data(), shared) == 0) continue;
    const size_t n = std::min(shared, uid.size());
    size_t k = 0;
    while (k < n && uid[k] == first[k]) ++k;
    shared = k;
    if (shared == 0) break;
  }
  for (Candidate& c : *candidates) {
    const std::string& uid = c.entry->queue_key.uid;
    uint64_t prefix = 0;
    for (size_t i = shared; i < shared + 8; ++i) {
      prefix = (prefix << 8) | (i < uid.size() ? static_cast<unsigned char>(uid[i]) : 0u);
    }
    c.uid_prefix = prefix;
  }
}

}  // namespace admitd::engine
