// Engine: what a pending workload's queue says about it, read without changing anything: its
// position (Kueue's visibility order), the pending and object counts the metrics read, and
// Admit's answer with the dry-run explanation of what a cycle would decide now.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"

namespace admitd::engine {

std::optional<v1::PendingPosition> Engine::Impl::PositionOf(const WorkloadEntry& entry) const {
  if (entry.where != WorkloadEntry::Where::kQueued &&
      entry.where != WorkloadEntry::Where::kBackoff) {
    return std::nullopt;
  }
  auto cq_it = cluster_queues_.find(entry.cluster_queue);
  if (cq_it == cluster_queues_.end()) return std::nullopt;
  const ClusterQueueState& cq = cq_it->second;
  const bool active = cq.pending.IsActive(&entry.queue_key);
  // Kueue's visibility order over every pending workload of the queue, active or not: the sticky
  // preemptor first, then the heap's order (priority, queue-order time, UID).
  auto before = [&](const QueueKey& other) {
    if (other.key == entry.key()) return false;
    if (other.key == cq.sticky) return true;
    if (entry.key() == cq.sticky) return false;
    return other < entry.queue_key;
  };
  const std::string& ns = entry.object().metadata().namespace_();
  const std::string& lq = entry.object().spec().queue_name();
  int in_cq = 0, in_lq = 0;
  auto count = [&](const QueueKey& other) {
    if (!before(other)) return;
    ++in_cq;
    const WorkloadEntry* e = FindWorkload(ns, other.key.substr(other.key.find('/') + 1));
    if (e != nullptr && e->object().metadata().namespace_() == ns &&
        e->object().spec().queue_name() == lq) {
      ++in_lq;
    }
  };
  cq.pending.ForEach(count);
  for (const std::string& key : cq.backing_off) {
    if (auto it = workloads_.find(key); it != workloads_.end()) count(it->second.queue_key);
  }
  v1::PendingPosition out;
  out.set_status(active ? "active" : "inadmissible");
  out.set_position_in_cluster_queue(in_cq);
  out.set_position_in_local_queue(in_lq);
  return out;
}

std::vector<PendingCount> Engine::Impl::PendingCounts() const {
  std::vector<PendingCount> out;
  out.reserve(cluster_queues_.size());
  for (const auto& [name, cq] : cluster_queues_) {
    out.push_back({name, static_cast<int>(cq.pending.active()),
                   static_cast<int>(cq.pending.inadmissible() + cq.backing_off.size())});
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> Engine::Impl::ObjectCounts() const {
  auto n = [](size_t size) { return static_cast<int64_t>(size); };
  return {{"AdmissionCheck", n(admission_checks_.size())},
          {"ClusterQueue", n(cluster_queues_.size())},
          {"Cohort", n(cohorts_.size())},
          {"LocalQueue", n(local_queues_.size())},
          {"MultiKueueCluster", n(multikueue_clusters_.size())},
          {"MultiKueueConfig", n(multikueue_configs_.size())},
          {"Namespace", n(namespaces_.size())},
          {"Pod", n(pods_.size())},
          {"ResourceFlavor", n(flavors_.size())},
          {"WorkloadPriorityClass", n(priority_classes_.size())},
          {"Workload", n(workloads_.size())}};
}

absl::StatusOr<v1::AdmitResponse> Engine::Impl::Describe(const v1::AdmitRequest& request,
                                                         absl::Time now) const {
  const WorkloadEntry* entry = FindWorkload(request.namespace_(), request.name());
  if (entry == nullptr) {
    return NotFound("Workload", absl::StrCat(request.namespace_(), "/", request.name()), "name");
  }
  v1::AdmitResponse out;
  *out.mutable_workload() = entry->object();
  if (std::optional<v1::PendingPosition> position = PositionOf(*entry)) {
    *out.mutable_position() = *position;
    *out.mutable_workload()->mutable_status()->mutable_pending_position() = *position;
  }
  out.set_state(StateOf(entry->object()));
  out.set_admitted(out.state() == v1::WORKLOAD_STATE_ADMITTED);
  if (out.state() == v1::WORKLOAD_STATE_PENDING) {
    if (const v1::Condition* c = FindCondition(entry->object(), kQuotaReserved)) {
      out.set_pending_reason(c->reason());
      out.set_pending_message(c->message());
    }
  }
  if (!request.dry_run()) return out;

  v1::Explanation* why = out.mutable_explanation();
  why->set_cluster_queue(entry->cluster_queue);
  auto cq_it = cluster_queues_.find(entry->cluster_queue);
  if (out.state() != v1::WORKLOAD_STATE_PENDING) {
    why->set_message(absl::StrCat("the workload is not pending (",
                                  v1::WorkloadState_Name(out.state()), ")"));
    return out;
  }
  if (cq_it == cluster_queues_.end()) {
    why->set_message(absl::StrCat("ClusterQueue ", entry->cluster_queue, " doesn't exist"));
    return out;
  }
  const ClusterQueueState& cq = cq_it->second;
  if (std::optional<v1::PendingPosition> position = PositionOf(*entry)) {
    why->set_queue_position(position->position_in_cluster_queue());
  }
  if (!cq.active()) {
    why->set_message(absl::StrCat("ClusterQueue ", cq.name(), " is inactive: ",
                                  cq.inactive_message));
    return out;
  }
  if (!Selects(cq, entry->object().metadata().namespace_())) {
    why->set_message("workload namespace doesn't match ClusterQueue selector");
    return out;
  }
  Engine::Impl* self = const_cast<Engine::Impl*>(this);  // FindTargets undoes what it simulates
  const PreemptionOracle oracle = [&](const FlavorResource& fr, int64_t value) {
    return self->SimulatePreemption(cq, *entry, fr, value);
  };
  const ScanProgress* resume =
      entry->last_assignment.has_value() ? &entry->last_assignment->progress : nullptr;
  std::optional<SliceBase> base;
  if (WorkloadEntry* old = self->ReplacedSlice(*entry, cq)) base = SliceBaseOf(*old);
  Assignment assignment =
      AssignFlavors(cq, quota_tree_, self->FlavorMap(), entry->pod_sets(), &oracle, resume,
                    /*explain=*/true, base ? &*base : nullptr, /*nominated=*/nullptr,
                    options_.fair_sharing);
  for (const FlavorAttempt& a : assignment.attempts) {
    v1::FlavorConsideration* f = why->add_flavors();
    f->set_pod_set(a.pod_set);
    f->set_resource(a.resource);
    f->set_flavor(a.flavor);
    f->set_mode(a.mode);
    f->set_reason(a.reason);
  }
  why->set_would_admit(assignment.fits);
  if (assignment.preempt) {
    for (const Target& t :
         self->FindTargets(cq, *entry, assignment.usage, assignment.needs_preemption)) {
      why->add_would_preempt(t.entry->key());
    }
  }
  if (assignment.fits) {
    *why->mutable_admission() = BuildAdmission(*entry, cq, assignment);
    why->set_message(absl::StrCat("would reserve quota in ClusterQueue ", cq.name()));
  } else {
    why->set_message(assignment.message);
  }
  return out;
}

}  // namespace admitd::engine
