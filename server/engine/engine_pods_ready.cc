// Engine: waitForPodsReady (§21 of the semantics). The Workload's PodsReady condition as Kueue's
// job reconciler writes it, from what an integration reports (ReportPodsReady) or, for workloads
// made of reported pods, from the pods' Ready conditions; the timeout that evicts an admitted
// workload whose pods did not get ready (requeued with backoff, deactivated past the limit), the
// recovery timeout of one whose pods stopped being ready; and blockAdmission's set of workloads
// holding quota without their pods ready.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/field_checks.h"

namespace admitd::engine {
namespace {

constexpr char kMessageNotReady[] = "Not all pods are ready or succeeded";
constexpr char kMessageReady[] = "All pods reached readiness and the workload is running";
constexpr char kMessageRecovery[] = "At least one pod has failed, waiting for recovery";

}  // namespace

absl::Duration Engine::Impl::RequeueBackoff(int32_t count) const {
  // The n-th requeue waits base * 2^(n-1), each doubling capped at max (the first is not).
  absl::Duration backoff = options_.backoff_base;
  for (int32_t i = 1; i < count && backoff < options_.backoff_max; ++i) {
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
  return backoff;
}

absl::Time Engine::Impl::PodsReadyDeadline(const v1::Workload& wl) const {
  const WaitForPodsReadyOptions& w = options_.wait_for_pods_ready;
  const v1::Condition* admitted = FindCondition(wl, kAdmitted);
  if (!w.enabled || admitted == nullptr || admitted->status() != "True") {
    return absl::InfiniteFuture();
  }
  const v1::Condition* ready = FindCondition(wl, kPodsReady);
  if (ready == nullptr || ready->reason() == kReasonWaitForStart || ready->reason() == "PodsReady") {
    if (ready != nullptr && ready->status() == "True") return absl::InfiniteFuture();
    return FromProto(admitted->last_transition_time()) + w.timeout;
  }
  if (ready->status() != "True" && ready->reason() == kReasonWaitForRecovery &&
      w.recovery_timeout > absl::ZeroDuration()) {
    return FromProto(ready->last_transition_time()) + w.recovery_timeout;
  }
  return absl::InfiniteFuture();
}

bool Engine::Impl::SyncPodsReady(WorkloadEntry& entry, bool ready, absl::Time now) {
  if (!options_.wait_for_pods_ready.enabled) return false;
  const v1::Workload& current = entry.object();
  const v1::Condition* c = FindCondition(current, kPodsReady);
  bool status = false;
  const char* reason = kReasonWaitForStart;
  const char* message = kMessageNotReady;
  if (!IsConditionTrue(current, kAdmitted)) {
    // Rule 1: not admitted.
  } else if (ready) {
    status = true;
    reason = c != nullptr && (c->reason() == kReasonWaitForRecovery || c->reason() == kReasonRecovered)
                 ? kReasonRecovered
                 : kReasonStarted;
    message = kMessageReady;
  } else if (c != nullptr && (c->status() == "True" || c->reason() == kReasonWaitForRecovery)) {
    reason = kReasonWaitForRecovery;
    message = kMessageRecovery;
  }
  // Kueue writes the condition only when its status or reason changes.
  if (c != nullptr && (c->status() == "True") == status && c->reason() == reason) return false;
  v1::Workload& wl = entry.mutable_object();
  SetCondition(&wl, kPodsReady, status, reason, message, now);
  TrackNotReady(entry);
  const absl::Time deadline = PodsReadyDeadline(wl);
  if (deadline != absl::InfiniteFuture()) ArmTimer(deadline, entry.key());
  return true;
}

void Engine::Impl::TrackNotReady(const WorkloadEntry& entry) {
  if (HoldsReservation(entry.object()) && !IsConditionTrue(entry.object(), kPodsReady)) {
    not_ready_.insert(entry.key());
  } else {
    not_ready_.erase(entry.key());
  }
}

void Engine::Impl::EmitPodsReady(WorkloadEntry& entry) {
  const v1::Condition* c = FindCondition(entry.object(), kPodsReady);
  // "PodsReady" marks the first start after an admission, which the ready-wait metrics observe.
  const bool started = c != nullptr && c->status() == "True" && c->reason() == kReasonStarted;
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, started ? "PodsReady" : "Updated",
               c == nullptr ? "" : c->message());
}

bool Engine::Impl::PodsReadyTimedOut(WorkloadEntry& entry, absl::Time now) {
  const v1::Workload& wl = entry.object();
  if (!options_.wait_for_pods_ready.enabled || !HoldsReservation(wl) || !IsActive(wl) ||
      IsConditionTrue(wl, kEvicted) || IsConditionTrue(wl, kFinished)) {
    return false;
  }
  if (PodsReadyDeadline(wl) > now) return false;
  const v1::Condition* ready = FindCondition(wl, kPodsReady);
  const std::string cause = ready != nullptr && ready->reason() == kReasonWaitForRecovery
                                ? kReasonWaitForRecovery
                                : kReasonWaitForStart;
  const int32_t count = wl.status().requeue_state().count() + 1;
  if (options_.backoff_limit_count >= 0 && count > options_.backoff_limit_count) {
    // §21.6: DeactivationTarget(RequeuingLimitExceeded), then the deactivation it asks for.
    Deactivate(entry, kReasonRequeuingLimitExceeded,
               "exceeding the maximum number of re-queuing retries", now);
    return true;
  }
  v1::Workload& w = entry.mutable_object();
  v1::RequeueState* rs = w.mutable_status()->mutable_requeue_state();
  rs->set_count(count);
  // Kueue adds a jitter of up to 0.01 % of the wait; admitd waits exactly (docs/semantics.md).
  const absl::Time at = now + RequeueBackoff(count);
  if (!rs->has_requeue_at() || FromProto(rs->requeue_at()) < at) {
    *rs->mutable_requeue_at() = ToProtoTime(at);
  }
  Evict(entry, kReasonPodsReadyTimeout,
        absl::StrCat("Exceeded the PodsReady timeout ", entry.key()), now, cause);
  return true;
}

absl::StatusOr<v1::ReportPodsReadyResponse> Engine::Impl::ReportPodsReady(
    const v1::ReportPodsReadyRequest& request, absl::Time now) {
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, request.uid()));
  if (!options_.wait_for_pods_ready.enabled) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "WAIT_FOR_PODS_READY_DISABLED",
                           "waitForPodsReady is not enabled in admitd's configuration: PodsReady "
                           "is not tracked");
  }
  if (IsPodWorkload(entry->object())) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "PODS_READY_DERIVED",
                           absl::StrCat("workload \"", key,
                                        "\" is made of reported pods: admitd derives its "
                                        "PodsReady from their Ready conditions"));
  }
  if (SyncPodsReady(*entry, request.ready(), now)) EmitPodsReady(*entry);
  v1::ReportPodsReadyResponse response;
  *response.mutable_workload() = entry->object();
  return response;
}

}  // namespace admitd::engine
