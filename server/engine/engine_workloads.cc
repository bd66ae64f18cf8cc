// Engine: the workload lifecycle (submit, delete, get, list; release is engine_release.cc) and
// queue placement.
#include <algorithm>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/quantity.h"
#include "server/engine/validation.h"

namespace admitd::engine {
namespace {

constexpr int kDefaultPageSize = 500;

constexpr int kMaxPageSize = 5000;

}  // namespace

// ---- Workloads ------------------------------------------------------------------------------

std::string Engine::Impl::ClusterQueueOf(const std::string& ns,
                                         const std::string& local_queue) const {
  auto it = local_queues_.find(absl::StrCat(ns, "/", local_queue));
  return it == local_queues_.end() ? "" : it->second.local_queue().spec().cluster_queue();
}

WorkloadEntry* Engine::Impl::FindWorkload(const std::string& ns, const std::string& name) {
  auto it = workloads_.find(absl::StrCat(ns, "/", name));
  return it == workloads_.end() ? nullptr : &it->second;
}

const WorkloadEntry* Engine::Impl::FindWorkload(const std::string& ns,
                                                const std::string& name) const {
  auto it = workloads_.find(absl::StrCat(ns, "/", name));
  return it == workloads_.end() ? nullptr : &it->second;
}

void Engine::Impl::SetQueueKey(WorkloadEntry& entry) {
  const v1::Workload& wl = entry.object();
  if (entry.queue_key.priority != wl.spec().priority()) entry.scheduling_hash = 0;  // in the shape
  entry.queue_key.priority = wl.spec().priority();
  entry.queue_key.timestamp = FromProto(wl.metadata().creation_timestamp());
  // §5.2: a workload evicted by a PodsReady timeout (with requeuingStrategy.timestamp Eviction)
  // or an admission check queues from the time of its eviction, not its creation.
  if (const v1::Condition* evicted = FindCondition(wl, kEvicted);
      evicted != nullptr && evicted->status() == "True" &&
      ((evicted->reason() == kReasonPodsReadyTimeout &&
        options_.wait_for_pods_ready.requeue_from_eviction) ||
       evicted->reason() == kReasonAdmissionCheck)) {
    entry.queue_key.timestamp = FromProto(evicted->last_transition_time());
  }
  entry.queue_key.afs_usage = 0;
  if (options_.admission_fair_sharing.enabled) {
    // §20.3: in a ClusterQueue that uses it, the LocalQueue's usage orders first.
    const std::string lq_key = absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name());
    if (UsesAfs(ClusterQueueOf(wl.metadata().namespace_(), wl.spec().queue_name()))) {
      entry.queue_key.afs_usage = AfsUsage(lq_key);
    }
  }
  entry.queue_key.uid = wl.metadata().uid();
  entry.queue_key.key = entry.key();
  entry.queue_key.entry = &entry;
}

void Engine::Impl::Enqueue(WorkloadEntry& entry, absl::Time now, bool emit_reason_change) {
  SetQueueKey(entry);
  const v1::Workload& wl = entry.object();
  const std::string cq_name = ClusterQueueOf(wl.metadata().namespace_(), wl.spec().queue_name());
  entry.cluster_queue = cq_name;
  if (wl.spec().has_active() && !wl.spec().active()) {
    // A deactivated workload is not queued at all (§6.6).
    entry.where = WorkloadEntry::Where::kNone;
    if (emit_reason_change) {
      MarkPending(entry, kReasonDeactivated, "The workload is deactivated", now);
    } else {
      SetPending(&entry.mutable_object(), kReasonDeactivated, "The workload is deactivated", now);
    }
    return;
  }
  if (wl.status().requeue_state().has_requeue_at()) {
    // A requeue backoff still running keeps it out of the heap until Tick ends it (§9.4).
    const absl::Time at = FromProto(wl.status().requeue_state().requeue_at());
    if (at > now) {
      entry.where = WorkloadEntry::Where::kBackoff;
      ArmTimer(at, entry.key());
      if (auto it = cluster_queues_.find(cq_name); it != cluster_queues_.end()) {
        it->second.backing_off.insert(entry.key());
      }
      return;
    }
    FinishBackoff(entry, now);
  }
  if (cq_name.empty()) {
    // §6.6: the LocalQueue does not exist (yet); it waits until the LocalQueue is created.
    entry.where = WorkloadEntry::Where::kOrphan;
    lq_orphans_[absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name())].insert(
        entry.key());
    const std::string message =
        absl::StrCat("LocalQueue ", wl.spec().queue_name(), " doesn't exist");
    if (emit_reason_change) {
      MarkPending(entry, kReasonMisconfigured, message, now);
    } else {
      SetPending(&entry.mutable_object(), kReasonMisconfigured, message, now);
    }
    return;
  }
  ClusterQueueState* const found = FindClusterQueue(cq_name);
  if (found == nullptr) {
    entry.where = WorkloadEntry::Where::kOrphan;
    orphans_[cq_name].insert(entry.key());
    if (emit_reason_change) {
      MarkPending(entry, kReasonMisconfigured,
                  absl::StrCat("ClusterQueue ", cq_name, " doesn't exist"), now);
    } else {
      SetPending(&entry.mutable_object(), kReasonMisconfigured,
                 absl::StrCat("ClusterQueue ", cq_name, " doesn't exist"), now);
    }
    return;
  }
  ClusterQueueState& cq = *found;
  entry.where = WorkloadEntry::Where::kQueued;
  if (!cq.pending.Add(&entry.queue_key, entry.SchedulingHash())) {
    // An equivalent workload just failed: no attempt until the next requeue event (§5.4).
    if (emit_reason_change) {
      MarkBypassed(entry, *cq.pending.SetAsideReason(entry.queue_key.shape), now);
    }
    return;
  }
  RefreshHeads(cq);
  if (!cq.active()) {
    const std::string message = absl::StrCat("ClusterQueue ", cq_name, " is inactive");
    if (emit_reason_change) {
      MarkPending(entry, kReasonSuspended, message, now);
    } else {
      SetPending(&entry.mutable_object(), kReasonSuspended, message, now);
    }
  }
}

void Engine::Impl::SetAsideShape(ClusterQueueState& cq, WorkloadEntry& failed,
                                 const std::string& reason) {
  // Kueue moves the equivalent workloads without reconciling them, so a condition they carry
  // stays as it is until they enter a queue again (Enqueue).
  cq.pending.SetAside(failed.SchedulingHash(), reason);
}

void Engine::Impl::MarkBypassed(WorkloadEntry& entry, const std::string& reason, absl::Time now) {
  const v1::Condition* c = FindCondition(entry.object(), kQuotaReserved);
  if (c != nullptr &&
      (c->reason() == kReasonDeactivated || c->reason() == kReasonPendingEvaluation ||
       c->reason() == kReasonSuspended || c->reason() == "Pending")) {
    MarkPending(entry, reason,
                "Bypassed scheduling evaluation because an equivalent workload recently failed",
                now);
  }
}

bool Engine::Impl::ActivePending(const WorkloadEntry& entry) const {
  if (entry.where != WorkloadEntry::Where::kQueued) return false;
  const ClusterQueueState* cq = FindClusterQueue(entry.cluster_queue);
  return cq != nullptr && cq->pending.IsActive(&entry.queue_key);
}

void Engine::Impl::Dequeue(WorkloadEntry& entry) {
  switch (entry.where) {
    case WorkloadEntry::Where::kQueued: {
      if (ClusterQueueState* cq = FindClusterQueue(entry.cluster_queue); cq != nullptr) {
        if (cq->sticky == entry.key()) cq->sticky.clear();
        cq->pending.Remove(&entry.queue_key);
        RefreshHeads(*cq);
      }
      break;
    }
    case WorkloadEntry::Where::kOrphan: {
      // Waiting for its ClusterQueue, or (no ClusterQueue known) for its LocalQueue.
      auto& waiting = entry.cluster_queue.empty() ? lq_orphans_ : orphans_;
      auto it = waiting.find(entry.cluster_queue.empty()
                                 ? absl::StrCat(entry.object().metadata().namespace_(), "/",
                                                entry.object().spec().queue_name())
                                 : entry.cluster_queue);
      if (it != waiting.end()) {
        it->second.erase(entry.key());
        if (it->second.empty()) waiting.erase(it);
      }
      break;
    }
    case WorkloadEntry::Where::kBackoff: {  // its timer is dropped when it fires
      auto it = cluster_queues_.find(entry.cluster_queue);
      if (it != cluster_queues_.end()) it->second.backing_off.erase(entry.key());
      break;
    }
    case WorkloadEntry::Where::kNone: break;
  }
  entry.where = WorkloadEntry::Where::kNone;
}

void Engine::Impl::RequeueInadmissible(ClusterQueueState& cq) {
  const std::string root = quota_tree_.Root(cq.name());
  auto members = cohort_members_.find(root);
  if (members == cohort_members_.end()) {
    std::vector<ClusterQueueState*> found;
    for (const std::string& name : quota_tree_.ClusterQueuesUnder(root)) {
      auto it = cluster_queues_.find(name);
      if (it != cluster_queues_.end()) found.push_back(&it->second);
    }
    members = cohort_members_.emplace(root, std::move(found)).first;
  }
  for (ClusterQueueState* member : members->second) RequeueInadmissibleOne(*member);
}

void Engine::Impl::RebuildQuotaTree() {
  std::map<std::string, const v1::ClusterQueueSpec*> cqs;
  std::map<std::string, FlavorResourceAmounts> usage;
  for (const auto& [name, cq] : cluster_queues_) {
    cqs[name] = &cq.spec_object().spec();
    usage[name] = cq.usage;
  }
  std::map<std::string, const v1::CohortSpec*> cohorts;
  for (const auto& [name, object] : cohorts_) cohorts[name] = &object.cohort().spec();
  quota_tree_.Rebuild(cqs, cohorts, usage);
  for (auto& [name, cq] : cluster_queues_) quota_tree_.Attach(name, &cq);
  cohort_members_.clear();
}

void Engine::Impl::RequeueInadmissibleOne(ClusterQueueState& cq) {
  if (!cq.pending.AnySetAside() && cq.pending.inadmissible() == 0) return;
  cq.pending.RequeueAll();
  RefreshHeads(cq);
}

namespace {

// Of the `count` pods of pod set `name` admitted, those that still hold quota: at most its count
// in the spec less its reclaimable pods. Both are found by a scan of the few pod sets, no map
// built per call; the last entry for a name counts, as a map filled in order would keep it.
int64_t PodsHoldingQuota(const v1::Workload& wl, const std::string& name, int32_t count) {
  int32_t in_spec = 0, reclaimable = 0;
  for (const v1::PodSet& ps : wl.spec().pod_sets()) {
    if (ps.name() == name) in_spec = ps.count();
  }
  for (const v1::ReclaimablePod& r : wl.status().reclaimable_pods()) {
    if (r.name() == name) reclaimable = r.count();
  }
  return std::max<int64_t>(0, std::min<int64_t>(count, in_spec - reclaimable));
}

}  // namespace

FlavorResourceQuantities Engine::Impl::UsageFromAssignment(const WorkloadEntry& entry,
                                                           const Assignment& assignment) const {
  FlavorResourceQuantities usage;
  for (size_t i = 0; i < entry.pod_sets().size(); ++i) {
    const int32_t count = assignment.counts[i];
    if (count <= 0) continue;
    const int64_t effective = PodsHoldingQuota(entry.object(), entry.pod_sets()[i].name, count);
    for (const auto& [resource, flavor] : assignment.flavors[i]) {
      const int64_t per_pod = assignment.totals[i].at(resource) / count;
      const int64_t v = per_pod * effective;
      if (v != 0) usage[{flavor, resource}] += v;
    }
  }
  return usage;
}

FlavorResourceQuantities Engine::Impl::UsageFromAdmission(const WorkloadEntry& entry) const {
  FlavorResourceQuantities usage;
  const v1::Workload& wl = entry.object();
  for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
    if (psa.count() <= 0) continue;
    const int64_t effective = PodsHoldingQuota(wl, psa.name(), psa.count());
    for (const auto& [resource, flavor] : psa.flavors()) {
      auto u = psa.resource_usage().find(resource);
      if (u == psa.resource_usage().end()) continue;
      auto total = ParseQuantity(resource, u->second);
      if (!total.ok()) continue;
      // per_pod × effective <= total; validation keeps the sum over pod sets a quantity.
      const int64_t per_pod = *total / psa.count();
      const int64_t v = per_pod * effective;
      if (v != 0) usage[{flavor, resource}] += v;
    }
  }
  return usage;
}

void Engine::Impl::ChargeUsage(WorkloadEntry& entry, int sign) {
  ClusterQueueState* const found = FindClusterQueue(entry.cluster_queue);
  if (found == nullptr) return;
  ClusterQueueState& cq = *found;
  AddTo(&cq.usage, entry.usage(), sign);
  quota_tree_.AddUsage(cq.name(), entry.usage(), sign);
  quota_tree_.BumpGeneration(cq.name());
  if (sign > 0) {
    cq.reserved.emplace(&entry.key(), &entry);
  } else {
    cq.reserved.erase(&entry.key());
  }
  cq.reserving += sign;
  if (IsConditionTrue(entry.object(), kAdmitted)) {
    cq.admitted += sign;
    AfsAdmittedDelta(entry, sign);
  }
  if (sign < 0) AfsForget(entry);
  if (sign > 0 && !IsConditionTrue(entry.object(), kPodsReady)) {
    not_ready_.insert(entry.key());
  } else if (sign < 0) {
    not_ready_.erase(entry.key());
  }
}

void Engine::Impl::MarkPending(WorkloadEntry& entry, const std::string& reason,
                               const std::string& message, absl::Time now) {
  if (SetPending(&entry.mutable_object(), reason, message, now)) {
    EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Pending", message);
  }
}

void SetAnswer(const v1::Workload& wl, Engine::Answer answer, v1::Workload* out) {
  if (answer == Engine::Answer::kCopy) {
    *out = wl;
    return;
  }
  out->mutable_metadata()->set_namespace_(wl.metadata().namespace_());
  out->mutable_metadata()->set_name(wl.metadata().name());
  out->mutable_metadata()->set_resource_version(wl.metadata().resource_version());
}

absl::StatusOr<v1::SubmitResponse> Engine::Impl::Submit(v1::Workload wl, absl::Time now,
                                                        Answer answer) {
  for (v1::PodSet& ps : *wl.mutable_spec()->mutable_pod_sets()) {
    if (ps.name().empty()) ps.set_name("main");
  }
  // Kueue's defaulting: without a queue name, a namespace's LocalQueue "default" takes it.
  if (wl.spec().queue_name().empty() &&
      local_queues_.count(absl::StrCat(wl.metadata().namespace_(), "/default")) != 0) {
    wl.mutable_spec()->set_queue_name("default");
  }
  std::vector<ResourceAmounts> per_pod;  // each pod set's, computed once by validation
  Violations violations = ValidateWorkload(wl, options_.max_pod_sets, &per_pod);
  CheckObjectSize(&violations, "workload", "workload", wl.ByteSizeLong(), options_.max_object_bytes);
  if (options_.elastic_jobs && IsElastic(wl)) {
    int with_min_count = 0;
    for (const v1::PodSet& ps : wl.spec().pod_sets()) with_min_count += ps.has_min_count() ? 1 : 0;
    if (with_min_count > 0) {
      violations.push_back({"spec.podSets",
                            absl::StrCat("Invalid value: ", with_min_count,
                                         ": partial admission and elastic job cannot be used "
                                         "together")});
    }
  }
  if (!violations.empty()) return InvalidArgument(violations);
  const std::string& ns = wl.metadata().namespace_();
  const std::string key = absl::StrCat(ns, "/", wl.metadata().name());
  if (auto it = workloads_.find(key); it != workloads_.end()) {
    const std::string& uid = wl.metadata().uid();
    if (uid.empty() || uid == it->second.object().metadata().uid()) {
      v1::SubmitResponse response;
      SetAnswer(it->second.object(), answer, response.mutable_workload());
      response.set_created(false);
      return response;
    }
    return ErrorWithReason(absl::StatusCode::kAlreadyExists, "WORKLOAD_EXISTS",
                           absl::StrCat("workload \"", key, "\" already exists with uid ",
                                        it->second.object().metadata().uid()));
  }
  // Priority: explicit, else from its WorkloadPriorityClass, else from the pod template, else 0.
  if (!wl.spec().has_priority()) {
    const v1::PriorityClassRef& ref = wl.spec().priority_class_ref();
    if (!ref.name().empty() && (ref.kind().empty() || ref.kind() == "WorkloadPriorityClass")) {
      auto it = priority_classes_.find(ref.name());
      if (it == priority_classes_.end()) {
        return NotFound("WorkloadPriorityClass", ref.name(), "spec.priorityClassRef.name");
      }
      wl.mutable_spec()->set_priority(it->second.workload_priority_class().value());
    } else {
      // Kueue always sets spec.priority: the pod template's (with a priorityClassRef to its
      // PriorityClass), else 0.
      const v1::PodSpec& pod = wl.spec().pod_sets(0).template_().spec();
      wl.mutable_spec()->set_priority(pod.priority());
      if (!pod.priority_class_name().empty() && ref.name().empty()) {
        v1::PriorityClassRef* pc = wl.mutable_spec()->mutable_priority_class_ref();
        pc->set_group("scheduling.k8s.io");
        pc->set_kind("PriorityClass");
        pc->set_name(pod.priority_class_name());
      }
    }
  }
  v1::ObjectMeta* meta = wl.mutable_metadata();
  if (options_.elastic_jobs && IsElastic(wl)) {
    // The first slice of an elastic job names its chain (Kueue's prepareWorkloadSlice does this
    // in the job reconciler); a client that leaves the annotation out gets it here.
    meta->mutable_annotations()->try_emplace(kSliceNameAnnotation, meta->name());
  }
  if (meta->uid().empty()) meta->set_uid(NewUid());
  if (!meta->has_creation_timestamp()) *meta->mutable_creation_timestamp() = ToProtoTime(now);
  meta->set_generation(1);
  wl.clear_status();  // server-owned

  WorkloadEntry& entry = EntryFor(key);
  entry.set_object(std::move(wl));
  entry.ParsePodSets(per_pod);
  IndexChain(entry, /*add=*/true);
  Enqueue(entry, now, /*emit_reason_change=*/false);  // sets entry.cluster_queue
  SyncPodsReady(entry, /*ready=*/false, now);  // PodsReady=False/WaitForStart while enabled
  if (const ClusterQueueState* cq = FindClusterQueue(entry.cluster_queue); cq != nullptr) {
    for (size_t i = 0; i < entry.pod_sets().size(); ++i) {
      v1::PodSetRequest* rr = entry.mutable_object().mutable_status()->add_resource_requests();
      rr->set_name(entry.pod_sets()[i].name);
      RenderResourceList(PodSetTotal(*cq, entry.pod_sets()[i]), rr->mutable_resources());
    }
  }
  EmitWorkload(entry, v1::WatchEvent::ADDED, "Submitted", "");
  v1::SubmitResponse response;
  SetAnswer(entry.object(), answer, response.mutable_workload());
  response.set_created(true);
  return response;
}

bool HoldsReservation(const v1::Workload& wl) {
  return IsConditionTrue(wl, kQuotaReserved) && wl.status().has_admission() &&
         !IsConditionTrue(wl, kFinished);
}

absl::StatusOr<WorkloadEntry*> Engine::Impl::FindGuarded(const std::string& key,
                                                         const std::string& uid) {
  auto it = workloads_.find(key);
  if (it == workloads_.end()) return NotFound("Workload", key, "name");
  const std::string& actual = it->second.object().metadata().uid();
  if (!uid.empty() && uid != actual) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "UID_MISMATCH",
                           absl::StrCat("workload \"", key, "\" has uid ", actual, ", not ", uid));
  }
  return &it->second;
}

absl::Status Engine::Impl::DeleteWorkload(const v1::DeleteWorkloadRequest& request,
                                          absl::Time now) {
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, request.uid()));
  if (options_.elastic_jobs && IsElastic(entry->object())) {
    // The slices of an elastic job go together: deleting one deletes the chain.
    for (WorkloadEntry* e : ChainOf(ChainKey(entry->object()))) {
      if (e != entry) DeleteEntry(*e, now, "Deleted", "deleted with its workload slice chain");
    }
  }
  DeleteEntry(*entry, now, "Deleted", "");
  return absl::OkStatus();
}

absl::StatusOr<v1::Workload> Engine::Impl::GetWorkload(
    const v1::GetWorkloadRequest& request) const {
  const WorkloadEntry* entry = FindWorkload(request.namespace_(), request.name());
  if (entry == nullptr) {
    return NotFound("Workload", absl::StrCat(request.namespace_(), "/", request.name()), "name");
  }
  v1::Workload out;
  entry->CopyTo(&out);  // a frozen workload stays frozen
  if (std::optional<v1::PendingPosition> position = PositionOf(*entry)) {
    *out.mutable_status()->mutable_pending_position() = *std::move(position);
  }
  return out;
}

std::shared_ptr<const v1::Workload> Engine::Impl::WorkloadSnapshot(const std::string& ns,
                                                                   const std::string& name) const {
  const std::string key = absl::StrCat(ns, "/", name);
  if (auto it = workloads_.find(key); it != workloads_.end()) return it->second.Share();
  auto deleted = deleted_snapshots_.find(key);
  return deleted != deleted_snapshots_.end() ? deleted->second : nullptr;
}

const v1::Workload* Engine::Impl::PeekWorkload(const std::string& ns,
                                               const std::string& name) const {
  const WorkloadEntry* entry = FindWorkload(ns, name);
  return entry == nullptr ? nullptr : &entry->object();
}

absl::StatusOr<v1::ListWorkloadsResponse> Engine::Impl::ListWorkloads(
    const v1::ListWorkloadsRequest& request) const {
  Violations violations;
  if (request.page_size() < 0 || request.page_size() > kMaxPageSize) {
    violations.push_back({"page_size", absl::StrCat("must be between 0 and ", kMaxPageSize)});
  }
  if (!v1::WorkloadState_IsValid(request.state())) {
    violations.push_back({"state", absl::StrCat("Unsupported value: ", request.state())});
  }
  if (!request.queue_name().empty() && request.namespace_().empty()) {
    violations.push_back({"namespace", "is required with queue_name"});
  }
  if (!request.page_token().empty() && workloads_.count(request.page_token()) == 0 &&
      request.page_token().find('/') == std::string::npos) {
    violations.push_back({"page_token", "is not a token this server issued"});
  }
  if (!violations.empty()) return InvalidArgument(violations);
  const int limit = request.page_size() == 0 ? kDefaultPageSize : request.page_size();
  size_t page_bytes = 0;
  v1::ListWorkloadsResponse out;
  out.set_revision(revision_);
  // Keys sort by namespace first, so one namespace is a contiguous range starting at "ns/".
  auto it = request.namespace_().empty() ? workloads_.begin()
                                         : workloads_.lower_bound(request.namespace_() + "/");
  if (!request.page_token().empty()) {
    auto after = workloads_.upper_bound(request.page_token());
    // The later of the two, end() being the latest.
    if (after == workloads_.end() || (it != workloads_.end() && after->first > it->first)) {
      it = after;
    }
  }
  const std::string ns_prefix = request.namespace_().empty() ? "" : request.namespace_() + "/";
  for (; it != workloads_.end(); ++it) {
    if (!absl::StartsWith(it->first, ns_prefix)) break;
    const WorkloadEntry& entry = it->second;
    if (!request.cluster_queue().empty() && entry.cluster_queue != request.cluster_queue()) {
      continue;
    }
    // A frozen workload is decoded straight into the page (it stays frozen) and taken back out
    // if it does not pass; a decoded one is copied only once it passes.
    const bool frozen = entry.frozen();
    const v1::Workload* wl = nullptr;
    if (frozen) {
      v1::Workload* decoded = out.add_workloads();
      entry.CopyTo(decoded);
      wl = decoded;
    } else {
      wl = &entry.object();
    }
    // A page ends at `limit` items or before the item that would take it past
    // max_list_page_bytes, whichever comes first; it always holds at least one item.
    const bool passes =
        (request.queue_name().empty() || wl->spec().queue_name() == request.queue_name()) &&
        (request.state() == v1::WORKLOAD_STATE_UNSPECIFIED || StateOf(*wl) == request.state());
    const int held = out.workloads_size() - (frozen ? 1 : 0);
    const size_t bytes = passes ? wl->ByteSizeLong() : 0;
    const bool page_full =
        passes && (held == limit || (held > 0 && options_.max_list_page_bytes != 0 &&
                                     page_bytes + bytes > options_.max_list_page_bytes));
    if (frozen && !passes) out.mutable_workloads()->RemoveLast();
    if (!passes) continue;
    if (page_full) {
      if (frozen) out.mutable_workloads()->RemoveLast();
      const v1::ObjectMeta& last = out.workloads(held - 1).metadata();
      out.set_next_page_token(last.namespace_() + "/" + last.name());
      break;
    }
    page_bytes += bytes;
    if (!frozen) *out.add_workloads() = *wl;
  }
  return out;
}

}  // namespace admitd::engine
