// Engine: changes, recovery and the public forwarding. Queue-side objects are in
// engine_objects.cc, workloads in engine_workloads.cc, scheduling in engine_cycle.cc.
#include "server/engine/engine.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/engine_pods_internal.h"
#include "server/engine/quantity.h"
#include "server/engine/validation.h"
#include "server/engine/workload_decoder.h"

namespace admitd::engine {

const char* KindName(v1::ObjectKind kind) {
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: return "ResourceFlavor";
    case v1::OBJECT_KIND_COHORT: return "Cohort";
    case v1::OBJECT_KIND_CLUSTER_QUEUE: return "ClusterQueue";
    case v1::OBJECT_KIND_LOCAL_QUEUE: return "LocalQueue";
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: return "WorkloadPriorityClass";
    case v1::OBJECT_KIND_WORKLOAD: return "Workload";
    case v1::OBJECT_KIND_ADMISSION_CHECK: return "AdmissionCheck";
    case v1::OBJECT_KIND_NAMESPACE: return "Namespace";
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: return "MultiKueueConfig";
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: return "MultiKueueCluster";
    default: return "object";
  }
}

v1::ObjectKind KindOf(const v1::QueueObject& o) {
  switch (o.kind_case()) {
    case v1::QueueObject::kResourceFlavor: return v1::OBJECT_KIND_RESOURCE_FLAVOR;
    case v1::QueueObject::kCohort: return v1::OBJECT_KIND_COHORT;
    case v1::QueueObject::kClusterQueue: return v1::OBJECT_KIND_CLUSTER_QUEUE;
    case v1::QueueObject::kLocalQueue: return v1::OBJECT_KIND_LOCAL_QUEUE;
    case v1::QueueObject::kWorkloadPriorityClass: return v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS;
    case v1::QueueObject::kAdmissionCheck: return v1::OBJECT_KIND_ADMISSION_CHECK;
    case v1::QueueObject::kNamespace: return v1::OBJECT_KIND_NAMESPACE;
    case v1::QueueObject::kMultiKueueConfig: return v1::OBJECT_KIND_MULTIKUEUE_CONFIG;
    case v1::QueueObject::kMultiKueueCluster: return v1::OBJECT_KIND_MULTIKUEUE_CLUSTER;
    default: return v1::OBJECT_KIND_UNSPECIFIED;
  }
}

v1::ObjectMeta* MutableMeta(v1::QueueObject* o) {
  switch (o->kind_case()) {
    case v1::QueueObject::kResourceFlavor: return o->mutable_resource_flavor()->mutable_metadata();
    case v1::QueueObject::kCohort: return o->mutable_cohort()->mutable_metadata();
    case v1::QueueObject::kClusterQueue: return o->mutable_cluster_queue()->mutable_metadata();
    case v1::QueueObject::kLocalQueue: return o->mutable_local_queue()->mutable_metadata();
    case v1::QueueObject::kWorkloadPriorityClass:
      return o->mutable_workload_priority_class()->mutable_metadata();
    case v1::QueueObject::kAdmissionCheck: return o->mutable_admission_check()->mutable_metadata();
    case v1::QueueObject::kNamespace: return o->mutable_namespace_()->mutable_metadata();
    case v1::QueueObject::kMultiKueueConfig:
      return o->mutable_multi_kueue_config()->mutable_metadata();
    case v1::QueueObject::kMultiKueueCluster:
      return o->mutable_multi_kueue_cluster()->mutable_metadata();
    default: return nullptr;
  }
}

const v1::ObjectMeta& Meta(const v1::QueueObject& o) {
  return const_cast<v1::QueueObject&>(o).kind_case() == v1::QueueObject::KIND_NOT_SET
             ? v1::ObjectMeta::default_instance()
             : *MutableMeta(const_cast<v1::QueueObject*>(&o));
}

// The object without server-owned fields: what "unchanged" compares.

std::string ObjectKey(v1::ObjectKind kind, const std::string& ns, const std::string& name) {
  return kind == v1::OBJECT_KIND_LOCAL_QUEUE || kind == v1::OBJECT_KIND_WORKLOAD
             ? absl::StrCat(ns, "/", name)
             : name;
}


absl::Time FromProto(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixNanos(ts.seconds() * 1000000000 + ts.nanos());
}

google::protobuf::Timestamp ToProtoTime(absl::Time t) {
  google::protobuf::Timestamp ts;
  const int64_t nanos = absl::ToUnixNanos(t);
  ts.set_seconds(nanos / 1000000000);
  ts.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return ts;
}

// ---- Changes ------------------------------------------------------------------------------

void Engine::Impl::EmitWorkload(WorkloadEntry& entry, v1::WatchEvent::Type type,
                                const std::string& reason, const std::string& message) {
  // Kueue's finalizer stays on a Workload until it finishes (its job's controller removes it).
  google::protobuf::RepeatedPtrField<std::string>* finalizers =
      entry.mutable_object().mutable_metadata()->mutable_finalizers();
  const bool finished = IsConditionTrue(entry.object(), kFinished);
  const bool has = std::find(finalizers->begin(), finalizers->end(), kResourceInUseFinalizer) !=
                   finalizers->end();
  if (finished && has) {
    finalizers->erase(std::remove(finalizers->begin(), finalizers->end(), kResourceInUseFinalizer),
                      finalizers->end());
  } else if (!finished && !has) {
    finalizers->Add(kResourceInUseFinalizer);
  }
  entry.mutable_object().mutable_metadata()->set_resource_version(++revision_);
  if (pod_workloads::IsPodWorkload(entry.object())) dirty_pod_workloads_.insert(entry.key());
  if (!pods_of_workload_.empty()) MarkElasticPodsDirty(entry.object());
  Change c;
  c.revision = revision_;
  c.kind = v1::OBJECT_KIND_WORKLOAD;
  c.key = entry.key();
  c.type = type;
  c.reason = reason;
  c.message = message;
  // The snapshot is taken in TakeChanges, once per workload however often it changed; a deleted
  // workload is about to disappear, so it is taken now.
  if (type == v1::WatchEvent::DELETED) c.workload = entry.Share();
  changes_.push_back(std::move(c));
}

std::vector<Change> Engine::Impl::TakeChanges(bool keep_snapshots) {
  // The workloads the batch deleted: their DELETED Change took the snapshot as they went.
  std::map<std::string, std::shared_ptr<const v1::Workload>> deleted;
  for (const Change& c : changes_) {
    if (c.kind == v1::OBJECT_KIND_WORKLOAD && c.workload) deleted[c.key] = c.workload;
  }
  // The encodings of the finished workloads frozen below, by snapshot.
  absl::flat_hash_map<const v1::Workload*, std::shared_ptr<const std::string>> encodings;
  for (Change& c : changes_) {
    if (c.kind != v1::OBJECT_KIND_WORKLOAD || c.workload) continue;
    if (auto d = deleted.find(c.key); d != deleted.end()) {
      c.workload = d->second;
    } else if (auto it = workloads_.find(c.key); it != workloads_.end()) {
      WorkloadEntry& entry = it->second;
      const bool was_frozen = entry.frozen();
      c.workload = entry.Share();  // shared: the next write copies it (copy-on-write)
      entry.ReleasePrevious();
      if (!was_frozen && IsConditionTrue(*c.workload, kFinished)) {
        // Nothing schedules a finished workload again: it costs its encoding (a tenth of the
        // decoded message) until something reads it, and the commit stores this encoding.
        auto encoded = std::make_shared<const std::string>(c.workload->SerializeAsString());
        entry.FreezeAs(*encoded);
        encodings.emplace(c.workload.get(), std::move(encoded));
      }
    }
    if (!encodings.empty()) {
      if (auto e = encodings.find(c.workload.get()); e != encodings.end()) c.encoded = e->second;
    }
  }
  // A live workload's snapshot is shared from its entry (WorkloadSnapshot); only the deleted
  // ones need keeping.
  if (keep_snapshots) {
    deleted_snapshots_.swap(deleted);
  } else {
    deleted_snapshots_.clear();
  }
  std::vector<Change> out;
  out.swap(changes_);
  // The next batch is likely about as large: grow once instead of once per doubling.
  changes_.reserve(out.size());
  return out;
}

void Engine::Impl::EmitObject(v1::ObjectKind kind, const std::string& key, v1::QueueObject* object,
                              v1::WatchEvent::Type type, const std::string& reason) {
  MutableMeta(object)->set_resource_version(++revision_);
  Change c;
  c.revision = revision_;
  c.kind = kind;
  c.key = key;
  c.type = type;
  c.reason = reason;
  c.queue_object = std::make_shared<const v1::QueueObject>(*object);
  changes_.push_back(std::move(c));
}

std::string Engine::Impl::NewUid() {
  // Deterministic: derived from the revision the object is created at.
  // "00000000-0000-4000-8000-" and the revision in 12 lowercase hex digits.
  std::string uid = "00000000-0000-4000-8000-000000000000";
  uint64_t v = revision_ + 1;
  for (size_t i = uid.size(); i > uid.size() - 12 && v != 0; --i, v >>= 4) {
    uid[i - 1] = "0123456789abcdef"[v & 0xf];
  }
  return uid;
}

// ---- Recovery -------------------------------------------------------------------------------

absl::Status Engine::Impl::Restore(const v1::QueueObject& object) {
  const v1::ObjectKind kind = KindOf(object);
  const v1::ObjectMeta& meta = Meta(object);
  const std::string key = ObjectKey(kind, meta.namespace_(), meta.name());
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
      flavors_[key] = object;
      flavor_map_valid_ = false;
      break;
    case v1::OBJECT_KIND_COHORT: cohorts_[key] = object; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE:
      local_queues_[key] = object;
      if (!IsRunning(object.local_queue().spec().stop_policy())) ++stopped_local_queues_;
      break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: priority_classes_[key] = object; break;
    case v1::OBJECT_KIND_ADMISSION_CHECK: admission_checks_[key] = object; break;
    case v1::OBJECT_KIND_NAMESPACE: namespaces_[key] = object; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: multikueue_configs_[key] = object; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: multikueue_clusters_[key] = object; break;
    case v1::OBJECT_KIND_CLUSTER_QUEUE: {
      ClusterQueueState& cq = cluster_queues_[key];
      cq_by_name_[key] = &cq;
      cq.object = object;
      cq.Rebuild();
      break;
    }
    default: return absl::DataLossError("a stored queue object has no kind");
  }
  return absl::OkStatus();
}

namespace {

// The entry of the restored workload `key` (namespace/name). The store yields workloads with
// keys ascending, so each normally goes at the end of the map, in constant time.
WorkloadEntry& RestoreEntry(std::map<std::string, WorkloadEntry>* workloads, std::string key) {
  auto it = workloads->empty() || workloads->rbegin()->first < key
                ? workloads->emplace_hint(workloads->end(), std::move(key), WorkloadEntry())
                : workloads->try_emplace(std::move(key)).first;
  it->second.set_key(&it->first);
  return it->second;
}

}  // namespace

absl::Status Engine::Impl::Restore(v1::Workload&& workload) {
  WorkloadEntry& entry = RestoreEntry(
      &workloads_,
      absl::StrCat(workload.metadata().namespace_(), "/", workload.metadata().name()));
  entry.set_object(std::move(workload));
  entry.ParsePodSets();
  return absl::OkStatus();
}

absl::Status Engine::Impl::RestoreEncoded(absl::string_view key, absl::string_view encoded) {
  RestoreEntry(&workloads_, std::string(key)).SetEncoded(std::string(encoded));
  return absl::OkStatus();
}

WorkloadEntry& Engine::Impl::EntryFor(const std::string& key) {
  auto it = workloads_.try_emplace(key).first;
  it->second.set_key(&it->first);
  return it->second;
}

namespace {

// Decodes each workload when FinishRestore asks for it, on its thread, into the message the
// previous one was frozen from.
class DecodeInPlace final : public WorkloadDecoder {
 public:
  void Start(std::vector<absl::string_view> encodings) override {
    encodings_ = std::move(encodings);
  }
  DecodedWorkload Next() override {
    return DecodeStoredWorkload(encodings_[next_++], std::move(spare_));
  }
  void Recycle(std::shared_ptr<v1::Workload> spare) override { spare_ = std::move(spare); }

 private:
  std::vector<absl::string_view> encodings_;
  size_t next_ = 0;
  std::shared_ptr<v1::Workload> spare_;
};

}  // namespace

absl::Status Engine::Impl::FinishRestore(uint64_t revision, WorkloadDecoder* decoder) {
  revision_ = revision;
  for (auto& [name, cq] : cluster_queues_) RefreshActive(cq);
  RebuildQuotaTree();
  DecodeInPlace in_place;
  if (decoder == nullptr) decoder = &in_place;
  // The workloads restored in their encoded form, in the order the walk below reaches them. It
  // decodes each for the indexes and queues, then freezes it again: the engine keeps the decoded
  // form of the workloads it reads after start-up. The walk writes no workload but the one it
  // stands on, so the encodings ahead of it stay as they are while the decoder reads them.
  std::vector<const WorkloadEntry*> encoded;
  std::vector<absl::string_view> encodings;
  for (const auto& [key, entry] : workloads_) {
    if (!entry.frozen()) continue;
    encoded.push_back(&entry);
    encodings.push_back(entry.encoded());
  }
  decoder->Start(std::move(encodings));
  size_t next = 0;
  for (auto& [key, entry] : workloads_) {
    const bool restored_encoded = next < encoded.size() && encoded[next] == &entry;
    if (restored_encoded) {
      ++next;
      DecodedWorkload decoded = decoder->Next();
      if (decoded.workload == nullptr) {
        return absl::DataLossError(absl::StrCat("stored workload ", key, " cannot be parsed"));
      }
      if (entry.frozen()) {
        entry.Adopt(std::move(decoded));
      } else {  // read (so decoded) while an earlier workload was restored
        decoder->Recycle(std::move(decoded.workload));
      }
      const v1::ObjectMeta& meta = entry.object().metadata();
      if (key.size() != meta.namespace_().size() + 1 + meta.name().size() ||
          !absl::StartsWith(key, meta.namespace_()) || !absl::EndsWith(key, meta.name()) ||
          key[meta.namespace_().size()] != '/') {
        return absl::DataLossError(absl::StrCat("stored workload ", key, " holds workload ",
                                                meta.namespace_(), "/", meta.name()));
      }
    }
    RestoreWorkload(entry);
    if (restored_encoded) {
      if (std::shared_ptr<v1::Workload> spare = entry.Freeze()) decoder->Recycle(std::move(spare));
    }
  }
  FinishRestorePods();  // after the workloads: a pod finds its Workload by owner reference
  AfsRestore();
  changes_.clear();
  return absl::OkStatus();
}

void Engine::Impl::RestoreWorkload(WorkloadEntry& entry) {
  IndexChain(entry, /*add=*/true);
  const v1::WorkloadState state = StateOf(entry.object());
  if (state == v1::WORKLOAD_STATE_FINISHED) {
    entry.cluster_queue = entry.object().status().admission().cluster_queue();
    return;
  }
  if (entry.object().status().has_admission() && IsConditionTrue(entry.object(), kQuotaReserved)) {
    entry.cluster_queue = entry.object().status().admission().cluster_queue();
    // What the preemption search reads of a candidate, filled while the workload is decoded.
    SetQueueKey(entry);
    entry.candidate_keys();
    entry.SetUsage(UsageFromAdmission(entry));
    ChargeUsage(entry, +1);
    // Re-arms the maximum execution time of an admitted workload.
    SyncAdmitted(entry, absl::UnixEpoch());
    return;
  }
  // Pending: back in its queue. Whether it was inadmissible is not stored; it gets a fresh
  // attempt, which writes nothing unless its pending reason changed.
  Enqueue(entry, absl::UnixEpoch(), /*emit_reason_change=*/false);
}

// ---- Engine: forwarding ---------------------------------------------------------------------

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(options)) {}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

absl::Status Engine::Restore(const v1::QueueObject& object) { return impl_->Restore(object); }
absl::Status Engine::Restore(const v1::Workload& workload) {
  return impl_->Restore(v1::Workload(workload));
}
absl::Status Engine::Restore(v1::Workload&& workload) { return impl_->Restore(std::move(workload)); }
absl::Status Engine::RestoreEncoded(absl::string_view key, absl::string_view encoded) {
  return impl_->RestoreEncoded(key, encoded);
}
absl::Status Engine::Restore(const v1::PodObservation& pod) { return impl_->Restore(pod); }
absl::StatusOr<v1::ReportPodsResponse> Engine::ReportPods(const v1::ReportPodsRequest& request,
                                                          absl::Time now) {
  return impl_->ReportPods(request, now);
}
void Engine::AddDirectivesFor(const v1::ReportPodsRequest& request, absl::Time now,
                              v1::ReportPodsResponse* response) const {
  impl_->AddDirectivesFor(request, now, response);
}
std::vector<v1::PodDirective> Engine::TakeDirectiveUpdates(absl::Time now) {
  return impl_->TakeDirectiveUpdates(now);
}
v1::ListDirectivesResponse Engine::ListDirectives(const v1::ListDirectivesRequest& request,
                                                  absl::Time now) const {
  return impl_->ListDirectives(request, now);
}
absl::Status Engine::FinishRestore(uint64_t revision, WorkloadDecoder* decoder) {
  return impl_->FinishRestore(revision, decoder);
}
absl::StatusOr<v1::ApplyResponse> Engine::Apply(const v1::ApplyRequest& request, absl::Time now) {
  return impl_->Apply(request, now);
}
absl::StatusOr<v1::QueueObject> Engine::Get(const v1::GetObjectRequest& request) const {
  return impl_->Get(request);
}
absl::StatusOr<v1::ListObjectsResponse> Engine::List(const v1::ListObjectsRequest& request) const {
  return impl_->List(request);
}
absl::Status Engine::Delete(const v1::DeleteObjectRequest& request, absl::Time now) {
  return impl_->Delete(request, now);
}
absl::StatusOr<v1::ImportResponse> Engine::Import(const v1::ImportRequest& request,
                                                  absl::Time now) {
  return impl_->Import(request, now);
}
std::vector<const v1::Workload*> Engine::ResizeTargets(const v1::ResizeRequest& request) {
  return impl_->ResizeTargets(request);
}

void Engine::RecordAudit(v1::Event event, absl::Time now) {
  impl_->RecordAudit(event, now);
}
absl::StatusOr<v1::ResizeResponse> Engine::Resize(const v1::ResizeRequest& request,
                                                  absl::Time now) {
  return impl_->Resize(request, now);
}

absl::StatusOr<v1::SubmitResponse> Engine::Submit(const v1::SubmitRequest& request,
                                                  absl::Time now) {
  return impl_->Submit(request.workload(), now);
}
absl::StatusOr<v1::SubmitResponse> Engine::Submit(v1::SubmitRequest&& request, absl::Time now,
                                                  Answer answer) {
  return impl_->Submit(std::move(*request.mutable_workload()), now, answer);
}
absl::StatusOr<v1::ReleaseQuotaResponse> Engine::ReleaseQuota(
    const v1::ReleaseQuotaRequest& request, absl::Time now, Answer answer) {
  return impl_->ReleaseQuota(request, now, answer);
}
absl::Status Engine::DeleteWorkload(const v1::DeleteWorkloadRequest& request, absl::Time now) {
  return impl_->DeleteWorkload(request, now);
}
absl::StatusOr<v1::Workload> Engine::GetWorkload(const v1::GetWorkloadRequest& request) const {
  return impl_->GetWorkload(request);
}
const v1::Workload* Engine::FindWorkload(const std::string& ns, const std::string& name) const {
  return impl_->PeekWorkload(ns, name);
}
std::shared_ptr<const v1::Workload> Engine::WorkloadSnapshot(const std::string& ns,
                                                             const std::string& name) const {
  return impl_->WorkloadSnapshot(ns, name);
}
absl::StatusOr<v1::ListWorkloadsResponse> Engine::ListWorkloads(
    const v1::ListWorkloadsRequest& request) const {
  return impl_->ListWorkloads(request);
}
absl::StatusOr<v1::AdmitResponse> Engine::Describe(const v1::AdmitRequest& request,
                                                   absl::Time now) const {
  return impl_->Describe(request, now);
}
absl::StatusOr<v1::ReportPodsReadyResponse> Engine::ReportPodsReady(
    const v1::ReportPodsReadyRequest& request, absl::Time now) {
  return impl_->ReportPodsReady(request, now);
}

absl::StatusOr<v1::SetActiveResponse> Engine::SetActive(const v1::SetActiveRequest& request,
                                                        absl::Time now) {
  return impl_->SetActive(request, now);
}
absl::StatusOr<v1::SetAdmissionCheckStateResponse> Engine::SetAdmissionCheckState(
    const v1::SetAdmissionCheckStateRequest& request, absl::Time now) {
  return impl_->SetAdmissionCheckState(request, now);
}
absl::Time Engine::NextDeadline() const { return impl_->NextDeadline(); }
void Engine::Tick(absl::Time now) { impl_->Tick(now); }
CycleStats Engine::RunCycle(absl::Time now) { return impl_->RunCycle(now); }
bool Engine::HasPendingHeads() const { return impl_->HasPendingHeads(); }
uint64_t Engine::revision() const { return impl_->revision(); }
std::vector<PendingCount> Engine::PendingCounts() const { return impl_->PendingCounts(); }
std::vector<NodeShare> Engine::WeightedShares() const { return impl_->WeightedShares(); }
std::vector<LocalQueueUsage> Engine::AdmissionFairSharingUsages() const {
  return impl_->AdmissionFairSharingUsages();
}
std::vector<std::pair<std::string, int64_t>> Engine::ObjectCounts() const {
  return impl_->ObjectCounts();
}

std::vector<Change> Engine::TakeChanges(bool keep_snapshots) {
  return impl_->TakeChanges(keep_snapshots);
}
void Engine::ForgetSnapshots() { impl_->ForgetSnapshots(); }

v1::WorkloadState StateOf(const v1::Workload& wl) {
  if (IsConditionTrue(wl, kFinished)) return v1::WORKLOAD_STATE_FINISHED;
  if (wl.spec().has_active() && !wl.spec().active()) return v1::WORKLOAD_STATE_INACTIVE;
  const bool reserved = IsConditionTrue(wl, kQuotaReserved) && wl.status().has_admission();
  if (reserved && IsConditionTrue(wl, kEvicted)) return v1::WORKLOAD_STATE_EVICTED;
  if (reserved && IsConditionTrue(wl, kAdmitted)) return v1::WORKLOAD_STATE_ADMITTED;
  if (reserved) return v1::WORKLOAD_STATE_QUOTA_RESERVED;
  return v1::WORKLOAD_STATE_PENDING;
}

}  // namespace admitd::engine
