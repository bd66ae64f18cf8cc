#include "server/engine/workload_entry.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"

namespace admitd::engine {
namespace {

// An invariant no caller can recover from: the encoding checked by Decode at start-up changed.
[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "admitd: %s\n", what);
  std::abort();
}

}  // namespace

v1::Workload& WorkloadEntry::mutable_object() {
  if (object_ == nullptr) Thaw();
  ++writes_;
  if (!encoded_.empty()) std::string().swap(encoded_);  // no longer the workload's encoding
  if (object_.use_count() > 1) {
    // References into the shared object taken earlier in this engine call stay valid (they
    // read the state before this write) until ReleasePrevious.
    previous_ = std::move(object_);
    object_ = std::make_shared<v1::Workload>(*previous_);
    PointPodSets();
  } else {
    // The last other holder let go (on any thread): see what it did before it did.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  return *object_;
}

void WorkloadEntry::set_object(v1::Workload wl) {
  ++writes_;
  if (!encoded_.empty()) std::string().swap(encoded_);
  object_ = std::make_shared<v1::Workload>(std::move(wl));
}

std::shared_ptr<const v1::Workload> WorkloadEntry::Share() const {
  if (object_ != nullptr) return object_;
  if (std::shared_ptr<v1::Workload> held = dropped_.lock()) return held;
  auto copy = std::make_shared<v1::Workload>();
  if (!copy->ParseFromString(encoded_)) Broken("a frozen workload no longer parses");
  return copy;
}

void WorkloadEntry::SetEncoded(std::string encoded) {
  object_.reset();
  dropped_.reset();
  pod_sets_.clear();
  encoded_ = std::move(encoded);
}

absl::Status WorkloadEntry::Decode(std::shared_ptr<v1::Workload> reuse) const {
  if (object_ != nullptr) return absl::OkStatus();
  if (std::shared_ptr<v1::Workload> held = dropped_.lock()) {
    // Still held as a snapshot, so immutable until that lets go: shared again, not decoded (a
    // write copies it, as after any snapshot).
    object_ = std::move(held);
    FillPodSets();
    return absl::OkStatus();
  }
  DecodedWorkload decoded = DecodeStoredWorkload(encoded_, std::move(reuse));
  if (decoded.workload == nullptr) return absl::DataLossError("a stored workload cannot be parsed");
  Adopt(std::move(decoded));
  return absl::OkStatus();
}

void WorkloadEntry::Adopt(DecodedWorkload decoded) const {
  object_ = std::move(decoded.workload);
  pod_sets_ = std::move(decoded.pod_sets);  // pointing into *object_, which does not move
}

void WorkloadEntry::Thaw() const {
  if (!Decode().ok()) Broken("a frozen workload no longer parses");
}

void WorkloadEntry::FreezeAs(std::string encoded) {
  if (object_ == nullptr) return;
  encoded_ = std::move(encoded);
  const std::shared_ptr<v1::Workload> decoded = object_;
  (void)Freeze();
  dropped_ = decoded;  // the last reference goes with `decoded` unless a snapshot holds one
}

std::shared_ptr<v1::Workload> WorkloadEntry::Freeze() {
  if (object_ == nullptr || encoded_.empty()) return nullptr;
  dropped_.reset();
  std::shared_ptr<v1::Workload> dropped = std::move(object_);
  previous_.reset();
  std::vector<PodSetRequest>().swap(pod_sets_);
  if (dropped.use_count() > 1) return nullptr;
  std::atomic_thread_fence(std::memory_order_acquire);  // see mutable_object
  return dropped;
}

void WorkloadEntry::CopyTo(v1::Workload* out) const {
  if (object_ != nullptr) {
    *out = *object_;
  } else if (std::shared_ptr<v1::Workload> held = dropped_.lock()) {
    *out = *held;
  } else if (!out->ParseFromString(encoded_)) {
    Broken("a frozen workload no longer parses");
  }
}

void WorkloadEntry::FillPodSets() const { pod_sets_ = PodSetRequestsOf(object()); }

void WorkloadEntry::ParsePodSets(const std::vector<ResourceAmounts>& per_pod) {
  pod_sets_ = PodSetRequestsOf(object(), per_pod);
}

void WorkloadEntry::PointPodSets() const {
  for (size_t i = 0; i < pod_sets_.size(); ++i) {
    pod_sets_[i].pod = static_cast<int>(i) < object_->spec().pod_sets_size()
                           ? &object_->spec().pod_sets(static_cast<int>(i)).template_().spec()
                           : nullptr;
  }
}

const WorkloadEntry::CandidateKeys& WorkloadEntry::candidate_keys() {
  CandidateKeys& keys = candidate_keys_;
  if (keys.writes != writes_) {
    const v1::Workload& wl = object();
    // Evicted and QuotaReserved in one pass over the conditions (the first of each type counts).
    static constexpr absl::string_view kEvictedType = kEvicted;
    static constexpr absl::string_view kReservedType = kQuotaReserved;
    const v1::Condition* evicted = nullptr;
    const v1::Condition* reserved = nullptr;
    for (const v1::Condition& cond : wl.status().conditions()) {
      const absl::string_view type = cond.type();
      if (evicted == nullptr && type == kEvictedType) evicted = &cond;
      if (reserved == nullptr && type == kReservedType) reserved = &cond;
    }
    keys.evicted = evicted != nullptr && evicted->status() == "True";
    keys.priority = wl.spec().priority();
    keys.reserved_at = reserved == nullptr ? absl::InfiniteFuture()
                                           : FromProto(reserved->last_transition_time());
    keys.writes = writes_;
  }
  return keys;
}

namespace {

// Folds `v` into the hash `h` (splitmix64's mixing of the two): every field of the shape moves
// the hash, and so does its position.
uint64_t Mix(uint64_t h, uint64_t v) {
  uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A string's length and bytes, so that "ab"+"c" and "a"+"bc" differ.
uint64_t MixString(uint64_t h, absl::string_view s) {
  return Mix(Mix(h, s.size()), std::hash<std::string_view>{}(std::string_view(s.data(), s.size())));
}

}  // namespace

uint64_t WorkloadEntry::SchedulingHash() {
  if (scheduling_hash != 0) return scheduling_hash;
  // The shape, hashed field by field as it is read (no string of it is built).
  uint64_t h = Mix(0, static_cast<uint64_t>(static_cast<int64_t>(queue_key.priority)));
  for (size_t i = 0; i < pod_sets().size(); ++i) {
    const PodSetRequest& ps = pod_sets()[i];
    h = Mix(MixString(h, ps.name), static_cast<uint64_t>(static_cast<int64_t>(ps.count)));
    const v1::PodSet& spec = object().spec().pod_sets(static_cast<int>(i));
    h = Mix(h, spec.has_min_count() ? 1 : 0);
    if (spec.has_min_count()) h = Mix(h, static_cast<uint64_t>(spec.min_count()));
    h = Mix(h, ps.per_pod.size());
    for (const auto& [resource, value] : ps.per_pod) {
      h = Mix(MixString(h, resource), static_cast<uint64_t>(value));
    }
    if (ps.pod != nullptr) {
      // What flavor assignment reads from the pod: selectors, affinity, tolerations.
      // (Map fields serialize in no fixed order, so the selector is folded in sorted instead.)
      // Most pods have none of them, and then nothing is folded in.
      if (ps.pod->required_node_affinity_size() > 0 || ps.pod->tolerations_size() > 0) {
        v1::PodSpec placement;
        *placement.mutable_required_node_affinity() = ps.pod->required_node_affinity();
        *placement.mutable_tolerations() = ps.pod->tolerations();
        h = MixString(Mix(h, 1), placement.SerializeAsString());
      }
      if (!ps.pod->node_selector().empty()) {
        const std::map<std::string, std::string> selector(ps.pod->node_selector().begin(),
                                                          ps.pod->node_selector().end());
        h = Mix(Mix(h, 2), selector.size());
        for (const auto& [k, v] : selector) h = MixString(MixString(h, k), v);
      }
    }
    h = Mix(h, 3);  // the pod set's end
  }
  scheduling_hash = h == 0 ? 1 : h;
  return scheduling_hash;
}

}  // namespace admitd::engine
