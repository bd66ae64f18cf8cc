// Engine: MultiKueue's objects and the manager-side state of a dispatched workload
// (multikueue.md §2, §5–§7). The AdmissionCheck's Active condition is derived here from its
// MultiKueueConfig and the clusters' Active conditions, the ClusterQueue constraints on
// MultiKueue checks are checked, and the dispatcher's decisions (nominations, the worker that
// admitted, retries, a worker's connection state) are recorded as ordinary Changes.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/validation.h"

namespace admitd::engine {
namespace {

constexpr char kActive[] = "Active";

// Sets the condition of `type` in `conditions`; the transition time moves only when the status
// does. True when anything changed.
bool SetObjectCondition(google::protobuf::RepeatedPtrField<v1::Condition>* conditions,
                        const std::string& type, bool status, const std::string& reason,
                        const std::string& message, absl::Time now) {
  const std::string s = status ? "True" : "False";
  for (v1::Condition& c : *conditions) {
    if (c.type() != type) continue;
    if (c.status() == s && c.reason() == reason && c.message() == message) return false;
    if (c.status() != s) *c.mutable_last_transition_time() = ToProtoTime(now);
    c.set_status(s);
    c.set_reason(reason);
    c.set_message(message);
    return true;
  }
  v1::Condition* c = conditions->Add();
  c->set_type(type);
  c->set_status(s);
  c->set_reason(reason);
  c->set_message(message);
  *c->mutable_last_transition_time() = ToProtoTime(now);
  return true;
}

bool ConditionTrue(const google::protobuf::RepeatedPtrField<v1::Condition>& conditions,
                   const std::string& type) {
  for (const v1::Condition& c : conditions) {
    if (c.type() == type) return c.status() == "True";
  }
  return false;
}

// Go's %v of a string slice: "[a b]".
std::string GoList(const std::vector<std::string>& items) {
  return absl::StrCat("[", absl::StrJoin(items, " "), "]");
}

}  // namespace

bool IsMultiKueueController(const std::string& controller) {
  return controller == kMultiKueueControllerName;
}

bool Engine::Impl::IsMultiKueueCheck(const std::string& check) const {
  auto it = admission_checks_.find(check);
  return it != admission_checks_.end() &&
         IsMultiKueueController(it->second.admission_check().spec().controller_name());
}

bool Engine::Impl::IsCheckActive(const std::string& check) const {
  auto it = admission_checks_.find(check);
  if (it == admission_checks_.end()) return false;
  const v1::AdmissionCheck& ac = it->second.admission_check();
  // Only MultiKueue checks carry a condition of the server's; other controllers' checks count
  // as active.
  return !IsMultiKueueController(ac.spec().controller_name()) ||
         ConditionTrue(ac.status().conditions(), kActive);
}

absl::Status Engine::Impl::PrepareMultiKueueApply(const v1::QueueObject* existing,
                                                  v1::QueueObject* object, absl::Time now) const {
  if (object->has_admission_check()) {
    v1::AdmissionCheck* ac = object->mutable_admission_check();
    if (existing != nullptr &&
        existing->admission_check().spec().controller_name() != ac->spec().controller_name()) {
      return InvalidArgument({{"spec.controllerName", "Invalid value: \"string\": field is immutable"}});
    }
    if (existing != nullptr) {
      *ac->mutable_status() = existing->admission_check().status();
    } else {
      ac->clear_status();
    }
  } else if (object->has_multi_kueue_cluster()) {
    v1::MultiKueueCluster* mkc = object->mutable_multi_kueue_cluster();
    if (existing != nullptr) {
      *mkc->mutable_status() = existing->multi_kueue_cluster().status();
    } else {
      // A new cluster is out of reach until the dispatcher connects to it (Kueue's new client
      // starts disconnected, its loss time set to its creation).
      mkc->clear_status();
      SetObjectCondition(mkc->mutable_status()->mutable_conditions(), kActive, false,
                         "ClientConnectionFailed", "not connected yet", now);
      *mkc->mutable_status()->mutable_disconnected_since() = ToProtoTime(now);
    }
  }
  return absl::OkStatus();
}

void Engine::Impl::RefreshMultiKueueChecks(absl::Time now) {
  for (auto& [name, object] : admission_checks_) {
    v1::AdmissionCheck* ac = object.mutable_admission_check();
    if (!IsMultiKueueController(ac->spec().controller_name())) continue;
    bool active = false;
    std::string reason, message;
    const v1::AdmissionCheckParametersReference& ref = ac->spec().parameters();
    std::string error;
    if (!ac->spec().has_parameters()) {
      error = "missing parameters reference";
    } else if (ref.name().empty()) {
      error = "empty name: bad parameters reference";
    } else if (ref.api_group() != "kueue.x-k8s.io") {
      error = absl::StrCat("wrong group \"", ref.api_group(),
                           "\", expecting \"kueue.x-k8s.io\": bad parameters reference");
    } else if (ref.kind() != "MultiKueueConfig") {
      error = absl::StrCat("wrong kind \"", ref.kind(),
                           "\", expecting \"MultiKueueConfig\": bad parameters reference");
    } else if (multikueue_configs_.count(ref.name()) == 0) {
      error = absl::StrCat("multikueueconfigs.kueue.x-k8s.io \"", ref.name(), "\" not found");
    }
    if (!error.empty()) {
      reason = "BadConfig";
      message = absl::StrCat("Cannot load the AdmissionChecks parameters: ", error);
    } else {
      std::vector<std::string> missing, inactive;
      int usable = 0;
      for (const std::string& c :
           multikueue_configs_.at(ref.name()).multi_kueue_config().spec().clusters()) {
        auto it = multikueue_clusters_.find(c);
        if (it == multikueue_clusters_.end()) {
          missing.push_back(c);
        } else if (!ConditionTrue(it->second.multi_kueue_cluster().status().conditions(),
                                  kActive)) {
          inactive.push_back(c);
        } else {
          ++usable;
        }
      }
      std::vector<std::string> parts;
      if (!missing.empty()) parts.push_back(absl::StrCat("Missing clusters: ", GoList(missing)));
      if (!inactive.empty()) parts.push_back(absl::StrCat("Inactive clusters: ", GoList(inactive)));
      if (parts.empty()) {
        active = true;
        reason = "Active";
        message = "The admission check is active";
      } else {
        active = usable > 0;
        reason = usable > 0 ? "SomeActiveClusters" : "NoUsableClusters";
        message = absl::StrJoin(parts, ", ");
      }
    }
    const bool was_active = ConditionTrue(ac->status().conditions(), kActive);
    if (!SetObjectCondition(ac->mutable_status()->mutable_conditions(), kActive, active, reason,
                            message, now)) {
      continue;
    }
    EmitObject(v1::OBJECT_KIND_ADMISSION_CHECK, name, &object, v1::WatchEvent::MODIFIED,
               "Applied");
    if (was_active == active) continue;
    for (auto& [cq_name, cq] : cluster_queues_) {
      if (!UsesAdmissionCheck(cq, name)) continue;
      RefreshActive(cq, now);
      RequeueInadmissible(cq);
    }
  }
}

void Engine::Impl::AddMultiKueueInactiveCauses(const ClusterQueueState& cq,
                                               std::vector<std::string>* reasons,
                                               std::vector<std::string>* messages) const {
  std::vector<std::string> inactive, multikueue, per_flavor;
  for (const v1::AdmissionCheckStrategyRule& rule :
       cq.spec_object().spec().admission_checks_strategy().admission_checks()) {
    if (admission_checks_.count(rule.name()) == 0) continue;  // AdmissionCheckNotFound
    if (!IsCheckActive(rule.name())) inactive.push_back(rule.name());
    if (IsMultiKueueCheck(rule.name())) {
      multikueue.push_back(rule.name());
      if (!rule.on_flavors().empty()) per_flavor.push_back(rule.name());
    }
  }
  std::sort(inactive.begin(), inactive.end());
  if (!inactive.empty()) {
    reasons->push_back("AdmissionCheckInactive");
    messages->push_back(
        absl::StrCat("references inactive AdmissionCheck(s): ", absl::StrJoin(inactive, ",")));
  }
  if (multikueue.size() > 1) {
    reasons->push_back("MultipleMultiKueueAdmissionChecks");
    messages->push_back(
        absl::StrCat("Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, "
                     "found: ",
                     absl::StrJoin(multikueue, ",")));
  }
  if (!per_flavor.empty()) {
    reasons->push_back("MultiKueueAdmissionCheckAppliedPerFlavor");
    messages->push_back(absl::StrCat("Cannot specify MultiKueue AdmissionCheck per flavor, found: ",
                                     absl::StrJoin(per_flavor, ",")));
  }
}

// ---- The dispatcher's writes -------------------------------------------------------------

absl::StatusOr<WorkloadEntry*> Engine::Impl::FindDispatched(const DispatchTarget& target,
                                                            v1::AdmissionCheckState** check) {
  const std::string key = absl::StrCat(target.ns, "/", target.name);
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, target.uid));
  v1::Workload& wl = entry->mutable_object();
  if (!HoldsReservation(wl) || IsConditionTrue(wl, kFinished)) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "WORKLOAD_NOT_RESERVED",
                           absl::StrCat("workload \"", key, "\" holds no quota reservation"));
  }
  for (v1::AdmissionCheckState& c : *wl.mutable_status()->mutable_admission_checks()) {
    if (c.name() == target.check) *check = &c;
  }
  if (*check == nullptr) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "UNKNOWN_ADMISSION_CHECK",
                           absl::StrCat("workload \"", key, "\" has no admission check \"",
                                        target.check, "\""));
  }
  return entry;
}

absl::StatusOr<v1::Workload> Engine::Impl::NominateClusters(
    const DispatchTarget& target, const std::vector<std::string>& clusters, absl::Time now) {
  v1::AdmissionCheckState* check = nullptr;
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindDispatched(target, &check));
  v1::Workload& wl = entry->mutable_object();
  v1::WorkloadStatus* status = wl.mutable_status();
  if (check->state() != kCheckPending || !status->cluster_name().empty() ||
      IsConditionTrue(wl, kEvicted)) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "NOT_DISPATCHING",
                           absl::StrCat("workload \"", entry->key(),
                                        "\" is not waiting for a worker (check ", check->state(),
                                        ", clusterName \"", status->cluster_name(), "\")"));
  }
  const std::set<std::string> before(status->nominated_cluster_names().begin(),
                                     status->nominated_cluster_names().end());
  if (std::equal(clusters.begin(), clusters.end(), status->nominated_cluster_names().begin(),
                 status->nominated_cluster_names().end())) {
    return wl;
  }
  bool grew = false;
  for (const std::string& c : clusters) grew = grew || before.count(c) == 0;
  status->clear_nominated_cluster_names();
  for (const std::string& c : clusters) status->add_nominated_cluster_names(c);
  if (grew) *status->mutable_nomination_time() = ToProtoTime(now);
  EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Updated",
               absl::StrCat("nominated clusters: ", absl::StrJoin(clusters, ", ")));
  return wl;
}

absl::StatusOr<v1::Workload> Engine::Impl::RecordWorkerAdmission(const DispatchTarget& target,
                                                                 const std::string& cluster,
                                                                 absl::Time now) {
  v1::AdmissionCheckState* check = nullptr;
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindDispatched(target, &check));
  v1::Workload& wl = entry->mutable_object();
  v1::WorkloadStatus* status = wl.mutable_status();
  if (!status->cluster_name().empty() && status->cluster_name() != cluster) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "CLUSTER_NAME_IMMUTABLE",
                           absl::StrCat("workload \"", entry->key(), "\" was admitted on \"",
                                        status->cluster_name(), "\"; clusterName is immutable"));
  }
  if (check->state() == kCheckRetry || check->state() == kCheckRejected ||
      IsConditionTrue(wl, kEvicted)) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "NOT_DISPATCHING",
                           absl::StrCat("workload \"", entry->key(), "\" is being evicted"));
  }
  const std::string message = absl::StrCat("The workload was admitted on \"", cluster, "\"");
  if (status->cluster_name() == cluster && check->state() == kCheckReady) return wl;
  status->set_cluster_name(cluster);
  status->clear_nominated_cluster_names();
  status->clear_nomination_time();
  if (check->state() != kCheckReady) *check->mutable_last_transition_time() = ToProtoTime(now);
  check->set_state(kCheckReady);
  check->set_message(message);
  RecordEvent(*entry, EventType::kNormal, "MultiKueue", "MultiKueue", message, now);
  const bool was_admitted = IsConditionTrue(wl, kAdmitted);
  SyncAdmitted(*entry, now);
  if (IsConditionTrue(wl, kAdmitted) && !was_admitted) {
    const v1::Condition* reserved = FindCondition(wl, kQuotaReserved);
    EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Admitted",
                 absl::StrCat("Admitted by ClusterQueue ", wl.status().admission().cluster_queue(),
                              ", wait time since reservation was ",
                              WholeSeconds(now - FromProto(reserved->last_transition_time())),
                              "s"));
    RecordAdmitted(*entry, now);
  } else {
    EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Updated", message);
  }
  return wl;
}

absl::StatusOr<v1::Workload> Engine::Impl::RetryDispatch(const DispatchTarget& target,
                                                         const std::string& message, DispatchEvent event,
                                                         absl::Time now) {
  v1::AdmissionCheckState* check = nullptr;
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindDispatched(target, &check));
  v1::Workload& wl = entry->mutable_object();
  if (IsConditionTrue(wl, kEvicted) || check->state() == kCheckRetry ||
      check->state() == kCheckRejected) {
    return wl;  // already on its way out
  }
  *check->mutable_last_transition_time() = ToProtoTime(now);
  check->set_state(kCheckRetry);
  check->set_message(message);
  if (event != DispatchEvent::kNone) {
    RecordEvent(*entry, event == DispatchEvent::kWarning ? EventType::kWarning : EventType::kNormal,
                "MultiKueue", "MultiKueue", message, now);
  }
  // MultiKueue asks for no delay: once released the workload queues again at once
  // (Requeued=True/BackoffFinished), as Kueue requeues it.
  v1::RequeueState* rs = wl.mutable_status()->mutable_requeue_state();
  rs->set_count(rs->count() + 1);
  *rs->mutable_requeue_at() = ToProtoTime(now);
  Evict(*entry, kReasonAdmissionCheck,
        absl::StrCat("Evicted due to AdmissionCheck in Retry state: \"", check->name(), "\" (",
                     message, ")"),
        now);
  return wl;
}

absl::Status Engine::Impl::SetWorkerConnection(const std::string& cluster, bool connected,
                                               const std::string& message, absl::Time now) {
  auto it = multikueue_clusters_.find(cluster);
  if (it == multikueue_clusters_.end()) return NotFound("MultiKueueCluster", cluster, "name");
  v1::MultiKueueClusterStatus* status =
      it->second.mutable_multi_kueue_cluster()->mutable_status();
  bool changed = SetObjectCondition(status->mutable_conditions(), kActive, connected,
                                    connected ? "Active" : "ClientConnectionFailed",
                                    connected ? "Connected" : message, now);
  if (connected && status->has_disconnected_since()) {
    status->clear_disconnected_since();
    changed = true;
  } else if (!connected && !status->has_disconnected_since()) {
    *status->mutable_disconnected_since() = ToProtoTime(now);  // the first loss is kept
    changed = true;
  }
  if (!changed) return absl::OkStatus();
  EmitObject(v1::OBJECT_KIND_MULTIKUEUE_CLUSTER, cluster, &it->second, v1::WatchEvent::MODIFIED,
             "Applied");
  RefreshMultiKueueChecks(now);
  return absl::OkStatus();
}

absl::StatusOr<v1::UpdateRemoteJobResponse> Engine::Impl::UpdateRemoteJob(
    const v1::UpdateRemoteJobRequest& request, absl::Time now) {
  (void)now;
  Violations violations;
  if (request.has_manifest()) CheckRemoteJobDocument(&violations, "manifest", request.manifest());
  if (request.has_status()) CheckRemoteJobDocument(&violations, "status", request.status());
  if (request.has_adopt()) {
    const v1::OwnerReference& o = request.adopt();
    if (o.api_version().empty()) violations.push_back({"adopt.apiVersion", "Required value"});
    if (o.kind().empty()) violations.push_back({"adopt.kind", "Required value"});
    if (o.name().empty()) violations.push_back({"adopt.name", "Required value"});
    if (o.uid().empty()) violations.push_back({"adopt.uid", "Required value"});
  }
  if (!violations.empty()) return InvalidArgument(violations);
  const std::string key = absl::StrCat(request.namespace_(), "/", request.name());
  ADMITD_ASSIGN_OR_RETURN(WorkloadEntry * entry, FindGuarded(key, request.uid()));
  v1::Workload& wl = entry->mutable_object();
  bool changed = false;
  if (request.has_adopt()) {
    const v1::OwnerReference* owner = nullptr;
    for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
      if (o.controller()) owner = &o;
    }
    if (owner != nullptr && owner->uid() != request.adopt().uid()) {
      return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "WORKLOAD_OWNED",
                             absl::StrCat("workload \"", key, "\" is owned by ", owner->kind(),
                                          " \"", owner->name(), "\" (uid ", owner->uid(), ")"));
    }
    if (owner == nullptr) {
      IndexChain(*entry, /*add=*/false);  // a slice's chain follows its owner
      v1::OwnerReference* o = wl.mutable_metadata()->add_owner_references();
      *o = request.adopt();
      o->set_controller(true);
      (*wl.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = o->uid();
      IndexChain(*entry, /*add=*/true);
      changed = true;
    }
  }
  v1::RemoteJob* job = wl.mutable_remote_job();
  if (request.has_manifest() && job->manifest() != request.manifest()) {
    job->set_manifest(request.manifest());
    changed = true;
  }
  if (request.has_status() && job->status() != request.status()) {
    job->set_status(request.status());
    changed = true;
  }
  if (changed) EmitWorkload(*entry, v1::WatchEvent::MODIFIED, "Updated", "");
  v1::UpdateRemoteJobResponse response;
  *response.mutable_workload() = wl;
  return response;
}

// ---- Engine's public face --------------------------------------------------------------

absl::StatusOr<v1::Workload> Engine::NominateClusters(const DispatchTarget& target,
                                                      const std::vector<std::string>& clusters,
                                                      absl::Time now) {
  return impl_->NominateClusters(target, clusters, now);
}

absl::StatusOr<v1::Workload> Engine::RecordWorkerAdmission(const DispatchTarget& target,
                                                           const std::string& cluster,
                                                           absl::Time now) {
  return impl_->RecordWorkerAdmission(target, cluster, now);
}

absl::StatusOr<v1::Workload> Engine::RetryDispatch(const DispatchTarget& target,
                                                   const std::string& message, DispatchEvent event,
                                                   absl::Time now) {
  return impl_->RetryDispatch(target, message, event, now);
}

absl::StatusOr<v1::UpdateRemoteJobResponse> Engine::UpdateRemoteJob(
    const v1::UpdateRemoteJobRequest& request, absl::Time now) {
  return impl_->UpdateRemoteJob(request, now);
}

absl::Status Engine::SetWorkerConnection(const std::string& cluster, bool connected,
                                         const std::string& message, absl::Time now) {
  return impl_->SetWorkerConnection(cluster, connected, message, now);
}

}  // namespace admitd::engine
