// Engine: the Kubernetes Events Kueue records on Workloads (semantics §8, §17), as Changes of
// kind OBJECT_KIND_EVENT carrying an EventRecord: logged and watched like object changes, never
// stored as objects.
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/pods/pod_group.h"

namespace admitd::engine {
void Engine::Impl::RecordEvent(const WorkloadEntry& entry, EventType type,
                               const std::string& reason, const std::string& action,
                               std::string note, absl::Time now) {
  if (!options_.record_events) return;
  const v1::ObjectMeta& meta = entry.object().metadata();
  auto event = std::make_shared<EventRecord>();
  event->warning = type == EventType::kWarning;
  event->reason = reason;
  event->action = action.empty() ? reason : action;
  pods::TruncateEventMessageInPlace(&note);
  event->note = std::move(note);
  event->kind = "Workload";
  event->namespace_ = meta.namespace_();
  event->name = meta.name();
  event->uid = meta.uid();
  event->reporting_controller = "kueue-admission";
  event->cluster_queue = entry.cluster_queue;
  if (!meta.labels().empty()) {
    if (auto cluster = meta.labels().find(kPodClusterLabel); cluster != meta.labels().end()) {
      event->cluster = cluster->second;
    }
  }
  event->time = now;
  Change c;
  c.revision = ++revision_;
  c.kind = v1::OBJECT_KIND_EVENT;
  // Unique per event, so that a batch never folds two events into one.
  c.key = absl::StrCat(entry.key(), "#", c.revision);
  c.type = v1::WatchEvent::ADDED;
  c.reason = reason;
  c.event = std::move(event);
  changes_.push_back(std::move(c));
}

void Engine::Impl::RecordAudit(const v1::Event& event, absl::Time now) {
  auto record = std::make_shared<EventRecord>(FromEvent(event));
  record->time = now;
  pods::TruncateEventMessageInPlace(&record->note);
  Change c;
  c.revision = ++revision_;
  c.kind = v1::OBJECT_KIND_EVENT;
  c.key = absl::StrCat("audit/", record->kind, "/", record->namespace_, "/", record->name, "#",
                       c.revision);
  c.type = v1::WatchEvent::ADDED;
  c.reason = record->reason;
  c.event = std::move(record);
  changes_.push_back(std::move(c));
}

void Engine::Impl::CountEviction(WorkloadEntry& entry, const std::string& reason,
                                 const std::string& cause) {
  v1::SchedulingStats* stats = entry.mutable_object().mutable_status()->mutable_scheduling_stats();
  for (v1::WorkloadSchedulingStatsEviction& e : *stats->mutable_evictions()) {
    if (e.reason() == reason && e.underlying_cause() == cause) {
      e.set_count(e.count() + 1);
      return;
    }
  }
  v1::WorkloadSchedulingStatsEviction* e = stats->add_evictions();
  e->set_reason(reason);
  e->set_underlying_cause(cause);
  e->set_count(1);
}

void Engine::Impl::MarkPendingAfterAttempt(WorkloadEntry& entry, const std::string& reason,
                                           const std::string& message, absl::Time now) {
  if (!SetPending(&entry.mutable_object(), reason, message, now)) return;
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Pending", message);
  // Kueue records a Warning with the condition's reason after every failed attempt; Kubernetes
  // folds the repeats into one Event with a count. Here it is recorded when the reason or
  // message changes, which is what that Event's note shows.
  RecordEvent(entry, EventType::kWarning, reason, reason, message, now);
}

void Engine::Impl::RecordQuotaReserved(const WorkloadEntry& entry, const std::string& considered,
                                       absl::Time now) {
  const v1::Workload& wl = entry.object();
  // The wait counts from the last requeue, else from creation (Kueue's QueuedWaitTime).
  absl::Time queued = FromProto(wl.metadata().creation_timestamp());
  if (const v1::Condition* requeued = FindCondition(wl, kRequeued); requeued != nullptr) {
    queued = FromProto(requeued->last_transition_time());
  }
  std::string note = absl::StrCat("Quota reserved in ClusterQueue ", entry.cluster_queue,
                                  ", wait time since queued was ", WholeSeconds(now - queued), "s");
  if (!considered.empty()) absl::StrAppend(&note, "; Flavors considered: ", considered);
  RecordEvent(entry, EventType::kNormal, "QuotaReserved", "QuotaReserved", std::move(note), now);
}

void Engine::Impl::RecordAdmitted(const WorkloadEntry& entry, absl::Time now) {
  absl::Time reserved = now;
  if (const v1::Condition* c = FindCondition(entry.object(), kQuotaReserved); c != nullptr) {
    reserved = FromProto(c->last_transition_time());
  }
  RecordEvent(entry, EventType::kNormal, "Admitted", "Admitted",
              absl::StrCat("Admitted by ClusterQueue ", entry.cluster_queue,
                           ", wait time since reservation was ", WholeSeconds(now - reserved),
                           "s"),
              now);
}

int64_t WholeSeconds(absl::Duration d) {
  // Go's "%.0f" of the seconds: rounded half to even, never negative here.
  if (d < absl::ZeroDuration()) return 0;
  const double s = absl::ToDoubleSeconds(d);
  return static_cast<int64_t>(std::nearbyint(s));
}

}  // namespace admitd::engine
