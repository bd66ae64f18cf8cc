// Engine: queue-side objects (ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
// WorkloadPriorityClass, AdmissionCheck, Namespace, MultiKueueConfig, MultiKueueCluster): apply,
// get, list, delete (the status computed on read is in engine_object_status.cc).
#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
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

// The label Kubernetes sets on every namespace, to its name.
constexpr char kNamespaceNameLabel[] = "kubernetes.io/metadata.name";

google::protobuf::Map<std::string, std::string> ImplicitNamespaceLabels(const std::string& ns) {
  google::protobuf::Map<std::string, std::string> labels;
  labels[kNamespaceNameLabel] = ns;
  return labels;
}

std::string UserContent(const v1::QueueObject& o) {
  v1::QueueObject copy = o;
  v1::ObjectMeta* meta = MutableMeta(&copy);
  meta->clear_uid();
  meta->clear_resource_version();
  meta->clear_generation();
  meta->clear_creation_timestamp();
  if (copy.has_cluster_queue()) copy.mutable_cluster_queue()->clear_status();
  if (copy.has_local_queue()) copy.mutable_local_queue()->clear_status();
  if (copy.has_cohort()) copy.mutable_cohort()->clear_status();
  if (copy.has_admission_check()) copy.mutable_admission_check()->clear_status();
  if (copy.has_multi_kueue_cluster()) copy.mutable_multi_kueue_cluster()->clear_status();
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
    case v1::QueueObject::kAdmissionCheck: return o.admission_check().spec().SerializeAsString();
    case v1::QueueObject::kMultiKueueConfig:
      return o.multi_kueue_config().spec().SerializeAsString();
    case v1::QueueObject::kMultiKueueCluster:
      return o.multi_kueue_cluster().spec().SerializeAsString();
    default: return "";
  }
}

}  // namespace

bool IsRunning(const std::string& stop_policy) {
  return stop_policy.empty() || stop_policy == "None";
}

bool UsesAdmissionCheck(const ClusterQueueState& cq, const std::string& check) {
  for (const v1::AdmissionCheckStrategyRule& rule :
       cq.spec_object().spec().admission_checks_strategy().admission_checks()) {
    if (rule.name() == check) return true;
  }
  return false;
}

// ---- Namespaces ------------------------------------------------------------------------------

bool Engine::Impl::Selects(const ClusterQueueState& cq, const std::string& ns) const {
  if (cq.SelectsEveryNamespace()) return true;  // the common case: no labels to look up
  auto it = namespaces_.find(ns);
  if (it != namespaces_.end()) {
    return cq.SelectsNamespace(it->second.namespace_().metadata().labels());
  }
  return cq.SelectsNamespace(ImplicitNamespaceLabels(ns));
}

void Engine::Impl::OnNamespaceLabels(
    const google::protobuf::Map<std::string, std::string>& old_labels,
    const google::protobuf::Map<std::string, std::string>& labels) {
  for (auto& [name, cq] : cluster_queues_) {
    if (cq.SelectsNamespace(labels) && !cq.SelectsNamespace(old_labels)) RequeueInadmissible(cq);
  }
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
    case v1::OBJECT_KIND_ADMISSION_CHECK:
      violations = ValidateAdmissionCheck(object.admission_check());
      break;
    case v1::OBJECT_KIND_NAMESPACE: violations = ValidateNamespace(object.namespace_()); break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG:
      violations = ValidateMultiKueueConfig(object.multi_kueue_config());
      break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER:
      violations = ValidateMultiKueueCluster(object.multi_kueue_cluster());
      break;
    default: return InvalidArgument({{"object", "must hold one queue object"}});
  }
  CheckObjectSize(&violations, "object", "object", object.ByteSizeLong(),
                  options_.max_object_bytes);
  if (!violations.empty()) return InvalidArgument(violations);
  v1::ObjectMeta* meta = MutableMeta(&object);
  if (kind != v1::OBJECT_KIND_LOCAL_QUEUE) meta->clear_namespace_();
  if (kind == v1::OBJECT_KIND_NAMESPACE) (*meta->mutable_labels())[kNamespaceNameLabel] = meta->name();
  const std::string key = ObjectKey(kind, meta->namespace_(), meta->name());

  std::map<std::string, v1::QueueObject>* table = nullptr;
  const v1::QueueObject* existing = nullptr;
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
      table = &flavors_;
      flavor_map_valid_ = false;
      break;
    case v1::OBJECT_KIND_COHORT: table = &cohorts_; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: table = &local_queues_; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: table = &priority_classes_; break;
    case v1::OBJECT_KIND_ADMISSION_CHECK: table = &admission_checks_; break;
    case v1::OBJECT_KIND_NAMESPACE: table = &namespaces_; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: table = &multikueue_configs_; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: table = &multikueue_clusters_; break;
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
  if (kind == v1::OBJECT_KIND_LOCAL_QUEUE) {
    // Admission fair sharing's status is the server's, kept with the object (§20.4).
    object.mutable_local_queue()->clear_status();
    if (existing != nullptr && existing->local_queue().status().has_fair_sharing()) {
      *object.mutable_local_queue()->mutable_status()->mutable_fair_sharing() =
          existing->local_queue().status().fair_sharing();
    }
  }
  if (kind == v1::OBJECT_KIND_COHORT) object.mutable_cohort()->clear_status();
  // Server-kept status stays as it is; an AdmissionCheck's controller never changes.
  ADMITD_RETURN_IF_ERROR(PrepareMultiKueueApply(existing, &object, now));
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
  std::string old_stop_policy;
  const google::protobuf::Map<std::string, std::string> old_namespace_labels =
      kind != v1::OBJECT_KIND_NAMESPACE ? google::protobuf::Map<std::string, std::string>()
      : existing != nullptr             ? existing->namespace_().metadata().labels()
                                        : ImplicitNamespaceLabels(key);
  if (existing != nullptr) {
    if (kind == v1::OBJECT_KIND_CLUSTER_QUEUE) {
      old_stop_policy = existing->cluster_queue().spec().stop_policy();
    } else if (kind == v1::OBJECT_KIND_LOCAL_QUEUE) {
      old_stop_policy = existing->local_queue().spec().stop_policy();
    }
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
    cq_by_name_[key] = &cq;
    cq.object = std::move(object);
    cq.Rebuild();
    EmitObject(kind, key, &cq.object, type, "Applied");
    *response.mutable_object()->mutable_cluster_queue() = WithStatus(cq);
  }

  // Side effects: what the change may unblock.
  if (kind == v1::OBJECT_KIND_COHORT) {
    RebuildQuotaTree();
    *response.mutable_object()->mutable_cohort() = WithStatus(cohorts_.at(key).cohort());
  } else if (kind == v1::OBJECT_KIND_CLUSTER_QUEUE) {
    ClusterQueueState& cq = cluster_queues_.at(key);
    quota_tree_.SetClusterQueue(key, &cq.spec_object().spec(), cq.usage);
    quota_tree_.Attach(key, &cq);
    cohort_members_.clear();
    if (options_.fair_sharing) *response.mutable_object()->mutable_cluster_queue() = WithStatus(cq);
  }
  if (kind == v1::OBJECT_KIND_COHORT) {
    for (auto& [name, cq] : cluster_queues_) RequeueInadmissibleOne(cq);
  } else if (kind == v1::OBJECT_KIND_CLUSTER_QUEUE) {
    ClusterQueueState& cq = cluster_queues_.at(key);
    RefreshActive(cq, now);
    if (auto orphans = orphans_.find(key); orphans != orphans_.end()) {
      std::set<std::string> waiting = std::move(orphans->second);
      orphans_.erase(orphans);
      for (const std::string& wl_key : waiting) {
        WorkloadEntry& entry = workloads_.at(wl_key);
        entry.where = WorkloadEntry::Where::kNone;
        Enqueue(entry, now, true);
      }
    }
    if (options_.admission_fair_sharing.enabled) {
      // Its admission mode may have changed: its LocalQueues' workloads take their places again.
      for (const auto& [lq_key, lq] : local_queues_) {
        if (lq.local_queue().spec().cluster_queue() == key) AfsRekey(lq_key);
      }
    }
    RequeueInadmissible(cq);
    if (cq.spec_object().spec().stop_policy() == "HoldAndDrain") {
      std::set<std::string> keys;
      for (const auto& held : cq.reserved) keys.insert(*held.first);
      Drain(keys, kReasonClusterQueueStopped, "The ClusterQueue is stopped", now);
    }
    if (IsRunning(old_stop_policy) != IsRunning(cq.spec_object().spec().stop_policy())) {
      RequeueRestarted(now);
    }
    // Reservations follow a changed admission checks strategy (Kueue's workload controller
    // syncs the checks; only a workload that is not admitted yet has its Admitted re-derived).
    std::vector<WorkloadEntry*> reserved;
    for (const auto& held : cq.reserved) reserved.push_back(held.second);
    for (WorkloadEntry* held : reserved) {
      WorkloadEntry& entry = *held;
      const std::string before = entry.object().status().SerializeAsString();
      SyncAdmissionChecks(entry, cq, now);
      if (entry.object().status().SerializeAsString() == before) continue;
      const bool admitted = IsConditionTrue(entry.object(), kAdmitted);
      if (!admitted) SyncAdmitted(entry, now);
      const bool now_admitted = IsConditionTrue(entry.object(), kAdmitted);
      EmitWorkload(entry, v1::WatchEvent::MODIFIED,
                   now_admitted && !admitted ? "Admitted" : "Updated", "admission checks changed");
      if (now_admitted && !admitted) RecordAdmitted(entry, now);
    }
    *response.mutable_object()->mutable_cluster_queue() = WithStatus(cq);
  } else if (kind == v1::OBJECT_KIND_NAMESPACE) {
    OnNamespaceLabels(old_namespace_labels, namespaces_.at(key).namespace_().metadata().labels());
  } else if (kind == v1::OBJECT_KIND_ADMISSION_CHECK || kind == v1::OBJECT_KIND_MULTIKUEUE_CONFIG ||
             kind == v1::OBJECT_KIND_MULTIKUEUE_CLUSTER) {
    RefreshMultiKueueChecks(now);
    if (kind == v1::OBJECT_KIND_ADMISSION_CHECK) {
      for (auto& [name, cq] : cluster_queues_) {
        if (!UsesAdmissionCheck(cq, key)) continue;
        RefreshActive(cq, now);
        RequeueInadmissible(cq);
      }
    }
  } else if (kind == v1::OBJECT_KIND_RESOURCE_FLAVOR) {
    for (auto& [name, cq] : cluster_queues_) {
      bool uses = false;
      for (const ResourceGroupQuota& g : cq.groups) {
        uses = uses || std::find(g.flavors.begin(), g.flavors.end(), key) != g.flavors.end();
      }
      if (!uses) continue;
      RefreshActive(cq, now);
      RequeueInadmissible(cq);
    }
  } else if (kind == v1::OBJECT_KIND_LOCAL_QUEUE) {
    const v1::LocalQueue& lq = local_queues_.at(key).local_queue();
    stopped_local_queues_ += (IsRunning(lq.spec().stop_policy()) ? 0 : 1) -
                             (existing == nullptr || IsRunning(old_stop_policy) ? 0 : 1);
    if (auto orphans = lq_orphans_.find(key); orphans != lq_orphans_.end()) {
      // Workloads submitted before their LocalQueue existed queue now.
      std::set<std::string> waiting = std::move(orphans->second);
      lq_orphans_.erase(orphans);
      for (const std::string& wl_key : waiting) {
        WorkloadEntry& entry = workloads_.at(wl_key);
        entry.where = WorkloadEntry::Where::kNone;
        Enqueue(entry, now, true);
        RefreshResourceRequests(entry);
      }
    }
    if (auto cq = cluster_queues_.find(lq.spec().cluster_queue()); cq != cluster_queues_.end()) {
      // A stop lifted (or a policy changed): its workloads get another attempt.
      RequeueInadmissible(cq->second);
      if (lq.spec().stop_policy() == "HoldAndDrain") {
        std::set<std::string> from_queue;
        for (const auto& held : cq->second.reserved) {
          const v1::Workload& wl = held.second->object();
          if (wl.metadata().namespace_() == lq.metadata().namespace_() &&
              wl.spec().queue_name() == lq.metadata().name()) {
            from_queue.insert(*held.first);
          }
        }
        Drain(from_queue, kReasonLocalQueueStopped, "The LocalQueue is stopped", now);
      }
    }
    if (IsRunning(old_stop_policy) != IsRunning(lq.spec().stop_policy())) {
      RequeueRestarted(now);
    }
    AfsLocalQueueChanged(key, now);
  }
  if (kind == v1::OBJECT_KIND_LOCAL_QUEUE && !old_cluster_queue.empty() &&
      old_cluster_queue != local_queues_.at(key).local_queue().spec().cluster_queue()) {
    // The LocalQueue now feeds another ClusterQueue: its pending workloads move there.
    const v1::LocalQueue& lq = local_queues_.at(key).local_queue();
    for (auto& [wl_key, entry] : workloads_) {
      if (entry.object().metadata().namespace_() != lq.metadata().namespace_() ||
          entry.object().spec().queue_name() != lq.metadata().name() ||
          StateOf(entry.object()) != v1::WORKLOAD_STATE_PENDING) {
        continue;
      }
      Dequeue(entry);
      Enqueue(entry, now, true);
    }
  }
  return response;
}

void Engine::Impl::Drain(const std::set<std::string>& keys, const std::string& reason,
                         const std::string& message, absl::Time now) {
  // HoldAndDrain: admitted workloads are evicted; they hold their quota until released.
  const std::vector<std::string> copy(keys.begin(), keys.end());  // Evict may touch `keys`
  for (const std::string& wl_key : copy) {
    WorkloadEntry& entry = workloads_.at(wl_key);
    if (IsConditionTrue(entry.object(), kEvicted)) continue;
    Evict(entry, reason, message, now);
  }
}

void Engine::Impl::RequeueRestarted(absl::Time now) {
  // Workloads released after a stop evicted them wait with Requeued=False; a queue that runs
  // again says they are requeued (§8).
  for (auto& [wl_key, entry] : workloads_) {
    if (RequeueIfQueueRestarted(entry, now)) {
      EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Requeued",
                   FindCondition(entry.object(), kRequeued)->message());
    }
  }
}

absl::StatusOr<v1::QueueObject> Engine::Impl::Get(const v1::GetObjectRequest& request) const {
  const std::string key = ObjectKey(request.kind(), request.namespace_(), request.name());
  const std::map<std::string, v1::QueueObject>* table = nullptr;
  switch (request.kind()) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: table = &flavors_; break;
    case v1::OBJECT_KIND_COHORT: table = &cohorts_; break;
    case v1::OBJECT_KIND_LOCAL_QUEUE: table = &local_queues_; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: table = &priority_classes_; break;
    case v1::OBJECT_KIND_ADMISSION_CHECK: table = &admission_checks_; break;
    case v1::OBJECT_KIND_NAMESPACE: table = &namespaces_; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: table = &multikueue_configs_; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: table = &multikueue_clusters_; break;
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
  if (request.kind() == v1::OBJECT_KIND_COHORT) {
    v1::QueueObject out;
    *out.mutable_cohort() = WithStatus(it->second.cohort());
    return out;
  }
  return it->second;
}

absl::StatusOr<v1::ListObjectsResponse> Engine::Impl::List(
    const v1::ListObjectsRequest& request) const {
  v1::ListObjectsResponse out;
  out.set_revision(revision_);
  // Objects in key order from just after the page token; the page ends before the object that
  // would take it past max_list_page_bytes (it always holds one).
  size_t page_bytes = 0;
  auto page = [&](const auto& table, auto render) {
    for (auto it = request.page_token().empty() ? table.begin()
                                                : table.upper_bound(request.page_token());
         it != table.end(); ++it) {
      v1::QueueObject object;
      if (!render(it->second, &object)) continue;
      const size_t bytes = object.ByteSizeLong();
      if (out.objects_size() > 0 && options_.max_list_page_bytes != 0 &&
          page_bytes + bytes > options_.max_list_page_bytes) {
        out.set_next_page_token(std::prev(it)->first);
        return;
      }
      page_bytes += bytes;
      *out.add_objects() = std::move(object);
    }
  };
  auto copy = [](const v1::QueueObject& o, v1::QueueObject* object) {
    *object = o;
    return true;
  };
  switch (request.kind()) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: page(flavors_, copy); break;
    case v1::OBJECT_KIND_COHORT:
      page(cohorts_, [this](const v1::QueueObject& o, v1::QueueObject* object) {
        *object->mutable_cohort() = WithStatus(o.cohort());
        return true;
      });
      break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: page(priority_classes_, copy); break;
    case v1::OBJECT_KIND_ADMISSION_CHECK: page(admission_checks_, copy); break;
    case v1::OBJECT_KIND_NAMESPACE: page(namespaces_, copy); break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: page(multikueue_configs_, copy); break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: page(multikueue_clusters_, copy); break;
    case v1::OBJECT_KIND_CLUSTER_QUEUE:
      page(cluster_queues_, [this](const ClusterQueueState& cq, v1::QueueObject* object) {
        *object->mutable_cluster_queue() = WithStatus(cq);
        return true;
      });
      break;
    case v1::OBJECT_KIND_LOCAL_QUEUE:
      page(local_queues_, [&](const v1::QueueObject& o, v1::QueueObject* object) {
        if (!request.namespace_().empty() &&
            o.local_queue().metadata().namespace_() != request.namespace_()) {
          return false;
        }
        *object->mutable_local_queue() = WithStatus(o.local_queue());
        return true;
      });
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
      flavor_map_valid_ = false;
      break;
    }
    case v1::OBJECT_KIND_COHORT: table = &cohorts_; break;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: table = &priority_classes_; break;
    case v1::OBJECT_KIND_NAMESPACE: table = &namespaces_; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: table = &multikueue_configs_; break;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: table = &multikueue_clusters_; break;
    case v1::OBJECT_KIND_ADMISSION_CHECK: {
      for (const auto& [name, cq] : cluster_queues_) {
        if (UsesAdmissionCheck(cq, key)) {
          return in_use(absl::StrCat("ClusterQueue \"", name, "\" refers to it"));
        }
      }
      table = &admission_checks_;
      break;
    }
    case v1::OBJECT_KIND_LOCAL_QUEUE: {
      for (const auto& [wl_key, entry] : workloads_) {
        if (entry.object().metadata().namespace_() == request.namespace_() &&
            entry.object().spec().queue_name() == request.name() &&
            StateOf(entry.object()) != v1::WORKLOAD_STATE_FINISHED) {
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
      if (cq.reserving > 0 || !cq.pending.empty() || !cq.backing_off.empty()) {
        return in_use(absl::StrCat(
            cq.reserving, " workload(s) hold quota and ",
            cq.pending.active() + cq.pending.inadmissible() + cq.backing_off.size(),
            " are pending in it"));
      }
      EmitObject(kind, key, &cq.object, v1::WatchEvent::DELETED, "Deleted");
      cqs_with_heads_.erase(key);
      cq_by_name_.erase(key);
      cluster_queues_.erase(it);
      quota_tree_.SetClusterQueue(key, nullptr, {});
      cohort_members_.clear();
      return absl::OkStatus();
    }
    default: return InvalidArgument({{"kind", "must name a queue-side kind"}});
  }
  auto it = table->find(key);
  if (it == table->end()) return NotFound(KindName(kind), key, "name");
  ADMITD_RETURN_IF_ERROR(check_version(it->second));
  EmitObject(kind, key, &it->second, v1::WatchEvent::DELETED, "Deleted");
  if (kind == v1::OBJECT_KIND_LOCAL_QUEUE &&
      !IsRunning(it->second.local_queue().spec().stop_policy())) {
    --stopped_local_queues_;
  }
  const google::protobuf::Map<std::string, std::string> old_labels =
      it->second.has_namespace_() ? it->second.namespace_().metadata().labels()
                                  : google::protobuf::Map<std::string, std::string>();
  table->erase(it);
  if (kind == v1::OBJECT_KIND_LOCAL_QUEUE) AfsLocalQueueChanged(key, now);
  // A namespace without its object keeps the name label alone.
  if (kind == v1::OBJECT_KIND_NAMESPACE) OnNamespaceLabels(old_labels, ImplicitNamespaceLabels(key));
  if (kind == v1::OBJECT_KIND_COHORT) {
    RebuildQuotaTree();
    for (auto& [name, cq] : cluster_queues_) RequeueInadmissibleOne(cq);
  }
  if (kind == v1::OBJECT_KIND_MULTIKUEUE_CONFIG || kind == v1::OBJECT_KIND_MULTIKUEUE_CLUSTER) {
    RefreshMultiKueueChecks(now);
  }
  return absl::OkStatus();
}

void Engine::Impl::RefreshActive(ClusterQueueState& cq, std::optional<absl::Time> now) {
  const bool was_active = cq.active();
  cq.inactive_reason.clear();
  cq.inactive_message.clear();
  // Kueue lists every cause, stopped first; the first cause names the reason.
  std::vector<std::string> reasons, messages;
  if (!IsRunning(cq.spec_object().spec().stop_policy())) {
    reasons.push_back("Stopped");
    messages.push_back("is stopped");
  }
  std::vector<std::string> missing;
  for (const ResourceGroupQuota& g : cq.groups) {
    for (const std::string& f : g.flavors) {
      if (flavors_.count(f) == 0) missing.push_back(f);
    }
  }
  if (!missing.empty()) {
    reasons.push_back("FlavorNotFound");
    messages.push_back(
        absl::StrCat("references missing ResourceFlavor(s): ", absl::StrJoin(missing, ",")));
  }
  std::set<std::string> missing_checks;
  for (const v1::AdmissionCheckStrategyRule& rule :
       cq.spec_object().spec().admission_checks_strategy().admission_checks()) {
    if (admission_checks_.count(rule.name()) == 0) missing_checks.insert(rule.name());
  }
  if (!missing_checks.empty()) {
    reasons.push_back("AdmissionCheckNotFound");
    messages.push_back(absl::StrCat("references missing AdmissionCheck(s): ",
                                    absl::StrJoin(missing_checks, ",")));
  }
  AddMultiKueueInactiveCauses(cq, &reasons, &messages);
  if (!reasons.empty()) {
    cq.inactive_reason = reasons.front();
    cq.inactive_message =
        absl::StrCat("Can't admit new workloads: ", absl::StrJoin(messages, ", "), ".");
  }
  RefreshHeads(cq);
  if (now.has_value() && was_active && !cq.active()) {
    // The queue gives no heads any more, so the scheduler will not tell its pending workloads
    // why they wait: say it once here, as Kueue's workload controller does (§6.6).
    const std::string message = absl::StrCat("ClusterQueue ", cq.name(), " is inactive");
    for (QueueKey* key : cq.pending.InOrder()) {
      MarkPending(*key->entry, kReasonSuspended, message, *now);
    }
  }
}

void Engine::Impl::RefreshHeads(ClusterQueueState& cq) {
  if (cq.active() && cq.pending.Front() != nullptr) {
    cqs_with_heads_.insert(cq.name());
  } else {
    cqs_with_heads_.erase(cq.name());
  }
}

}  // namespace admitd::engine
