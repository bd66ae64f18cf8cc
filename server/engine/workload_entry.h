// WorkloadEntry: what the engine holds of one workload — the Workload itself (shared
// copy-on-write with the snapshots handed out, or only its encoded form while nothing reads it)
// and the fields scheduling reads off it, parsed once. Internal to server/engine.
#ifndef ADMITD_SERVER_ENGINE_WORKLOAD_ENTRY_H_
#define ADMITD_SERVER_ENGINE_WORKLOAD_ENTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/flavor_assigner.h"
#include "server/engine/pending_queue.h"
#include "server/engine/quota_tree.h"
#include "server/engine/resources.h"
#include "server/engine/workload_decoder.h"

namespace admitd::engine {

struct WorkloadEntry {
  // The workload, shared copy-on-write with the snapshots handed out (Change::workload,
  // WorkloadSnapshot): reading is free, and the first write after a snapshot was taken copies
  // it, so a snapshot never changes and a workload nobody else holds is never copied.
  //
  // A frozen entry (Freeze) holds only the workload's encoding, a tenth of the decoded
  // message's memory: the first read decodes it again and keeps it decoded.
  const v1::Workload& object() const {
    if (object_ == nullptr) Thaw();
    return *object_;
  }
  v1::Workload& mutable_object();
  void set_object(v1::Workload wl);
  // How many times the workload was handed out for writing (mutable_object, set_object): what
  // caches of its fields compare. (No search runs while a caller holds a reference from
  // mutable_object, so a write through it never lands after a cache was filled.)
  uint64_t writes() const { return writes_; }
  // The workload as it stands, as an immutable object for any thread: shared, not copied (a
  // frozen entry hands out the decoded workload it was frozen from while anyone still holds
  // that, else decodes a copy for the caller, and stays frozen).
  std::shared_ptr<const v1::Workload> Share() const;
  // Drops the state the last write replaced (see mutable_object); once the engine call ends.
  void ReleasePrevious() { previous_.reset(); }

  // Holds `encoded` (the workload's wire form, as stored) instead of the decoded workload,
  // until it is first read. The entry's other fields are not set: Restore's first step.
  void SetEncoded(std::string encoded);
  // Decodes the held encoding now, into `reuse` when given (a message Freeze handed back:
  // decoding into it keeps its allocations); DATA_LOSS when it does not parse.
  absl::Status Decode(std::shared_ptr<v1::Workload> reuse = nullptr) const;
  // Takes `decoded` (DecodeStoredWorkload of encoded(), done elsewhere) as the decoded workload.
  void Adopt(DecodedWorkload decoded) const;
  // The encoding held (see SetEncoded); empty after a write.
  absl::string_view encoded() const { return encoded_; }
  // Drops the decoded workload and the pod sets parsed off it when the encoding it was decoded
  // from still matches it (no write since), keeping the encoding; a no-op otherwise. The caller
  // holds no reference into the workload. The candidate keys stay as they are: fill them first.
  // Returns the dropped message when nothing else holds it, for the next Decode to reuse.
  std::shared_ptr<v1::Workload> Freeze();
  // Freeze for a workload held decoded at run time: `encoded` is its encoding as it stands
  // (SerializeAsString of object()). For workloads nothing is expected to read again (finished
  // ones), so that they cost their encoding instead of ten times that.
  void FreezeAs(std::string encoded);
  // Copies the workload into `out`: decoded straight from the encoding when frozen (the entry
  // stays frozen).
  void CopyTo(v1::Workload* out) const;
  bool frozen() const { return object_ == nullptr; }

  // The per-pod requests of each pod set, parsed once per spec (ParsePodSets).
  const std::vector<PodSetRequest>& pod_sets() const {
    if (object_ == nullptr) Thaw();
    return pod_sets_;
  }
  // Parses pod_sets() off the workload's spec again, after the spec changed.
  void ParsePodSets() { FillPodSets(); }
  // The same from each pod set's per-pod request, already computed (by validation).
  void ParsePodSets(const std::vector<ResourceAmounts>& per_pod);

  // The preemption search's candidate order keys (§7.4), read off the workload once per write
  // instead of once per search.
  struct CandidateKeys {
    uint64_t writes = UINT64_MAX;
    bool evicted = false;
    int32_t priority = 0;
    absl::Time reserved_at;
  };
  const CandidateKeys& candidate_keys();

  std::string cluster_queue;  // where it queues or holds its reservation
  // What it holds while it holds a reservation (empty otherwise).
  const FlavorResourceQuantities& usage() const { return usage_; }
  void SetUsage(FlavorResourceQuantities usage) {
    usage_ = std::move(usage);
    usage_ids_valid_ = false;
  }
  void ClearUsage() { SetUsage({}); }
  // The usage by the quota tree's pair ids, for the preemption search's trial removals: looked
  // up once per usage.
  const std::vector<std::pair<int, int64_t>>& UsageIds(QuotaTree& tree) {
    if (!usage_ids_valid_) {
      usage_ids_.clear();
      for (const auto& [fr, v] : usage_) usage_ids_.emplace_back(tree.InternPair(fr), v);
      usage_ids_valid_ = true;
    }
    return usage_ids_;
  }
  // kQueued: in its ClusterQueue's pending queue, active or inadmissible (the queue knows).
  // kBackoff: pending, but status.requeueState.requeueAt is still ahead (see Impl::timers_).
  enum class Where { kNone, kQueued, kOrphan, kBackoff } where = Where::kNone;
  QueueKey queue_key;
  uint64_t reserved_cycle = 0;  // the scheduling cycle that reserved its quota
  // Simulated gone for an assignment computed again within a cycle (§6.5.1): neither its usage
  // nor the workload itself is in the snapshot, so it is no preemption candidate.
  bool simulated_gone = false;
  // The scheduling shape (§5.4): priority and, per pod set, name, count, minCount, requests and
  // the pod fields flavor assignment reads. 0 until computed; reset when the spec changes.
  uint64_t scheduling_hash = 0;
  // scheduling_hash, computed on first use (from queue_key.priority: SetQueueKey first).
  uint64_t SchedulingHash();

  // Flavor scan progress from the last attempt (§4.7), and what it was computed against.
  struct LastAssignment {
    ScanProgress progress;
    uint64_t generation = 0;  // the quota tree's generation
    uint64_t cycle = 0;
    bool PendingFlavors() const {
      for (const auto& per_resource : progress) {
        for (const auto& [resource, idx] : per_resource) {
          if (idx != -1) return true;
        }
      }
      return false;
    }
  };
  std::optional<LastAssignment> last_assignment;

  // namespace/name: the key of the engine's workload map, which set_key points the entry at
  // (read without decoding a frozen workload, and never copied). An entry outside the map
  // composes it from its object.
  const std::string& key() const {
    if (key_ != nullptr) return *key_;
    own_key_ = object().metadata().namespace_() + "/" + object().metadata().name();
    return own_key_;
  }
  void set_key(const std::string* key) { key_ = key; }

 private:
  // Decodes encoded_ into object_ (and parses pod_sets_); the engine checked at start-up that it
  // parses (Decode), so a failure here is a broken invariant.
  void Thaw() const;
  void FillPodSets() const;
  // Points each pod set's `pod` at its template in object_.
  void PointPodSets() const;

  const std::string* key_ = nullptr;  // the map's key (map nodes never move)
  mutable std::string own_key_;  // key() of an entry outside the map
  // Null while frozen. Mutable: a read of a frozen entry decodes it (engine calls are serial).
  mutable std::shared_ptr<v1::Workload> object_;
  std::shared_ptr<const v1::Workload> previous_;
  // The decoded workload a run-time Freeze dropped, alive while a snapshot of it is held
  // (watch events, answers, the commit): Share and a thaw take it instead of decoding.
  mutable std::weak_ptr<v1::Workload> dropped_;
  // The workload's encoding while it matches object_ (empty otherwise): set by SetEncoded,
  // dropped by the first write.
  std::string encoded_;
  uint64_t writes_ = 0;
  mutable std::vector<PodSetRequest> pod_sets_;
  CandidateKeys candidate_keys_;
  FlavorResourceQuantities usage_;
  std::vector<std::pair<int, int64_t>> usage_ids_;
  bool usage_ids_valid_ = false;
};

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_WORKLOAD_ENTRY_H_
