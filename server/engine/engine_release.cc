// Engine: ReleaseQuota, how a job gives its workload's quota back: finished (Finished, the
// quota released), stopped after an eviction (released and requeued, or not, as Kueue's
// Requeued rules say), or some pods reclaimable (their share of the usage released early).
#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/validation.h"

namespace admitd::engine {

absl::StatusOr<v1::ReleaseQuotaResponse> Engine::Impl::ReleaseQuota(
    const v1::ReleaseQuotaRequest& request, absl::Time now, Answer answer) {
  if (request.has_finished()) {
    Violations violations;
    CheckMessage(&violations, "finished.message", request.finished().message());
    const std::string& reason = request.finished().reason();
    if (!reason.empty() &&
        (reason.size() > 1024 || !absl::ascii_isupper(static_cast<unsigned char>(reason[0])) ||
         !std::all_of(reason.begin(), reason.end(),
                      [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }))) {
      violations.push_back({"finished.reason",
                            absl::StrCat("Invalid value: \"", reason.substr(0, 64),
                                         "\": must be a CamelCase word of letters and digits")});
    }
    if (!violations.empty()) return InvalidArgument(violations);
  }
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, request.uid()));
  v1::Workload& wl = entry->mutable_object();
  const bool reserved = HoldsReservation(wl);
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
        entry->ClearUsage();
      }
      Dequeue(*entry);
      const bool ok = request.finished().succeeded();
      std::string message = request.finished().message();
      if (message.empty()) {
        message = ok ? "The workload finished successfully" : "The workload failed";
      }
      const std::string& reason = request.finished().reason();
      SetCondition(&wl, kFinished, true,
                   !reason.empty() ? reason : ok ? kReasonSucceeded : kReasonFailed, message, now);
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
      // A newer slice of the job waits to replace this one: it is finished, not requeued.
      if (FinishIfReplacedWhileEvicted(*entry, now)) {
        if (cq != nullptr) RequeueInadmissible(*cq);
        break;
      }
      ChargeUsage(*entry, -1);
      entry->ClearUsage();
      // The time it ran counts towards its maximum execution time (§9.3).
      if (const v1::Condition* admitted = FindCondition(wl, kAdmitted);
          admitted != nullptr && admitted->status() == "True") {
        wl.mutable_status()->set_accumulated_past_execution_time_seconds(
            wl.status().accumulated_past_execution_time_seconds() +
            absl::ToInt64Seconds(now - FromProto(admitted->last_transition_time())));
      }
      const bool requeue = reason == "Preempted" || reason == "NodeFailures";
      SetCondition(&wl, kRequeued, requeue, reason, message, now);
      wl.mutable_status()->clear_admission();
      SetPending(&wl, kReasonPendingEvaluation, message, now);
      SyncPodsReady(*entry, /*ready=*/false, now);  // not admitted: WaitForStart (§21.2)
      // What Kueue's workload controller says next about a workload that is not requeued: a
      // queue that was stopped runs again, or a deactivated workload was reactivated meanwhile.
      RequeueIfQueueRestarted(*entry, now);
      if (reason == kReasonDeactivated && (!wl.spec().has_active() || wl.spec().active())) {
        SetCondition(&wl, kRequeued, true, kReasonReactivated, "The workload was reactivated", now);
      }
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
        entry->SetUsage(UsageFromAdmission(*entry));
        ChargeUsage(*entry, +1);
        if (cq != nullptr) RequeueInadmissible(*cq);
      }
      EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Updated", "reclaimable pods changed");
      break;
    }
    default: return InvalidArgument({{"release", "must be one of finished, stopped, reclaimable"}});
  }
  SetAnswer(wl, answer, response.mutable_workload());
  return response;
}

}  // namespace admitd::engine
