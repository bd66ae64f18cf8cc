// Engine: plain pods and pod groups (KEP-976) and fast quota release (KEP-6143). Pods reported by
// a cluster shim are stored; the pods of one single pod or one group make up one Workload, which
// this file creates, finishes, gives reclaimable pods and releases after an eviction, with the
// rules of server/pods/. Which Workload a pod belongs to is engine_pod_index.cc; the directives to
// the shim are in engine_pod_directives.cc.
#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/pods/elastic_pods.h"
#include "server/pods/multikueue_pods.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/validation.h"
#include "server/engine/engine_pods_internal.h"
#include "server/pods/pod_group.h"

namespace admitd::engine {

namespace {

using pod_workloads::ClusterOf;
using pod_workloads::IsGroupWorkload;
using pod_workloads::IsOwnedByPod;
using pod_workloads::IsPodWorkload;
using pod_workloads::NameConflict;
using pod_workloads::OwnsWorkload;
using pod_workloads::PodKey;
using pod_workloads::TakeOtherClusters;

constexpr char kPodTimerPrefix[] = "pod:";

// What is wrong with a reported pod that Kubernetes itself would never hold, or "".
std::string InvalidPod(const v1::PodObservation& pod, size_t max_object_bytes) {
  Violations v;
  if (!IsDnsLabel(pod.namespace_())) v.push_back({"namespace", "must be an RFC 1123 label"});
  if (!IsDnsSubdomain(pod.name())) v.push_back({"name", "must be an RFC 1123 subdomain"});
  if (pod.uid().size() > 128) v.push_back({"uid", "must be no more than 128 characters"});
  if (!v1::PodPhase_IsValid(pod.phase())) {
    v.push_back({"phase", absl::StrCat("Unsupported value: ", pod.phase())});
  }
  CheckLabels(&v, "labels", pod.labels());
  CheckAnnotations(&v, "annotations", pod.annotations());
  CheckMessage(&v, "status_message", pod.status_message());
  CheckObjectSize(&v, "pod", "pod", pod.ByteSizeLong(), max_object_bytes);
  if (v.empty()) return "";
  std::vector<std::string> parts;
  for (const FieldViolation& f : v) parts.push_back(absl::StrCat(f.field, ": ", f.description));
  return absl::StrCat("invalid pod: ", absl::StrJoin(parts, "; "));
}

// Why each named pod of a declared group stays gated.
std::vector<std::string> UndeclaredMessages(const std::vector<v1::PodObservation>& pods,
                                            const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const v1::PodObservation& p : pods) {
    if (std::find(names.begin(), names.end(), p.name()) != names.end()) {
      out.push_back(pods::UndeclaredRoleMessage(p));
    }
  }
  return out;
}

// The library's events as the shim receives them: on a pod of `pods`, or on the Workload.
void AppendEvents(const std::vector<pods::PodEvent>& from, const std::string& workload_key,
                  const std::vector<v1::PodObservation>& pods, std::vector<v1::PodEvent>* out) {
  if (out == nullptr) return;
  const size_t slash = workload_key.find('/');
  for (const pods::PodEvent& e : from) {
    v1::PodEvent event;
    event.set_type(e.type == "Warning" ? v1::PodEvent::WARNING : v1::PodEvent::NORMAL);
    event.set_reason(e.reason);
    event.set_message(e.message);
    event.set_namespace_(workload_key.substr(0, slash));
    event.set_workload_name(workload_key.substr(slash + 1));
    if (!e.on_workload) {
      for (const v1::PodObservation& p : pods) {
        if (p.name() == e.object) *event.mutable_pod() = pods::RefOf(p);
      }
    }
    out->push_back(std::move(event));
  }
}

}  // namespace

absl::StatusOr<v1::ReportPodsResponse> Engine::Impl::ReportPods(
    const v1::ReportPodsRequest& request, absl::Time now) {
  {
    Violations violations;
    CheckClusterName(&violations, "cluster", request.cluster());
    for (int i = 0; i < request.deleted_size(); ++i) {
      const v1::PodDeletion& d = request.deleted(i);
      if (!IsDnsLabel(d.namespace_()) || !IsDnsSubdomain(d.name())) {
        violations.push_back({absl::StrCat("deleted[", i, "]"),
                              "Invalid value: a deletion names a pod by namespace and name"});
      }
    }
    if (!violations.empty()) return InvalidArgument(violations);
  }
  const pods::PodOptions options = PodOptionsNow();
  v1::ReportPodsResponse response;
  std::set<std::string> touched;  // workload keys to reconcile
  std::set<std::string> seen;     // pod keys in this report (for full snapshots)
  auto error = [&](const std::string& ns, const std::string& name, const std::string& message) {
    v1::PodReportError* e = response.add_errors();
    e->set_namespace_(ns);
    e->set_name(name);
    e->set_message(message);
  };
  auto remove = [&](const std::string& key) {
    auto it = pods_.find(key);
    if (it == pods_.end()) return;
    IndexPod(key, /*add=*/false);
    if (!it->second.workload.empty()) touched.insert(it->second.workload);
    EmitPod(key, it->second.obs, /*deleted=*/true);
    pods_.erase(it);
  };
  for (const v1::PodObservation& reported : request.pods()) {
    v1::PodObservation pod = reported;
    if (pod.cluster().empty()) pod.set_cluster(request.cluster());
    if (pod.cluster() != request.cluster()) {
      error(pod.namespace_(), pod.name(),
            absl::StrCat("the pod is of cluster \"", pod.cluster(), "\", not the reporting \"",
                         request.cluster(), "\""));
      continue;
    }
    if (pod.namespace_().empty() || pod.name().empty() || pod.uid().empty()) {
      error(pod.namespace_(), pod.name(), "a pod needs a namespace, a name and a uid");
      continue;
    }
    if (std::string problem = InvalidPod(pod, options_.max_object_bytes); !problem.empty()) {
      error(pod.namespace_(), pod.name(), problem);
      continue;
    }
    const std::string key = PodKey(pod.cluster(), pod.namespace_(), pod.name());
    seen.insert(key);
    auto it = pods_.find(key);
    const bool replaces = it != pods_.end() && it->second.obs.uid() != pod.uid();
    if (it != pods_.end() && !replaces &&
        it->second.obs.resource_version() >= pod.resource_version()) {
      response.set_stale(response.stale() + 1);
      continue;
    }
    // What Kueue's pod webhook refuses never becomes a pod, so it is not recorded either.
    const bool default_queue_exists =
        local_queues_.count(absl::StrCat(pod.namespace_(), "/", pods::kDefaultLocalQueueName)) != 0;
    std::vector<std::string> invalid =
        it == pods_.end() || replaces
            ? pods::ValidatePodCreate(pod, options)
            : pods::ValidatePodUpdate(it->second.obs, pod, options, default_queue_exists);
    if (!invalid.empty()) {
      for (const std::string& m : invalid) error(pod.namespace_(), pod.name(), m);
      continue;
    }
    if (replaces) remove(key);
    const bool was_gated = pods_.count(key) != 0 && pods::IsGated(pods_.at(key).obs);
    const bool is_new = pods_.count(key) == 0;
    PodEntry& entry = pods_[key];
    if (!entry.workload.empty()) IndexPod(key, /*add=*/false);
    entry.obs = std::move(pod);
    entry.workload = PodWorkloadKey(entry.obs);
    IndexPod(key, /*add=*/true);
    if (!entry.workload.empty()) touched.insert(entry.workload);
    const bool gated = pods::IsGated(entry.obs);
    EmitPod(key, entry.obs, /*deleted=*/false,
            is_new && gated ? "PodGated" : was_gated && !gated ? "PodUngated" : "PodReported");
    response.set_accepted(response.accepted() + 1);
  }
  for (const v1::PodDeletion& d : request.deleted()) {
    const std::string key = PodKey(request.cluster(), d.namespace_(), d.name());
    seen.insert(key);
    auto it = pods_.find(key);
    if (it == pods_.end()) continue;
    if (!d.uid().empty() && d.uid() != it->second.obs.uid()) continue;
    remove(key);
    response.set_accepted(response.accepted() + 1);
  }
  if (request.full_snapshot()) {
    // Cluster names hold no '/', so the prefix selects one cluster; the check on the pod's own
    // cluster keeps that true of pods stored before names were validated.
    const std::string prefix = request.cluster() + "/";
    std::vector<std::string> gone;
    for (auto it = pods_.lower_bound(prefix);
         it != pods_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (it->second.obs.cluster() == request.cluster() && !seen.count(it->first)) {
        gone.push_back(it->first);
      }
    }
    for (const std::string& key : gone) remove(key);
  }
  std::vector<v1::PodEvent> events;
  for (const std::string& workload_key : touched) {
    dirty_pod_workloads_.insert(workload_key);
    for (const std::string& message : ReconcilePodWorkload(workload_key, now, &events)) {
      const size_t slash = workload_key.find('/');
      error(workload_key.substr(0, slash), workload_key.substr(slash + 1), message);
    }
  }
  for (v1::PodEvent& e : events) *response.add_events() = std::move(e);
  response.set_revision(revision_);
  return response;
}

std::vector<std::string> Engine::Impl::ReconcilePodWorkload(const std::string& workload_key,
                                                            absl::Time now,
                                                            std::vector<v1::PodEvent>* events) {
  std::vector<std::string> errors;
  const pods::PodOptions options = PodOptionsNow();
  std::vector<v1::PodObservation> pods = PodsOf(workload_key);
  // An elastic Job's pods belong to its job: the server only ungates them.
  if (!pods.empty() && pods::IsElasticJobPod(pods.front())) return errors;
  auto wl_it = workloads_.find(workload_key);
  if (pods.empty()) {
    // Every pod is gone: the Workload goes with them (Kueue's owner references do the same).
    if (wl_it != workloads_.end() && IsPodWorkload(wl_it->second.object())) {
      DeleteEntry(wl_it->second, now, "Deleted", "every pod of the workload is gone");
    }
    return errors;
  }
  const bool is_group = !pods::GroupName(pods.front(), options).empty();
  const std::string cluster = pods.front().cluster();
  if (wl_it == workloads_.end() && !is_group && pods.size() == 1) {
    // The Workload this pod was found by is gone: it goes on with the one it owns now, or with a
    // new one of its generated name.
    const v1::PodObservation& pod = pods.front();
    if (std::string now_key = PodWorkloadKey(pod); now_key != workload_key && !now_key.empty()) {
      LinkPod(PodKey(pod.cluster(), pod.namespace_(), pod.name()), now_key);
      dirty_pod_workloads_.insert(now_key);
      return ReconcilePodWorkload(now_key, now, events);
    }
  }
  // A worker's pods made from a manager's copy never make a Workload of their own: without their
  // copy they go (engine_pod_directives.cc).
  const bool from_copy = pods::IsMultiKueueWorkerPod(pods.front());
  if (wl_it == workloads_.end() && from_copy) return errors;
  if (wl_it == workloads_.end()) {
    // Same-named pods of several clusters: the first cluster's make the Workload.
    TakeOtherClusters(&pods, cluster);
    std::optional<v1::Workload> wl;
    if (is_group) {
      pods::GroupComposition comp = pods::ComposeGroup(pods, options);
      AppendEvents(comp.events, workload_key, pods, events);
      if (comp.outcome == pods::GroupComposition::Outcome::kInvalid) errors.push_back(comp.error);
      for (const std::string& m : UndeclaredMessages(pods, comp.undeclared)) errors.push_back(m);
      if (comp.outcome == pods::GroupComposition::Outcome::kCreate) wl = std::move(comp.workload);
    } else {
      const v1::PodObservation& pod = pods.front();
      if (!pods::IsTerminated(pod)) {
        std::string queue = pods::QueueName(pod);
        if (queue.empty()) queue = pods::kDefaultLocalQueueName;
        wl = pods::BuildSinglePodWorkload(pod, queue);
      }
    }
    if (!wl.has_value()) return errors;
    (*wl->mutable_metadata()->mutable_labels())[kPodClusterLabel] = cluster;
    absl::StatusOr<v1::SubmitResponse> created = Submit(*std::move(wl), now);
    if (!created.ok()) errors.push_back(std::string(created.status().message()));
    return errors;
  }
  WorkloadEntry& entry = wl_it->second;
  if (from_copy) TakeCopyForPods(entry, pods, is_group);
  v1::Workload& wl = entry.mutable_object();
  if (!OwnsWorkload(wl, is_group)) {
    AppendEvents(NameConflict(pods, wl, is_group, now, options).events, workload_key, pods, events);
    errors.push_back(absl::StrCat("workload \"", workload_key, "\" exists and is not a pod ",
                                  IsPodWorkload(wl) ? "group " : "",
                                  "workload: the pods stay gated"));
    return errors;
  }
  const std::string owner = ClusterOf(wl);
  std::vector<v1::PodObservation> others = TakeOtherClusters(&pods, owner);
  if (pods.empty()) {
    // The Workload's own pods are all gone; a same-named group of another cluster makes its own.
    DeleteEntry(entry, now, "Deleted", "every pod of the workload is gone");
    return ReconcilePodWorkload(workload_key, now, events);
  }
  if (!others.empty()) {
    AppendEvents(NameConflict(others, wl, is_group, now, options).events, workload_key, others,
                 events);
    errors.push_back(absl::StrCat("workload \"", workload_key, "\" is made of the pods of cluster \"",
                                  owner, "\": the pods of cluster \"", others.front().cluster(),
                                  "\" stay gated"));
  }
  ReportPodsToManager(entry, pods);
  if (IsConditionTrue(wl, kFinished)) return errors;
  // Finished: every pod succeeded (groups), or the single pod ended.
  std::vector<v1::PodObservation> kept = pods;
  if (is_group) {
    absl::StatusOr<pods::GroupMatch> match =
        pods::MatchGroupWorkload(pods, wl, /*workload_finished=*/false, now, options);
    if (!match.ok()) {
      errors.push_back(std::string(match.status().message()));
      return errors;
    }
    for (const std::string& m : UndeclaredMessages(pods, match->undeclared)) errors.push_back(m);
    AppendEvents(match->events, workload_key, pods, events);
    if (!match->owners_to_add.empty()) {
      // Kueue's EnsureWorkloadOwnedByAllMembers: every member owns the Workload.
      for (const v1::PodObservation& p : pods) {
        if (std::find(match->owners_to_add.begin(), match->owners_to_add.end(), p.name()) ==
            match->owners_to_add.end()) {
          continue;
        }
        v1::OwnerReference* ref = wl.mutable_metadata()->add_owner_references();
        ref->set_api_version("v1");
        ref->set_kind("Pod");
        ref->set_name(p.name());
        ref->set_uid(p.uid());
      }
      const std::string added =
          absl::StrCat("Added ", match->owners_to_add.size(), " owner reference(s)");
      EmitWorkload(entry, v1::WatchEvent::MODIFIED, "OwnerReferencesAdded", added);
      RecordEvent(entry, EventType::kNormal, "OwnerReferencesAdded", "OwnerReferencesAdded",
                  added, now);
    }
    kept.clear();
    for (const v1::PodObservation& p : pods) {
      if (std::find(match->kept.begin(), match->kept.end(), p.name()) != match->kept.end()) {
        kept.push_back(p);
      }
    }
    // §14.7: whether the group waits for replacements of failed pods.
    const pods::ConditionUpdate waiting =
        pods::WaitingForReplacementPodsCondition(wl, match->absent_pods, now);
    if (waiting.updated && waiting.condition.has_value()) {
      const v1::Condition& c = *waiting.condition;
      if (SetCondition(&wl, c.type(), c.status() == "True", c.reason(), c.message(), now)) {
        EmitWorkload(entry, v1::WatchEvent::MODIFIED, c.type(), c.message());
      }
    }
  }
  const pods::FinishedState finished =
      is_group ? pods::GroupFinished(kept, options, &wl) : pods::SinglePodFinished(pods.front());
  if (finished.finished) {
    v1::ReleaseQuotaRequest release;
    release.set_namespace_(wl.metadata().namespace_());
    release.set_name(wl.metadata().name());
    release.mutable_finished()->set_succeeded(finished.success);
    release.mutable_finished()->set_message(finished.message);
    if (absl::StatusOr<v1::ReleaseQuotaResponse> r = ReleaseQuota(release, now); !r.ok()) {
      errors.push_back(std::string(r.status().message()));
    } else if (events != nullptr) {
      // Kueue records FinishedWorkload on each pod it reconciles once the Workload is finished.
      for (const v1::PodObservation& p : kept) {
        v1::PodEvent& e = events->emplace_back();
        e.set_type(v1::PodEvent::NORMAL);
        e.set_reason("FinishedWorkload");
        e.set_message(absl::StrCat("Workload '", workload_key, "' is declared finished"));
        *e.mutable_pod() = pods::RefOf(p);
        e.set_namespace_(wl.metadata().namespace_());
        e.set_workload_name(wl.metadata().name());
      }
    }
    return errors;
  }
  const bool reserved = HoldsReservation(wl);
  if (!reserved) {
    if (std::string refused = FollowPodQueueName(entry, pods, is_group, now); !refused.empty()) {
      errors.push_back(std::move(refused));
    }
  }
  // Succeeded pods of a running group give their quota back (§14.8).
  if (is_group && reserved && !pods::IsServing(pods.front())) {
    absl::StatusOr<std::vector<v1::ReclaimablePod>> reclaimable =
        pods::ReclaimablePods(kept, options, &wl);
    if (reclaimable.ok()) {
      bool differs = false;
      for (const v1::ReclaimablePod& r : *reclaimable) {
        int32_t current = 0;
        for (const v1::ReclaimablePod& c : wl.status().reclaimable_pods()) {
          if (c.name() == r.name()) current = c.count();
        }
        differs = differs || r.count() > current;
      }
      if (differs) {
        v1::ReleaseQuotaRequest release;
        release.set_namespace_(wl.metadata().namespace_());
        release.set_name(wl.metadata().name());
        for (const v1::ReclaimablePod& r : *reclaimable) {
          *release.mutable_reclaimable()->add_pods() = r;
        }
        if (absl::StatusOr<v1::ReleaseQuotaResponse> r = ReleaseQuota(release, now); !r.ok()) {
          errors.push_back(std::string(r.status().message()));
        }
      }
    }
  }
  // waitForPodsReady (§21.3): a single pod is ready when its Ready condition is; a group when
  // all of its pods are known and every one is Ready (a succeeded pod is not).
  if (options_.wait_for_pods_ready.enabled) {
    auto ready = [](const v1::PodObservation& p) {
      return std::any_of(p.conditions().begin(), p.conditions().end(), [](const v1::Condition& c) {
        return c.type() == "Ready" && c.status() == "True";
      });
    };
    int64_t total = 0;
    for (const v1::PodSet& ps : wl.spec().pod_sets()) total += ps.count();
    const bool all_ready = is_group ? static_cast<int64_t>(pods.size()) >= total &&
                                          std::all_of(pods.begin(), pods.end(), ready)
                                    : ready(pods.front());
    if (SyncPodsReady(entry, all_ready, now)) EmitPodsReady(entry);
  }
  // After an eviction the quota goes back once the pods are no longer active (§9, §14.9, and
  // with fast release, §15: as soon as every pod has a deletion timestamp).
  if (reserved && IsConditionTrue(wl, kEvicted)) {
    if (!pods::WorkloadIsActive(is_group, pods, now, options.fast_quota_release)) {
      v1::ReleaseQuotaRequest release;
      release.set_namespace_(wl.metadata().namespace_());
      release.set_name(wl.metadata().name());
      release.mutable_stopped();
      if (absl::StatusOr<v1::ReleaseQuotaResponse> r = ReleaseQuota(release, now); !r.ok()) {
        errors.push_back(std::string(r.status().message()));
      }
    } else if (!options.fast_quota_release) {
      // A Running pod being deleted stops counting when its grace period has passed: look
      // again then.
      // Only deadlines still ahead: a pod past its deadline already stopped counting (a timer
      // for it would fire at once, find the same pods, and arm itself again forever); what
      // keeps the Workload active then is a pod whose change a report will bring.
      for (const v1::PodObservation& p : pods) {
        if (p.has_deletion_timestamp() && p.has_deletion_grace_period_seconds()) {
          const absl::Time deadline = FromProto(p.deletion_timestamp()) +
                                      absl::Seconds(p.deletion_grace_period_seconds()) +
                                      absl::Nanoseconds(1);
          if (deadline > now) ArmTimer(deadline, absl::StrCat(kPodTimerPrefix, workload_key));
        }
      }
    }
  }
  return errors;
}

std::string Engine::Impl::FollowPodQueueName(WorkloadEntry& entry,
                                             const std::vector<v1::PodObservation>& pods,
                                             bool is_group, absl::Time now) {
  v1::Workload& wl = entry.mutable_object();
  const v1::PodObservation& ref = pods.front();
  // Kueue handles an evicted Workload (step 6) before a suspended job's queue (step 7), and a
  // serving group keeps its queue (the pod integration's CustomQueueNameChange). Kueue's
  // Workload validation refuses the change while quota is reserved: the caller checks that.
  if (IsConditionTrue(wl, kAdmitted) || IsConditionTrue(wl, kEvicted)) return "";
  if (is_group && pods::IsServing(ref)) return "";
  // The job is suspended while a pod is gated or terminated.
  if (std::none_of(pods.begin(), pods.end(), [](const v1::PodObservation& p) {
        return pods::IsGated(p) || pods::IsTerminated(p);
      })) {
    return "";
  }
  std::string queue = pods::QueueName(ref);
  const std::string& ns = wl.metadata().namespace_();
  if (queue.empty() &&
      local_queues_.count(absl::StrCat(ns, "/", pods::kDefaultLocalQueueName)) != 0) {
    queue = pods::kDefaultLocalQueueName;  // what the webhook would have labelled it with
  }
  if (queue.empty() || queue == wl.spec().queue_name()) return "";
  if (local_queues_.count(absl::StrCat(ns, "/", queue)) == 0) {
    // As Submit refuses a LocalQueue that does not exist, the Workload stays in its queue until
    // the new one exists (the next report after that moves it).
    return absl::StrCat("LocalQueue ", queue, " doesn't exist: workload \"", ns, "/",
                        wl.metadata().name(), "\" stays in LocalQueue ", wl.spec().queue_name());
  }
  const std::string message =
      absl::StrCat("The queue name changed from ", wl.spec().queue_name(), " to ", queue);
  Dequeue(entry);
  wl.mutable_spec()->set_queue_name(queue);
  wl.mutable_metadata()->set_generation(wl.metadata().generation() + 1);
  RefreshResourceRequests(entry);
  Enqueue(entry, now, /*emit_reason_change=*/false);
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "QueueNameChanged", message);
  return "";
}

bool Engine::Impl::TickPodTimer(const std::string& timer_key, absl::Time now) {
  if (timer_key.rfind(kPodTimerPrefix, 0) != 0) return false;
  ReconcilePodWorkload(timer_key.substr(sizeof(kPodTimerPrefix) - 1), now);
  return true;
}

void Engine::Impl::ReconcileEvictedPodWorkload(WorkloadEntry& entry, absl::Time now) {
  if (!IsPodWorkload(entry.object())) return;
  if (in_cycle_) {
    evicted_pod_workloads_.insert(entry.key());
    return;
  }
  ReconcilePodWorkload(entry.key(), now);
}

}  // namespace admitd::engine
