#include "server/engine/workload_entry.h"

#include <cstdio>
#include <cstdlib>

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

}  // namespace admitd::engine
