// Engine: the parts of a workload's life that follow its reservation (§9, §10 of the
// semantics): eviction, deactivation and reactivation, admission checks, requeue backoff and
// the maximum execution time, and the timers behind the last two.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/validation.h"

namespace admitd::engine {
namespace {

bool AllChecksReady(const v1::Workload& wl) {
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    if (c.state() != kCheckReady) return false;
  }
  return true;
}

// Kueue's wording for the checks in one state: `AdmissionCheck in Retry state: "a" (msg)`,
// plural with several, sorted by name and joined by "; ".
std::string ChecksMessage(const v1::Workload& wl, const std::string& state) {
  std::vector<const v1::AdmissionCheckState*> checks;
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    if (c.state() == state) checks.push_back(&c);
  }
  std::sort(checks.begin(), checks.end(),
            [](const auto* a, const auto* b) { return a->name() < b->name(); });
  std::vector<std::string> parts;
  for (const v1::AdmissionCheckState* c : checks) {
    parts.push_back(c->message().empty()
                        ? absl::StrCat("\"", c->name(), "\"")
                        : absl::StrCat("\"", c->name(), "\" (", c->message(), ")"));
  }
  return absl::StrCat(checks.size() > 1 ? "AdmissionChecks" : "AdmissionCheck", " in ", state,
                      " state: ", absl::StrJoin(parts, "; "));
}

// When an admitted workload runs out of its maximum execution time, or InfiniteFuture.
absl::Time ExecutionDeadline(const v1::Workload& wl) {
  const v1::Condition* admitted = FindCondition(wl, kAdmitted);
  if (admitted == nullptr || admitted->status() != "True" ||
      !wl.spec().has_maximum_execution_time_seconds()) {
    return absl::InfiniteFuture();
  }
  return FromProto(admitted->last_transition_time()) +
         absl::Seconds(wl.spec().maximum_execution_time_seconds() -
                       wl.status().accumulated_past_execution_time_seconds());
}

}  // namespace

bool HasFailedChecks(const v1::Workload& wl) {
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    if (c.state() == kCheckRetry || c.state() == kCheckRejected) return true;
  }
  return false;
}

bool Engine::Impl::SyncAdmitted(WorkloadEntry& entry, absl::Time now) {
  if (!HoldsReservation(entry.object())) return false;  // SetPending says NoReservation
  const bool was = IsConditionTrue(entry.object(), kAdmitted);
  const bool ready = AllChecksReady(entry.object());
  const absl::string_view reason = ready ? kReasonAdmitted : kReasonUnsatisfiedAdmissionChecks;
  const absl::string_view message = ready ? kMessageAdmitted : kMessageUnsatisfiedChecks;
  // Taken for writing only when something changes (a restored workload stays frozen).
  bool changed = false;
  if (!ConditionIs(entry.object(), kAdmitted, ready, reason, message)) {
    v1::Workload& wl = entry.mutable_object();
    if (was && !ready) {
      // Execution stops counting when admission is withdrawn (Kueue's SyncAdmittedCondition).
      const v1::Condition* c = FindCondition(wl, kAdmitted);
      wl.mutable_status()->set_accumulated_past_execution_time_seconds(
          wl.status().accumulated_past_execution_time_seconds() +
          absl::ToInt64Seconds(now - FromProto(c->last_transition_time())));
    }
    changed = SetCondition(&wl, kAdmitted, ready, reason, message, now);
  }
  const v1::Workload& wl = entry.object();
  if (was != ready) {
    ClusterQueueState* cq = FindClusterQueue(entry.cluster_queue);
    if (cq != nullptr && cq->reserved.count(&entry.key()) > 0) {
      cq->admitted += ready ? 1 : -1;
      AfsAdmittedDelta(entry, ready ? 1 : -1);
      if (ready && IsActive(wl)) AfsSettle(entry, now);
    }
  }
  if (ready && IsActive(wl)) {
    const absl::Time deadline = ExecutionDeadline(wl);
    if (deadline != absl::InfiniteFuture()) ArmTimer(deadline, entry.key());
    const absl::Time pods_ready = PodsReadyDeadline(wl);
    if (pods_ready != absl::InfiniteFuture()) ArmTimer(pods_ready, entry.key());
  }
  return changed;
}

void Engine::Impl::SyncAdmissionChecks(WorkloadEntry& entry, const ClusterQueueState& cq,
                                       absl::Time now) {
  v1::Workload& wl = entry.mutable_object();
  std::set<std::string> assigned;
  for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
    for (const auto& [resource, flavor] : psa.flavors()) assigned.insert(flavor);
  }
  // The checks that apply: every rule without onFlavors, and those naming an assigned flavor.
  std::set<std::string> wanted;
  for (const v1::AdmissionCheckStrategyRule& rule :
       cq.spec_object().spec().admission_checks_strategy().admission_checks()) {
    bool applies = rule.on_flavors().empty();
    for (const std::string& f : rule.on_flavors()) applies = applies || assigned.count(f) > 0;
    if (applies) wanted.insert(rule.name());
  }
  google::protobuf::RepeatedPtrField<v1::AdmissionCheckState> kept;
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    if (wanted.erase(c.name()) > 0) *kept.Add() = c;  // a known check keeps its state
  }
  for (const std::string& name : wanted) {
    v1::AdmissionCheckState* c = kept.Add();
    c->set_name(name);
    c->set_state(kCheckPending);
    *c->mutable_last_transition_time() = ToProtoTime(now);
  }
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.name() < b.name(); });
  *wl.mutable_status()->mutable_admission_checks() = std::move(kept);
}

void Engine::Impl::Evict(WorkloadEntry& entry, const std::string& reason,
                         const std::string& message, absl::Time now, const std::string& cause) {
  v1::Workload& wl = entry.mutable_object();
  // Only a deactivation names its cause in the condition (DeactivatedDueTo<cause>); a PodsReady
  // timeout's cause (WaitForStart, WaitForRecovery) goes to the scheduling stats alone.
  const std::string condition_reason = cause.empty() || reason != kReasonDeactivated
                                           ? reason
                                           : absl::StrCat(reason, "DueTo", cause);
  SetCondition(&wl, kEvicted, true, condition_reason, message, now);
  CountEviction(entry, reason, cause);
  // Every check starts over, and MultiKueue's worker choice with them (Kueue's
  // resetChecksOnEviction).
  wl.mutable_status()->clear_cluster_name();
  wl.mutable_status()->clear_nominated_cluster_names();
  wl.mutable_status()->clear_nomination_time();
  for (v1::AdmissionCheckState& c : *wl.mutable_status()->mutable_admission_checks()) {
    if (c.state() == kCheckPending) continue;
    if (c.state() == kCheckRetry) c.set_retry_count(c.retry_count() + 1);
    c.set_message(absl::StrCat("Reset to Pending after eviction. Previously: ", c.state()));
    c.set_state(kCheckPending);
    *c.mutable_last_transition_time() = ToProtoTime(now);
  }
  SyncAdmitted(entry, now);
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Evicted", message);
  const std::string event_reason = absl::StrCat("EvictedDueTo", condition_reason);
  RecordEvent(entry, EventType::kNormal, event_reason, event_reason, message, now);
  // A pod workload's pods may already be inactive (a single pod always is): release at once.
  ReconcileEvictedPodWorkload(entry, now);
}

void Engine::Impl::Deactivate(WorkloadEntry& entry, const std::string& cause,
                              const std::string& cause_message, absl::Time now) {
  v1::Workload& wl = entry.mutable_object();
  wl.mutable_spec()->set_active(false);
  wl.mutable_metadata()->set_generation(wl.metadata().generation() + 1);
  // DeactivationTarget is only the request to deactivate; it goes as the eviction is recorded.
  RemoveCondition(&wl, kDeactivationTarget);
  wl.mutable_status()->clear_requeue_state();
  const std::string reason =
      cause.empty() ? kReasonDeactivated : absl::StrCat(kReasonDeactivated, "DueTo", cause);
  const std::string message = cause.empty()
                                  ? std::string(kMessageDeactivated)
                                  : absl::StrCat(kMessageDeactivated, " due to ", cause_message);
  if (HoldsReservation(wl)) {
    // It keeps its quota until its owner reports it stopped (ReleaseQuota(stopped)).
    if (!IsConditionTrue(wl, kEvicted)) {
      Evict(entry, kReasonDeactivated, message, now, cause);
    } else {
      EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Updated", message);
    }
    return;
  }
  // Pending: out of its queue. Kueue records the eviction on a pending workload too.
  Dequeue(entry);
  if (!IsConditionTrue(wl, kEvicted)) {
    // Kueue counts this eviction too, but records no Event for a workload without admission.
    SetCondition(&wl, kEvicted, true, reason, message, now);
    CountEviction(entry, kReasonDeactivated, cause);
  }
  SetPending(&wl, kReasonDeactivated, kMessageDeactivated, now);
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Evicted", message);
}

bool Engine::Impl::FinishBackoff(WorkloadEntry& entry, absl::Time now) {
  v1::Workload& wl = entry.mutable_object();
  if (!wl.status().has_requeue_state() || !wl.status().requeue_state().has_requeue_at()) {
    return false;
  }
  if (FromProto(wl.status().requeue_state().requeue_at()) > now) return false;
  wl.mutable_status()->mutable_requeue_state()->clear_requeue_at();
  const v1::Condition* requeued = FindCondition(wl, kRequeued);
  if (requeued != nullptr && requeued->status() == "False" &&
      (requeued->reason() == kReasonAdmissionCheck || requeued->reason() == kReasonPodsReadyTimeout)) {
    SetCondition(&wl, kRequeued, true, kReasonBackoffFinished, "The workload backoff was finished",
                 now);
  }
  return true;
}

bool Engine::Impl::RequeueIfQueueRestarted(WorkloadEntry& entry, absl::Time now) {
  v1::Workload& wl = entry.mutable_object();
  const v1::Condition* requeued = FindCondition(wl, kRequeued);
  if (requeued == nullptr || requeued->status() != "False") return false;
  const std::string& ns = wl.metadata().namespace_();
  if (requeued->reason() == kReasonLocalQueueStopped) {
    auto lq = local_queues_.find(absl::StrCat(ns, "/", wl.spec().queue_name()));
    if (lq == local_queues_.end() || !IsRunning(lq->second.local_queue().spec().stop_policy())) {
      return false;
    }
    return SetCondition(&wl, kRequeued, true, kReasonLocalQueueRestarted,
                        "The LocalQueue was restarted after being stopped", now);
  }
  if (requeued->reason() == kReasonClusterQueueStopped) {
    auto cq = cluster_queues_.find(ClusterQueueOf(ns, wl.spec().queue_name()));
    if (cq == cluster_queues_.end() || !IsRunning(cq->second.spec_object().spec().stop_policy())) {
      return false;
    }
    return SetCondition(&wl, kRequeued, true, kReasonClusterQueueRestarted,
                        "The ClusterQueue was restarted after being stopped", now);
  }
  return false;
}

absl::StatusOr<v1::SetActiveResponse> Engine::Impl::SetActive(const v1::SetActiveRequest& request,
                                                              absl::Time now) {
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, request.uid()));
  v1::Workload& wl = entry->mutable_object();
  v1::SetActiveResponse response;
  if (IsConditionTrue(wl, kFinished) || IsActive(wl) == request.active()) {
    *response.mutable_workload() = wl;  // nothing to do: idempotent
    return response;
  }
  if (!request.active()) {
    Deactivate(*entry, "", "", now);
  } else {
    wl.mutable_spec()->set_active(true);
    wl.mutable_metadata()->set_generation(wl.metadata().generation() + 1);
    wl.mutable_status()->clear_requeue_state();
    std::string message = "The workload was reactivated";
    const v1::Condition* requeued = FindCondition(wl, kRequeued);
    if (requeued != nullptr && requeued->status() == "False" &&
        requeued->reason() == kReasonDeactivated) {
      SetCondition(&wl, kRequeued, true, kReasonReactivated, message, now);
    }
    if (!HoldsReservation(wl)) {
      Enqueue(*entry, now, /*emit_reason_change=*/false);
      if (auto cq = cluster_queues_.find(entry->cluster_queue); cq != cluster_queues_.end()) {
        RequeueInadmissible(cq->second);
      }
    }
    EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Requeued", message);
  }
  *response.mutable_workload() = wl;
  return response;
}

absl::StatusOr<v1::SetAdmissionCheckStateResponse> Engine::Impl::SetAdmissionCheckState(
    const v1::SetAdmissionCheckStateRequest& request, absl::Time now) {
  Violations violations;
  const std::string& state = request.state();
  if (state != kCheckPending && state != kCheckReady && state != kCheckRetry &&
      state != kCheckRejected) {
    violations.push_back({"state", absl::StrCat("Unsupported value: \"", state,
                                                "\": supported values: \"Pending\", \"Ready\", "
                                                "\"Retry\", \"Rejected\"")});
  }
  if (request.check().empty()) violations.push_back({"check", "Required value"});
  CheckMessage(&violations, "message", request.message());
  if (request.has_requeue_after_seconds() && request.requeue_after_seconds() < 0) {
    violations.push_back({"requeue_after_seconds", "must be greater than or equal to 0"});
  }
  if (!violations.empty()) return InvalidArgument(violations);
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, ""));
  v1::Workload& wl = entry->mutable_object();
  if (!HoldsReservation(wl)) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "WORKLOAD_NOT_RESERVED",
                           absl::StrCat("workload \"", key,
                                        "\" holds no quota reservation: admission checks are "
                                        "decided only while it does"));
  }
  v1::AdmissionCheckState* check = nullptr;
  std::vector<std::string> names;
  for (v1::AdmissionCheckState& c : *wl.mutable_status()->mutable_admission_checks()) {
    names.push_back(c.name());
    if (c.name() == request.check()) check = &c;
  }
  if (check == nullptr) {
    return ErrorWithReason(
        absl::StatusCode::kFailedPrecondition, "UNKNOWN_ADMISSION_CHECK",
        absl::StrCat("workload \"", key, "\" has no admission check \"", request.check(),
                     "\" (its checks: ", names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
  }
  v1::SetAdmissionCheckStateResponse response;
  const bool same = check->state() == state && check->message() == request.message() &&
                    check->has_requeue_after_seconds() == request.has_requeue_after_seconds() &&
                    check->requeue_after_seconds() == request.requeue_after_seconds();
  if (same) {
    *response.mutable_workload() = wl;
    return response;
  }
  if (check->state() != state) *check->mutable_last_transition_time() = ToProtoTime(now);
  check->set_state(state);
  check->set_message(request.message());
  if (request.has_requeue_after_seconds()) {
    check->set_requeue_after_seconds(request.requeue_after_seconds());
  } else {
    check->clear_requeue_after_seconds();
  }
  const bool evicted = IsConditionTrue(wl, kEvicted);
  bool rejected = false, retry = false;
  absl::Time retry_at = absl::InfinitePast();
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    rejected = rejected || c.state() == kCheckRejected;
    if (c.state() == kCheckRetry) {
      retry = true;
      if (c.has_requeue_after_seconds()) {
        retry_at = std::max(retry_at, FromProto(c.last_transition_time()) +
                                          absl::Seconds(c.requeue_after_seconds()));
      }
    }
  }
  if (!evicted && rejected) {
    // DeactivationTarget(AdmissionCheck), turned at once into the deactivation it asks for.
    const std::string checks = ChecksMessage(wl, kCheckRejected);
    RecordEvent(*entry, EventType::kWarning, "AdmissionCheckRejected", "AdmissionCheckRejected",
                absl::StrCat("Deactivated due to ", checks), now);
    Deactivate(*entry, kReasonAdmissionCheck, checks, now);
  } else if (!evicted && retry) {
    const int32_t count = wl.status().requeue_state().count() + 1;
    if (options_.backoff_limit_count >= 0 && count > options_.backoff_limit_count) {
      Deactivate(*entry, kReasonRequeuingLimitExceeded,
                 "exceeding the maximum number of re-queuing retries", now);
    } else {
      // The n-th requeue waits base * 2^(n-1), capped; a check's requeueAfterSeconds may ask
      // for longer.
      const absl::Duration backoff = std::min(RequeueBackoff(count), options_.backoff_max);
      const absl::Time at = std::max(now + backoff, retry_at);
      v1::RequeueState* rs = wl.mutable_status()->mutable_requeue_state();
      rs->set_count(count);
      *rs->mutable_requeue_at() = ToProtoTime(at);
      Evict(*entry, kReasonAdmissionCheck,
            absl::StrCat("Evicted due to ", ChecksMessage(wl, kCheckRetry)), now);
    }
  } else {
    const bool was_admitted = IsConditionTrue(wl, kAdmitted);
    SyncAdmitted(*entry, now);
    const bool admitted = IsConditionTrue(wl, kAdmitted);
    if (admitted && !was_admitted) {
      const v1::Condition* reserved = FindCondition(wl, kQuotaReserved);
      EmitWorkload(
          *entry, v1::WatchEvent::MODIFIED, "Admitted",
          absl::StrCat("Admitted by ClusterQueue ", wl.status().admission().cluster_queue(),
                       ", wait time since reservation was ",
                       WholeSeconds(now - FromProto(reserved->last_transition_time())), "s"));
      RecordAdmitted(*entry, now);
    } else {
      EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Updated",
                   absl::StrCat("admission check ", request.check(), " is ", state));
    }
  }
  *response.mutable_workload() = wl;
  return response;
}

absl::Time Engine::Impl::NextDeadline() const {
  return timers_.empty() ? absl::InfiniteFuture() : timers_.begin()->first;
}

void Engine::Impl::Tick(absl::Time now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    const std::string key = timers_.begin()->second;
    timers_.erase(timers_.begin());
    if (TickPodTimer(key, now) || TickAfsTimer(key, now)) continue;
    auto it = workloads_.find(key);
    if (it == workloads_.end()) continue;  // deleted since
    WorkloadEntry& entry = it->second;
    v1::Workload& wl = entry.mutable_object();
    if (entry.where == WorkloadEntry::Where::kBackoff) {
      if (!FinishBackoff(entry, now)) continue;  // a later backoff replaced this one
      Dequeue(entry);
      Enqueue(entry, now, /*emit_reason_change=*/true);
      EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Requeued",
                   "The workload backoff was finished");
      continue;
    }
    if (PodsReadyTimedOut(entry, now)) continue;
    const absl::Time deadline = ExecutionDeadline(wl);
    if (deadline > now || IsConditionTrue(wl, kFinished) || !IsActive(wl)) continue;
    // DeactivationTarget(MaximumExecutionTimeExceeded), then the deactivation; the execution
    // time starts from zero (Kueue clears the accumulated time with the target).
    wl.mutable_status()->set_accumulated_past_execution_time_seconds(0);
    RecordEvent(entry, EventType::kWarning, kReasonMaximumExecutionTimeExceeded,
                "MaximumExecutionTimeExceeded",
                absl::StrCat("The maximum execution time (",
                             wl.spec().maximum_execution_time_seconds(), "s) exceeded"),
                now);
    Deactivate(entry, kReasonMaximumExecutionTimeExceeded, "exceeding the maximum execution time",
               now);
  }
}

}  // namespace admitd::engine
