// Workload conditions with Kueue's types, reasons and messages (§8 of the semantics).
//
// Thread safety: pure functions over the workload passed in.
#ifndef ADMITD_SERVER_ENGINE_CONDITIONS_H_
#define ADMITD_SERVER_ENGINE_CONDITIONS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"

namespace admitd::engine {

// Condition types.
inline constexpr char kQuotaReserved[] = "QuotaReserved";
inline constexpr char kAdmitted[] = "Admitted";
inline constexpr char kFinished[] = "Finished";
inline constexpr char kEvicted[] = "Evicted";
inline constexpr char kPreempted[] = "Preempted";
inline constexpr char kRequeued[] = "Requeued";
inline constexpr char kDeactivationTarget[] = "DeactivationTarget";
inline constexpr char kPodsReady[] = "PodsReady";

// Reasons.
inline constexpr char kReasonWaitingForQuota[] = "WaitingForQuota";
inline constexpr char kReasonWaitingForPreemptedWorkloads[] = "WaitingForPreemptedWorkloads";
inline constexpr char kReasonNoMatchingFlavor[] = "NoMatchingFlavor";
inline constexpr char kReasonExceedsMaxQuota[] = "ExceedsMaxQuota";
inline constexpr char kReasonMisconfigured[] = "Misconfigured";
inline constexpr char kReasonSuspended[] = "Suspended";
inline constexpr char kReasonPendingEvaluation[] = "PendingEvaluation";
inline constexpr char kReasonDeactivated[] = "Deactivated";
inline constexpr char kReasonWorkloadSliceReplaced[] = "WorkloadSliceReplaced";
inline constexpr char kReasonOutOfSync[] = "OutOfSync";
inline constexpr char kReasonNoReservation[] = "NoReservation";
inline constexpr char kReasonSucceeded[] = "Succeeded";
inline constexpr char kReasonFailed[] = "Failed";
inline constexpr char kReasonAdmitted[] = "Admitted";
inline constexpr char kReasonUnsatisfiedAdmissionChecks[] = "UnsatisfiedAdmissionChecks";
inline constexpr char kReasonAdmissionCheck[] = "AdmissionCheck";
inline constexpr char kReasonReactivated[] = "Reactivated";
inline constexpr char kReasonBackoffFinished[] = "BackoffFinished";
inline constexpr char kReasonRequeuingLimitExceeded[] = "RequeuingLimitExceeded";
inline constexpr char kReasonMaximumExecutionTimeExceeded[] = "MaximumExecutionTimeExceeded";
inline constexpr char kReasonClusterQueueStopped[] = "ClusterQueueStopped";
inline constexpr char kReasonLocalQueueStopped[] = "LocalQueueStopped";
inline constexpr char kReasonClusterQueueRestarted[] = "ClusterQueueRestarted";
inline constexpr char kReasonLocalQueueRestarted[] = "LocalQueueRestarted";
inline constexpr char kReasonPodsReadyTimeout[] = "PodsReadyTimeout";
inline constexpr char kReasonWaitForStart[] = "WaitForStart";
inline constexpr char kReasonWaitForRecovery[] = "WaitForRecovery";
inline constexpr char kReasonStarted[] = "Started";
inline constexpr char kReasonRecovered[] = "Recovered";
inline constexpr char kReasonWaitingForPodsReady[] = "WaitingForPodsReady";

// Messages.
inline constexpr char kMessageDeactivated[] = "The workload is deactivated";
inline constexpr char kMessageAdmitted[] = "The workload is admitted";
inline constexpr char kMessageUnsatisfiedChecks[] = "The workload has not all checks ready";

// Admission check states.
inline constexpr char kCheckPending[] = "Pending";
inline constexpr char kCheckReady[] = "Ready";
inline constexpr char kCheckRetry[] = "Retry";
inline constexpr char kCheckRejected[] = "Rejected";

// spec.active, true when unset.
inline bool IsActive(const v1::Workload& wl) {
  return !wl.spec().has_active() || wl.spec().active();
}

// The condition of `type`, or null.
const v1::Condition* FindCondition(const v1::Workload& wl, absl::string_view type);
bool IsConditionTrue(const v1::Workload& wl, absl::string_view type);

// Whether SetCondition with these arguments would leave `wl` as it is: what a caller checks
// before taking the workload for writing.
bool ConditionIs(const v1::Workload& wl, absl::string_view type, bool status,
                 absl::string_view reason, absl::string_view message);

// Sets a condition. The transition time moves only when the status changes. Returns whether
// anything changed.
bool SetCondition(v1::Workload* wl, absl::string_view type, bool status, absl::string_view reason,
                  absl::string_view message, absl::Time now);

// Removes the condition of `type`; returns whether there was one.
bool RemoveCondition(v1::Workload* wl, absl::string_view type);

// QuotaReserved=False with `reason`/`message` and Admitted=False/NoReservation: how a pending
// workload says why. Returns whether anything changed.
bool SetPending(v1::Workload* wl, absl::string_view reason, absl::string_view message,
                absl::Time now);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_CONDITIONS_H_
