// Engine: queue-side objects, workload lifecycle, recovery. Scheduling is in engine_cycle.cc.
#include "server/engine/engine.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/quantity.h"
#include "server/engine/validation.h"

namespace admitd::engine {
namespace {

constexpr int kDefaultPageSize = 500;
constexpr int kMaxPageSize = 5000;

const char* KindName(v1::ObjectKind kind) {
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: return "ResourceFlavor";
    case v1::OBJECT_KIND_COHORT: return "Cohort";
    case v1::OBJECT_KIND_CLUSTER_QUEUE: return "ClusterQueue";
    case v1::OBJECT_KIND_LOCAL_QUEUE: return "LocalQueue";
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: return "WorkloadPriorityClass";
    case v1::OBJECT_KIND_WORKLOAD: return "Workload";
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
    default: return nullptr;
  }
}

const v1::ObjectMeta& Meta(const v1::QueueObject& o) {
  return const_cast<v1::QueueObject&>(o).kind_case() == v1::QueueObject::KIND_NOT_SET
             ? v1::ObjectMeta::default_instance()
             : *MutableMeta(const_cast<v1::QueueObject*>(&o));
}

// The object without server-owned fields: what "unchanged" compares.
std::string UserContent(const v1::QueueObject& o) {
  v1::QueueObject copy = o;
  v1::ObjectMeta* meta = MutableMeta(&copy);
  meta->clear_uid();
  meta->clear_resource_version();
  meta->clear_generation();
  meta->clear_creation_timestamp();
  if (copy.has_cluster_queue()) copy.mutable_cluster_queue()->clear_status();
  if (copy.has_local_queue()) copy.mutable_local_queue()->clear_status();
  return copy.SerializeAsString();
}

// The object's spec alone: a change of it bumps metadata.generation.
std::string SpecContent(const v1::QueueObject& o) {
  switch (o.kind_case()) {
    case v1::QueueObject::kResourceFlavor: return o.resource_flavor().spec().SerializeAsString();
    case v1::QueueObject::kCohort: return o.cohort().spec().SerializeAsString();
    case v1::QueueObject::kClusterQueue: return o.cluster_queue().spec().SerializeAsString();
    case v1::QueueObject::kLocalQueue: return o.local_queue().spec().SerializeAsString();
    case v1::QueueObject::kWorkloadPriorityClass:
      return absl::StrCat(o.workload_priority_class().value());
    default: return "";
  }
}

std::string ObjectKey(v1::ObjectKind kind, const std::string& ns, const std::string& name) {
  return kind == v1::OBJECT_KIND_LOCAL_QUEUE || kind == v1::OBJECT_KIND_WORKLOAD
             ? absl::StrCat(ns, "/", name)
             : name;
}

void AddUsage(google::protobuf::RepeatedPtrField<v1::FlavorUsage>* out,
              const FlavorResourceQuantities& usage, const FlavorResourceQuantities& nominal) {
  std::map<std::string, v1::FlavorUsage*> by_flavor;
  // Every quota entry appears, used or not, in the queue's flavor order.
  for (const auto& [fr, quota] : nominal) {
    if (by_flavor.count(fr.first) == 0) {
      v1::FlavorUsage* fu = out->Add();
      fu->set_name(fr.first);
      by_flavor[fr.first] = fu;
    }
    auto u = usage.find(fr);
    const int64_t used = u == usage.end() ? 0 : u->second;
    v1::ResourceUsage* ru = by_flavor[fr.first]->add_resources();
    ru->set_name(fr.second);
    ru->set_total(FormatQuantity(fr.second, used));
    ru->set_borrowed(FormatQuantity(fr.second, std::max<int64_t>(0, used - quota)));
  }
}

}  // namespace

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
  entry.object.mutable_metadata()->set_resource_version(++revision_);
  Change c;
  c.revision = revision_;
  c.kind = v1::OBJECT_KIND_WORKLOAD;
  c.key = entry.key();
  c.type = type;
  c.reason = reason;
  c.message = message;
  c.workload = std::make_shared<const v1::Workload>(entry.object);
  changes_.push_back(std::move(c));
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
  char buf[40];
  std::snprintf(buf, sizeof(buf), "00000000-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(revision_ + 1));
  return buf;
}

// ---- Queue-side objects ---------------------------------------------------------------------

absl::StatusOr<v1::ApplyResponse> Engine::Impl::Apply(const v1::ApplyRequest& request,
                                                      absl::Time now) {
  v1::QueueObject object = request.object();
  const v1::ObjectKind kind = KindOf(object);
  Violations violations;
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
      violations = ValidateResourceFlavor(object.resource_flavor());
      break;
    case v1::OBJECT_KIND_COHORT: violations = ValidateCohort(object.cohort()); break;
    case v1::OBJECT_KIND_CLUSTER_QUEUE:
      violations = ValidateClusterQueue(object.cluster_queue());
      break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: violations = ValidateLocalQueue(object.local_queue()); break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS:
      violations = ValidateWorkloadPriorityClass(object.workload_priority_class());
      break;
    default: return InvalidArgument({{"object", "must hold one queue object"}});
  }
  if (!violations.empty()) return InvalidArgument(violations);
  v1::ObjectMeta* meta = MutableMeta(&object);
  if (kind != v1::OBJECT_KIND_LOCAL_QUEUE) meta->clear_namespace_();
  const std::string key = ObjectKey(kind, meta->namespace_(), meta->name());

  std::map<std::string, v1::QueueObject>* table = nullptr;
  const v1::QueueObject* existing = nullptr;
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: table = &flavors_; break;
    case v1::OBJECT_KIND_COHORT: table = &cohorts_; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: table = &local_queues_; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: table = &priority_classes_; break;
    default: break;
  }
  if (table != nullptr) {
    auto it = table->find(key);
    if (it != table->end()) existing = &it->second;
  } else {
    auto it = cluster_queues_.find(key);
    if (it != cluster_queues_.end()) existing = &it->second.object;
  }
  if (existing != nullptr && request.create_only()) {
    return ErrorWithReason(absl::StatusCode::kAlreadyExists, "ALREADY_EXISTS",
                           absl::StrCat(KindName(kind), " \"", key, "\" already exists"));
  }
  if (request.expected_resource_version() != 0) {
    const uint64_t current = existing ? Meta(*existing).resource_version() : 0;
    if (current != request.expected_resource_version()) {
      return ErrorWithReason(
          absl::StatusCode::kAborted, "RESOURCE_VERSION_MISMATCH",
          absl::StrCat(KindName(kind), " \"", key, "\" is at resource_version ", current,
                       ", not ", request.expected_resource_version()));
    }
  }
  if (kind == v1::OBJECT_KIND_CLUSTER_QUEUE) object.mutable_cluster_queue()->clear_status();
  if (kind == v1::OBJECT_KIND_LOCAL_QUEUE) object.mutable_local_queue()->clear_status();
  v1::ApplyResponse response;
  if (existing != nullptr && UserContent(*existing) == UserContent(object)) {
    *response.mutable_object() = *existing;
    response.set_unchanged(true);
    if (kind == v1::OBJECT_KIND_CLUSTER_QUEUE) {
      *response.mutable_object()->mutable_cluster_queue() = WithStatus(cluster_queues_.at(key));
    }
    return response;
  }
  std::string old_cluster_queue;
  if (existing != nullptr) {
    const v1::ObjectMeta& old = Meta(*existing);
    meta->set_uid(old.uid());
    *meta->mutable_creation_timestamp() = old.creation_timestamp();
    meta->set_generation(old.generation() +
                         (SpecContent(*existing) == SpecContent(object) ? 0 : 1));
    if (kind == v1::OBJECT_KIND_LOCAL_QUEUE) {
      old_cluster_queue = existing->local_queue().spec().cluster_queue();
    }
  } else {
    meta->set_uid(NewUid());
    if (!meta->has_creation_timestamp()) *meta->mutable_creation_timestamp() = ToProtoTime(now);
    meta->set_generation(1);
  }
  const v1::WatchEvent::Type type = existing ? v1::WatchEvent::MODIFIED : v1::WatchEvent::ADDED;
  response.set_created(existing == nullptr);

  if (table != nullptr) {
    v1::QueueObject& stored = (*table)[key];
    stored = std::move(object);
    EmitObject(kind, key, &stored, type, "Applied");
    *response.mutable_object() = stored;
  } else {
    ClusterQueueState& cq = cluster_queues_[key];
    cq.object = std::move(object);
    cq.Rebuild();
    EmitObject(kind, key, &cq.object, type, "Applied");
    *response.mutable_object()->mutable_cluster_queue() = WithStatus(cq);
  }

  // Side effects: what the change may unblock.
  if (kind == v1::OBJECT_KIND_CLUSTER_QUEUE) {
    ClusterQueueState& cq = cluster_queues_.at(key);
    RefreshActive(cq);
    if (auto orphans = orphans_.find(key); orphans != orphans_.end()) {
      std::set<std::string> waiting = std::move(orphans->second);
      orphans_.erase(orphans);
      for (const std::string& wl_key : waiting) {
        WorkloadEntry& entry = workloads_.at(wl_key);
        entry.where = WorkloadEntry::Where::kNone;
        Enqueue(entry, now, true);
      }
    }
    RequeueInadmissible(cq);
    *response.mutable_object()->mutable_cluster_queue() = WithStatus(cq);
  } else if (kind == v1::OBJECT_KIND_RESOURCE_FLAVOR) {
    for (auto& [name, cq] : cluster_queues_) {
      bool uses = false;
      for (const ResourceGroupQuota& g : cq.groups) {
        uses = uses || std::find(g.flavors.begin(), g.flavors.end(), key) != g.flavors.end();
      }
      if (!uses) continue;
      RefreshActive(cq);
      RequeueInadmissible(cq);
    }
  } else if (kind == v1::OBJECT_KIND_LOCAL_QUEUE && !old_cluster_queue.empty() &&
             old_cluster_queue != local_queues_.at(key).local_queue().spec().cluster_queue()) {
    // The LocalQueue now feeds another ClusterQueue: its pending workloads move there.
    const v1::LocalQueue& lq = local_queues_.at(key).local_queue();
    for (auto& [wl_key, entry] : workloads_) {
      if (entry.object.metadata().namespace_() != lq.metadata().namespace_() ||
          entry.object.spec().queue_name() != lq.metadata().name() ||
          StateOf(entry.object) != v1::WORKLOAD_STATE_PENDING) {
        continue;
      }
      Dequeue(entry);
      Enqueue(entry, now, true);
    }
  }
  return response;
}

absl::StatusOr<v1::QueueObject> Engine::Impl::Get(const v1::GetObjectRequest& request) const {
  const std::string key = ObjectKey(request.kind(), request.namespace_(), request.name());
  const std::map<std::string, v1::QueueObject>* table = nullptr;
  switch (request.kind()) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: table = &flavors_; break;
    case v1::OBJECT_KIND_COHORT: table = &cohorts_; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: table = &local_queues_; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: table = &priority_classes_; break;
    case v1::OBJECT_KIND_CLUSTER_QUEUE: {
      auto it = cluster_queues_.find(key);
      if (it == cluster_queues_.end()) return NotFound("ClusterQueue", key, "name");
      v1::QueueObject out;
      *out.mutable_cluster_queue() = WithStatus(it->second);
      return out;
    }
    default: return InvalidArgument({{"kind", "must name a queue-side kind"}});
  }
  auto it = table->find(key);
  if (it == table->end()) return NotFound(KindName(request.kind()), key, "name");
  if (request.kind() == v1::OBJECT_KIND_LOCAL_QUEUE) {
    v1::QueueObject out;
    *out.mutable_local_queue() = WithStatus(it->second.local_queue());
    return out;
  }
  return it->second;
}

absl::StatusOr<v1::ListObjectsResponse> Engine::Impl::List(
    const v1::ListObjectsRequest& request) const {
  v1::ListObjectsResponse out;
  out.set_revision(revision_);
  switch (request.kind()) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
      for (const auto& [k, o] : flavors_) *out.add_objects() = o;
      break;
    case v1::OBJECT_KIND_COHORT:
      for (const auto& [k, o] : cohorts_) *out.add_objects() = o;
      break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS:
      for (const auto& [k, o] : priority_classes_) *out.add_objects() = o;
      break;
    case v1::OBJECT_KIND_CLUSTER_QUEUE:
      for (const auto& [k, cq] : cluster_queues_) {
        *out.add_objects()->mutable_cluster_queue() = WithStatus(cq);
      }
      break;
    case v1::OBJECT_KIND_LOCAL_QUEUE:
      for (const auto& [k, o] : local_queues_) {
        if (!request.namespace_().empty() &&
            o.local_queue().metadata().namespace_() != request.namespace_()) {
          continue;
        }
        *out.add_objects()->mutable_local_queue() = WithStatus(o.local_queue());
      }
      break;
    default: return InvalidArgument({{"kind", "must name a queue-side kind"}});
  }
  return out;
}

absl::Status Engine::Impl::Delete(const v1::DeleteObjectRequest& request, absl::Time now) {
  const v1::ObjectKind kind = request.kind();
  const std::string key = ObjectKey(kind, request.namespace_(), request.name());
  auto check_version = [&](const v1::QueueObject& o) -> absl::Status {
    if (request.expected_resource_version() != 0 &&
        Meta(o).resource_version() != request.expected_resource_version()) {
      return ErrorWithReason(absl::StatusCode::kAborted, "RESOURCE_VERSION_MISMATCH",
                             absl::StrCat(KindName(kind), " \"", key, "\" is at resource_version ",
                                          Meta(o).resource_version()));
    }
    return absl::OkStatus();
  };
  auto in_use = [&](const std::string& what) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "IN_USE",
                           absl::StrCat(KindName(kind), " \"", key, "\" is in use: ", what));
  };
  std::map<std::string, v1::QueueObject>* table = nullptr;
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: {
      for (const auto& [name, cq] : cluster_queues_) {
        for (const ResourceGroupQuota& g : cq.groups) {
          if (std::find(g.flavors.begin(), g.flavors.end(), key) != g.flavors.end()) {
            return in_use(absl::StrCat("ClusterQueue \"", name, "\" refers to it"));
          }
        }
      }
      table = &flavors_;
      break;
    }
    case v1::OBJECT_KIND_COHORT: table = &cohorts_; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: table = &priority_classes_; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: {
      for (const auto& [wl_key, entry] : workloads_) {
        if (entry.object.metadata().namespace_() == request.namespace_() &&
            entry.object.spec().queue_name() == request.name() &&
            StateOf(entry.object) != v1::WORKLOAD_STATE_FINISHED) {
          return in_use(absl::StrCat("workload \"", wl_key, "\" is queued in it or runs from it"));
        }
      }
      table = &local_queues_;
      break;
    }
    case v1::OBJECT_KIND_CLUSTER_QUEUE: {
      auto it = cluster_queues_.find(key);
      if (it == cluster_queues_.end()) return NotFound("ClusterQueue", key, "name");
      ADMITD_RETURN_IF_ERROR(check_version(it->second.object));
      ClusterQueueState& cq = it->second;
      if (cq.reserving > 0 || !cq.heap.empty() || !cq.inadmissible.empty()) {
        return in_use(absl::StrCat(cq.reserving, " workload(s) hold quota and ",
                                   cq.heap.size() + cq.inadmissible.size(),
                                   " are pending in it"));
      }
      EmitObject(kind, key, &cq.object, v1::WatchEvent::DELETED, "Deleted");
      cqs_with_heads_.erase(key);
      cluster_queues_.erase(it);
      return absl::OkStatus();
    }
    default: return InvalidArgument({{"kind", "must name a queue-side kind"}});
  }
  auto it = table->find(key);
  if (it == table->end()) return NotFound(KindName(kind), key, "name");
  ADMITD_RETURN_IF_ERROR(check_version(it->second));
  EmitObject(kind, key, &it->second, v1::WatchEvent::DELETED, "Deleted");
  table->erase(it);
  return absl::OkStatus();
}

v1::ClusterQueue Engine::Impl::WithStatus(const ClusterQueueState& cq) const {
  v1::ClusterQueue out = cq.spec_object();
  v1::ClusterQueueStatus* status = out.mutable_status();
  AddUsage(status->mutable_flavors_reservation(), cq.usage, cq.nominal);
  AddUsage(status->mutable_flavors_usage(), cq.usage, cq.nominal);
  status->set_pending_workloads(static_cast<int32_t>(cq.heap.size() + cq.inadmissible.size()));
  status->set_reserving_workloads(cq.reserving);
  status->set_admitted_workloads(cq.admitted);
  v1::Condition* active = status->add_conditions();
  active->set_type("Active");
  if (cq.active()) {
    active->set_status("True");
    active->set_reason("Ready");
    active->set_message("Can admit new workloads");
  } else {
    active->set_status("False");
    active->set_reason(cq.inactive_reason);
    active->set_message(cq.inactive_message);
  }
  return out;
}

v1::LocalQueue Engine::Impl::WithStatus(const v1::LocalQueue& lq) const {
  v1::LocalQueue out = lq;
  int pending = 0, reserving = 0, admitted = 0;
  for (auto it = workloads_.lower_bound(lq.metadata().namespace_() + "/");
       it != workloads_.end() &&
       it->second.object.metadata().namespace_() == lq.metadata().namespace_();
       ++it) {
    if (it->second.object.spec().queue_name() != lq.metadata().name()) continue;
    switch (StateOf(it->second.object)) {
      case v1::WORKLOAD_STATE_PENDING: ++pending; break;
      case v1::WORKLOAD_STATE_QUOTA_RESERVED: ++reserving; break;
      case v1::WORKLOAD_STATE_ADMITTED:
      case v1::WORKLOAD_STATE_EVICTED:
        ++reserving;
        ++admitted;
        break;
      default: break;
    }
  }
  out.mutable_status()->set_pending_workloads(pending);
  out.mutable_status()->set_reserving_workloads(reserving);
  out.mutable_status()->set_admitted_workloads(admitted);
  return out;
}

void Engine::Impl::RefreshActive(ClusterQueueState& cq) {
  cq.inactive_reason.clear();
  cq.inactive_message.clear();
  std::vector<std::string> missing;
  for (const ResourceGroupQuota& g : cq.groups) {
    for (const std::string& f : g.flavors) {
      if (flavors_.count(f) == 0) missing.push_back(f);
    }
  }
  if (!missing.empty()) {
    cq.inactive_reason = "FlavorNotFound";
    cq.inactive_message = absl::StrCat("Can't admit new workloads: references missing ResourceFlavor(s): ",
                                       absl::StrJoin(missing, ","), ".");
  } else if (cq.spec_object().spec().stop_policy() == "Hold" ||
             cq.spec_object().spec().stop_policy() == "HoldAndDrain") {
    cq.inactive_reason = "Stopped";
    cq.inactive_message = "Can't admit new workloads: is stopped.";
  }
  RefreshHeads(cq);
}

void Engine::Impl::RefreshHeads(ClusterQueueState& cq) {
  if (cq.active() && !cq.heap.empty()) {
    cqs_with_heads_.insert(cq.name());
  } else {
    cqs_with_heads_.erase(cq.name());
  }
}

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

absl::Status Engine::Impl::ParsePodSets(WorkloadEntry* entry) const {
  entry->pod_sets.clear();
  for (const v1::PodSet& ps : entry->object.spec().pod_sets()) {
    PodSetRequest req;
    req.name = ps.name();
    req.count = ps.count();
    req.per_pod = PodRequests(ps.template_().spec());
    req.pod = &ps.template_().spec();
    entry->pod_sets.push_back(std::move(req));
  }
  return absl::OkStatus();
}

void Engine::Impl::Enqueue(WorkloadEntry& entry, absl::Time now, bool emit_reason_change) {
  const v1::Workload& wl = entry.object;
  entry.queue_key.priority = wl.spec().priority();
  entry.queue_key.timestamp = FromProto(wl.metadata().creation_timestamp());
  entry.queue_key.uid = wl.metadata().uid();
  entry.queue_key.key = entry.key();
  const std::string cq_name = ClusterQueueOf(wl.metadata().namespace_(), wl.spec().queue_name());
  entry.cluster_queue = cq_name;
  auto it = cluster_queues_.find(cq_name);
  if (it == cluster_queues_.end()) {
    entry.where = WorkloadEntry::Where::kOrphan;
    orphans_[cq_name].insert(entry.key());
    if (emit_reason_change) {
      MarkPending(entry, kReasonMisconfigured,
                  absl::StrCat("ClusterQueue ", cq_name, " doesn't exist"), now);
    } else {
      SetPending(&entry.object, kReasonMisconfigured,
                 absl::StrCat("ClusterQueue ", cq_name, " doesn't exist"), now);
    }
    return;
  }
  ClusterQueueState& cq = it->second;
  entry.where = WorkloadEntry::Where::kHeap;
  cq.heap.insert(entry.queue_key);
  RefreshHeads(cq);
  if (!cq.active()) {
    const std::string message = absl::StrCat("ClusterQueue ", cq_name, " is inactive");
    if (emit_reason_change) {
      MarkPending(entry, kReasonSuspended, message, now);
    } else {
      SetPending(&entry.object, kReasonSuspended, message, now);
    }
  }
}

void Engine::Impl::Dequeue(WorkloadEntry& entry) {
  switch (entry.where) {
    case WorkloadEntry::Where::kHeap:
    case WorkloadEntry::Where::kInadmissible: {
      auto it = cluster_queues_.find(entry.cluster_queue);
      if (it != cluster_queues_.end()) {
        it->second.heap.erase(entry.queue_key);
        it->second.inadmissible.erase(entry.queue_key);
        RefreshHeads(it->second);
      }
      break;
    }
    case WorkloadEntry::Where::kOrphan: {
      auto it = orphans_.find(entry.cluster_queue);
      if (it != orphans_.end()) {
        it->second.erase(entry.key());
        if (it->second.empty()) orphans_.erase(it);
      }
      break;
    }
    case WorkloadEntry::Where::kNone: break;
  }
  entry.where = WorkloadEntry::Where::kNone;
}

void Engine::Impl::RequeueInadmissible(ClusterQueueState& cq) {
  if (cq.inadmissible.empty()) return;
  for (const QueueKey& k : cq.inadmissible) {
    cq.heap.insert(k);
    workloads_.at(k.key).where = WorkloadEntry::Where::kHeap;
  }
  cq.inadmissible.clear();
  RefreshHeads(cq);
}

FlavorResourceQuantities Engine::Impl::UsageFromAdmission(const WorkloadEntry& entry) const {
  FlavorResourceQuantities usage;
  const v1::Workload& wl = entry.object;
  std::map<std::string, int32_t> reclaimable;
  for (const v1::ReclaimablePod& r : wl.status().reclaimable_pods()) reclaimable[r.name()] = r.count();
  std::map<std::string, int32_t> spec_counts;
  for (const v1::PodSet& ps : wl.spec().pod_sets()) spec_counts[ps.name()] = ps.count();
  for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
    if (psa.count() <= 0) continue;
    const int64_t effective =
        std::max<int64_t>(0, std::min<int64_t>(psa.count(), spec_counts[psa.name()] -
                                                                reclaimable[psa.name()]));
    for (const auto& [resource, flavor] : psa.flavors()) {
      auto u = psa.resource_usage().find(resource);
      if (u == psa.resource_usage().end()) continue;
      auto total = ParseQuantity(resource, u->second);
      if (!total.ok()) continue;
      const int64_t per_pod = *total / psa.count();
      const int64_t v = SaturatingMul(per_pod, effective);
      if (v != 0) usage[{flavor, resource}] = SaturatingAdd(usage[{flavor, resource}], v);
    }
  }
  return usage;
}

void Engine::Impl::ChargeUsage(WorkloadEntry& entry, int sign) {
  auto it = cluster_queues_.find(entry.cluster_queue);
  if (it == cluster_queues_.end()) return;
  ClusterQueueState& cq = it->second;
  AddTo(&cq.usage, entry.usage, sign);
  cq.reserving += sign;
  if (IsConditionTrue(entry.object, kAdmitted)) cq.admitted += sign;
}

void Engine::Impl::MarkPending(WorkloadEntry& entry, const std::string& reason,
                               const std::string& message, absl::Time now) {
  if (SetPending(&entry.object, reason, message, now)) {
    EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Pending", message);
  }
}

absl::StatusOr<v1::SubmitResponse> Engine::Impl::Submit(const v1::SubmitRequest& request,
                                                        absl::Time now) {
  v1::Workload wl = request.workload();
  for (v1::PodSet& ps : *wl.mutable_spec()->mutable_pod_sets()) {
    if (ps.name().empty()) ps.set_name("main");
  }
  Violations violations = ValidateWorkload(wl, options_.max_pod_sets);
  if (!violations.empty()) return InvalidArgument(violations);
  const std::string& ns = wl.metadata().namespace_();
  const std::string key = absl::StrCat(ns, "/", wl.metadata().name());
  if (auto it = workloads_.find(key); it != workloads_.end()) {
    const std::string& uid = wl.metadata().uid();
    if (uid.empty() || uid == it->second.object.metadata().uid()) {
      v1::SubmitResponse response;
      *response.mutable_workload() = it->second.object;
      response.set_created(false);
      return response;
    }
    return ErrorWithReason(absl::StatusCode::kAlreadyExists, "WORKLOAD_EXISTS",
                           absl::StrCat("workload \"", key, "\" already exists with uid ",
                                        it->second.object.metadata().uid()));
  }
  if (local_queues_.count(absl::StrCat(ns, "/", wl.spec().queue_name())) == 0) {
    return NotFound("LocalQueue", absl::StrCat(ns, "/", wl.spec().queue_name()), "spec.queueName");
  }
  // Priority: explicit, else from its WorkloadPriorityClass, else from the pod template.
  if (!wl.spec().has_priority()) {
    const v1::PriorityClassRef& ref = wl.spec().priority_class_ref();
    if (!ref.name().empty() && (ref.kind().empty() || ref.kind() == "WorkloadPriorityClass")) {
      auto it = priority_classes_.find(ref.name());
      if (it == priority_classes_.end()) {
        return NotFound("WorkloadPriorityClass", ref.name(), "spec.priorityClassRef.name");
      }
      wl.mutable_spec()->set_priority(it->second.workload_priority_class().value());
    } else if (wl.spec().pod_sets(0).template_().spec().has_priority()) {
      wl.mutable_spec()->set_priority(wl.spec().pod_sets(0).template_().spec().priority());
    }
  }
  v1::ObjectMeta* meta = wl.mutable_metadata();
  if (meta->uid().empty()) meta->set_uid(NewUid());
  if (!meta->has_creation_timestamp()) *meta->mutable_creation_timestamp() = ToProtoTime(now);
  meta->set_generation(1);
  wl.clear_status();  // server-owned

  WorkloadEntry& entry = workloads_[key];
  entry.object = std::move(wl);
  ParsePodSets(&entry).IgnoreError();
  const std::string cq_name = ClusterQueueOf(ns, entry.object.spec().queue_name());
  if (auto it = cluster_queues_.find(cq_name); it != cluster_queues_.end()) {
    for (size_t i = 0; i < entry.pod_sets.size(); ++i) {
      v1::PodSetRequest* rr = entry.object.mutable_status()->add_resource_requests();
      rr->set_name(entry.pod_sets[i].name);
      RenderResourceList(PodSetTotal(it->second, entry.pod_sets[i]), rr->mutable_resources());
    }
  }
  Enqueue(entry, now, /*emit_reason_change=*/false);
  EmitWorkload(entry, v1::WatchEvent::ADDED, "Submitted", "");
  v1::SubmitResponse response;
  *response.mutable_workload() = entry.object;
  response.set_created(true);
  return response;
}

absl::StatusOr<v1::ReleaseQuotaResponse> Engine::Impl::ReleaseQuota(
    const v1::ReleaseQuotaRequest& request, absl::Time now) {
  WorkloadEntry* entry = FindWorkload(request.namespace_(), request.name());
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  if (entry == nullptr) return NotFound("Workload", key, "name");
  if (!request.uid().empty() && request.uid() != entry->object.metadata().uid()) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "UID_MISMATCH",
                           absl::StrCat("workload \"", key, "\" has uid ",
                                        entry->object.metadata().uid(), ", not ", request.uid()));
  }
  v1::Workload& wl = entry->object;
  const bool reserved = IsConditionTrue(wl, kQuotaReserved) && wl.status().has_admission() &&
                        !IsConditionTrue(wl, kFinished);
  ClusterQueueState* cq = nullptr;
  if (auto it = cluster_queues_.find(entry->cluster_queue); it != cluster_queues_.end()) {
    cq = &it->second;
  }
  v1::ReleaseQuotaResponse response;
  switch (request.release_case()) {
    case v1::ReleaseQuotaRequest::kFinished: {
      if (IsConditionTrue(wl, kFinished)) break;  // already finished: idempotent
      if (reserved) {
        ChargeUsage(*entry, -1);
        entry->usage.clear();
      }
      Dequeue(*entry);
      const bool ok = request.finished().succeeded();
      std::string message = request.finished().message();
      if (message.empty()) {
        message = ok ? "The workload finished successfully" : "The workload failed";
      }
      SetCondition(&wl, kFinished, true, ok ? kReasonSucceeded : kReasonFailed, message, now);
      EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Finished", message);
      if (cq != nullptr && reserved) RequeueInadmissible(*cq);
      break;
    }
    case v1::ReleaseQuotaRequest::kStopped: {
      if (!reserved) break;  // nothing held: idempotent
      const v1::Condition* evicted = FindCondition(wl, kEvicted);
      if (evicted == nullptr || evicted->status() != "True") {
        return ErrorWithReason(
            absl::StatusCode::kFailedPrecondition, "WORKLOAD_NOT_EVICTED",
            absl::StrCat("workload \"", key,
                         "\" is not evicted: only an evicted workload's quota is released by "
                         "`stopped`; use `finished` when the job ended"));
      }
      const std::string reason = evicted->reason();
      const std::string message = evicted->message();
      ChargeUsage(*entry, -1);
      entry->usage.clear();
      if (const v1::Condition* admitted = FindCondition(wl, kQuotaReserved)) {
        wl.mutable_status()->set_accumulated_past_execution_time_seconds(
            wl.status().accumulated_past_execution_time_seconds() +
            absl::ToInt64Seconds(now - FromProto(admitted->last_transition_time())));
      }
      const bool requeue = reason == "Preempted" || reason == "NodeFailures";
      SetCondition(&wl, kRequeued, requeue, reason, message, now);
      wl.mutable_status()->clear_admission();
      SetPending(&wl, kReasonPendingEvaluation, message, now);
      Enqueue(*entry, now, false);
      EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Requeued", message);
      if (cq != nullptr) RequeueInadmissible(*cq);
      break;
    }
    case v1::ReleaseQuotaRequest::kReclaimable: {
      std::map<std::string, int32_t> counts;
      for (const v1::PodSet& ps : wl.spec().pod_sets()) counts[ps.name()] = ps.count();
      std::map<std::string, int32_t> current;
      for (const v1::ReclaimablePod& r : wl.status().reclaimable_pods()) current[r.name()] = r.count();
      Violations violations;
      const auto& pods = request.reclaimable().pods();
      for (int i = 0; i < pods.size(); ++i) {
        const std::string f = absl::StrCat("reclaimable.pods[", i, "]");
        auto c = counts.find(pods[i].name());
        if (c == counts.end()) {
          violations.push_back({f + ".name", absl::StrCat("Not found: \"", pods[i].name(),
                                                          "\" is not a pod set of the workload")});
        } else if (pods[i].count() < current[pods[i].name()] || pods[i].count() > c->second) {
          violations.push_back(
              {f + ".count", absl::StrCat("Invalid value: ", pods[i].count(),
                                          ": must be between the current reclaimable count (",
                                          current[pods[i].name()], ") and the pod set's count (",
                                          c->second, ")")});
        }
      }
      if (!violations.empty()) return InvalidArgument(violations);
      bool changed = false;
      for (const v1::ReclaimablePod& r : pods) {
        if (current[r.name()] != r.count()) changed = true;
        current[r.name()] = r.count();
      }
      if (!changed) break;
      wl.mutable_status()->clear_reclaimable_pods();
      for (const v1::PodSet& ps : wl.spec().pod_sets()) {
        if (current[ps.name()] == 0) continue;
        v1::ReclaimablePod* r = wl.mutable_status()->add_reclaimable_pods();
        r->set_name(ps.name());
        r->set_count(current[ps.name()]);
      }
      if (reserved) {
        ChargeUsage(*entry, -1);
        entry->usage = UsageFromAdmission(*entry);
        ChargeUsage(*entry, +1);
        if (cq != nullptr) RequeueInadmissible(*cq);
      }
      EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Updated", "reclaimable pods changed");
      break;
    }
    default: return InvalidArgument({{"release", "must be one of finished, stopped, reclaimable"}});
  }
  *response.mutable_workload() = wl;
  return response;
}

absl::Status Engine::Impl::DeleteWorkload(const v1::DeleteWorkloadRequest& request,
                                          absl::Time now) {
  WorkloadEntry* entry = FindWorkload(request.namespace_(), request.name());
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  if (entry == nullptr) return NotFound("Workload", key, "name");
  if (!request.uid().empty() && request.uid() != entry->object.metadata().uid()) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "UID_MISMATCH",
                           absl::StrCat("workload \"", key, "\" has uid ",
                                        entry->object.metadata().uid(), ", not ", request.uid()));
  }
  const bool reserved = IsConditionTrue(entry->object, kQuotaReserved) &&
                        entry->object.status().has_admission() &&
                        !IsConditionTrue(entry->object, kFinished);
  if (reserved) ChargeUsage(*entry, -1);
  Dequeue(*entry);
  EmitWorkload(*entry, v1::WatchEvent::DELETED, "Deleted", "");
  const std::string cq_name = entry->cluster_queue;
  workloads_.erase(key);
  if (reserved) {
    if (auto it = cluster_queues_.find(cq_name); it != cluster_queues_.end()) {
      RequeueInadmissible(it->second);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Workload> Engine::Impl::GetWorkload(
    const v1::GetWorkloadRequest& request) const {
  const WorkloadEntry* entry = FindWorkload(request.namespace_(), request.name());
  if (entry == nullptr) {
    return NotFound("Workload", absl::StrCat(request.namespace_(), "/", request.name()), "name");
  }
  return entry->object;
}

absl::StatusOr<v1::ListWorkloadsResponse> Engine::Impl::ListWorkloads(
    const v1::ListWorkloadsRequest& request) const {
  Violations violations;
  if (request.page_size() < 0 || request.page_size() > kMaxPageSize) {
    violations.push_back({"page_size", absl::StrCat("must be between 0 and ", kMaxPageSize)});
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
  v1::ListWorkloadsResponse out;
  out.set_revision(revision_);
  auto it = request.page_token().empty()
                ? (request.namespace_().empty() ? workloads_.begin()
                                                : workloads_.lower_bound(request.namespace_() + "/"))
                : workloads_.upper_bound(request.page_token());
  for (; it != workloads_.end(); ++it) {
    const v1::Workload& wl = it->second.object;
    if (!request.namespace_().empty() && wl.metadata().namespace_() != request.namespace_()) break;
    if (!request.queue_name().empty() && wl.spec().queue_name() != request.queue_name()) continue;
    if (!request.cluster_queue().empty() && it->second.cluster_queue != request.cluster_queue()) {
      continue;
    }
    if (request.state() != v1::WORKLOAD_STATE_UNSPECIFIED && StateOf(wl) != request.state()) {
      continue;
    }
    if (out.workloads_size() == limit) {
      out.set_next_page_token(out.workloads(limit - 1).metadata().namespace_() + "/" +
                              out.workloads(limit - 1).metadata().name());
      break;
    }
    *out.add_workloads() = wl;
  }
  return out;
}

// ---- Recovery -------------------------------------------------------------------------------

absl::Status Engine::Impl::Restore(const v1::QueueObject& object) {
  const v1::ObjectKind kind = KindOf(object);
  const v1::ObjectMeta& meta = Meta(object);
  const std::string key = ObjectKey(kind, meta.namespace_(), meta.name());
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: flavors_[key] = object; break;
    case v1::OBJECT_KIND_COHORT: cohorts_[key] = object; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: local_queues_[key] = object; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: priority_classes_[key] = object; break;
    case v1::OBJECT_KIND_CLUSTER_QUEUE: {
      ClusterQueueState& cq = cluster_queues_[key];
      cq.object = object;
      cq.Rebuild();
      break;
    }
    default: return absl::DataLossError("a stored queue object has no kind");
  }
  return absl::OkStatus();
}

absl::Status Engine::Impl::Restore(const v1::Workload& workload) {
  const std::string key =
      absl::StrCat(workload.metadata().namespace_(), "/", workload.metadata().name());
  WorkloadEntry& entry = workloads_[key];
  entry.object = workload;
  return ParsePodSets(&entry);
}

absl::Status Engine::Impl::FinishRestore(uint64_t revision) {
  revision_ = revision;
  for (auto& [name, cq] : cluster_queues_) RefreshActive(cq);
  for (auto& [key, entry] : workloads_) {
    const v1::WorkloadState state = StateOf(entry.object);
    if (state == v1::WORKLOAD_STATE_FINISHED) {
      entry.cluster_queue = entry.object.status().admission().cluster_queue();
      continue;
    }
    if (entry.object.status().has_admission() && IsConditionTrue(entry.object, kQuotaReserved)) {
      entry.cluster_queue = entry.object.status().admission().cluster_queue();
      entry.usage = UsageFromAdmission(entry);
      ChargeUsage(entry, +1);
      continue;
    }
    // Pending: back in its queue. Whether it was inadmissible is not stored; it gets a fresh
    // attempt, which writes nothing unless its pending reason changed.
    Enqueue(entry, absl::UnixEpoch(), /*emit_reason_change=*/false);
  }
  changes_.clear();
  return absl::OkStatus();
}

// ---- Engine: forwarding ---------------------------------------------------------------------

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(options)) {}
Engine::~Engine() = default;

absl::Status Engine::Restore(const v1::QueueObject& object) { return impl_->Restore(object); }
absl::Status Engine::Restore(const v1::Workload& workload) { return impl_->Restore(workload); }
absl::Status Engine::FinishRestore(uint64_t revision) { return impl_->FinishRestore(revision); }
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
absl::StatusOr<v1::SubmitResponse> Engine::Submit(const v1::SubmitRequest& request,
                                                  absl::Time now) {
  return impl_->Submit(request, now);
}
absl::StatusOr<v1::ReleaseQuotaResponse> Engine::ReleaseQuota(
    const v1::ReleaseQuotaRequest& request, absl::Time now) {
  return impl_->ReleaseQuota(request, now);
}
absl::Status Engine::DeleteWorkload(const v1::DeleteWorkloadRequest& request, absl::Time now) {
  return impl_->DeleteWorkload(request, now);
}
absl::StatusOr<v1::Workload> Engine::GetWorkload(const v1::GetWorkloadRequest& request) const {
  return impl_->GetWorkload(request);
}
absl::StatusOr<v1::ListWorkloadsResponse> Engine::ListWorkloads(
    const v1::ListWorkloadsRequest& request) const {
  return impl_->ListWorkloads(request);
}
absl::StatusOr<v1::AdmitResponse> Engine::Describe(const v1::AdmitRequest& request,
                                                   absl::Time now) const {
  return impl_->Describe(request, now);
}
CycleStats Engine::RunCycle(absl::Time now) { return impl_->RunCycle(now); }
bool Engine::HasPendingHeads() const { return impl_->HasPendingHeads(); }
uint64_t Engine::revision() const { return impl_->revision(); }
std::vector<Change> Engine::TakeChanges() { return impl_->TakeChanges(); }

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
