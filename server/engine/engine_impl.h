// Engine::Impl: the engine's state and the helpers its .cc files share (engine.cc for objects
// and workloads, engine_cycle.cc for scheduling and explanations). Internal to server/engine.
#ifndef ADMITD_SERVER_ENGINE_ENGINE_IMPL_H_
#define ADMITD_SERVER_ENGINE_ENGINE_IMPL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "server/engine/cluster_queue.h"
#include "common/workload_names.h"
#include "server/engine/engine.h"
#include "server/engine/flavor_assigner.h"
#include "server/engine/quota_tree.h"
#include "server/engine/resources.h"
#include "server/engine/workload_entry.h"
#include "server/pods/pod_group.h"
#include "common/kueue_keys.h"

namespace admitd::engine {

// On a Workload made of reported pods: the cluster the pods run in.
// The finalizer Kueue puts on every Workload it makes, until the Workload finishes.

// One reported pod and the Workload (namespace/name) it belongs to ("" when not managed).
struct PodEntry {
  v1::PodObservation obs;
  std::string workload;
};

// The workload opts in to elastic scaling (annotation kueue.x-k8s.io/elastic-job: "true").
bool IsElastic(const v1::Workload& wl);

// A workload chosen for preemption and the Preempted reason it gets (§7.3).
struct Target {
  WorkloadEntry* entry;
  std::string reason;
};

class Engine::Impl {
 public:
  explicit Impl(EngineOptions options) : options_(options) {}

  // ---- engine.cc ----
  absl::StatusOr<v1::ApplyResponse> Apply(const v1::ApplyRequest& request, absl::Time now);
  absl::StatusOr<v1::QueueObject> Get(const v1::GetObjectRequest& request) const;
  absl::StatusOr<v1::ListObjectsResponse> List(const v1::ListObjectsRequest& request) const;
  absl::Status Delete(const v1::DeleteObjectRequest& request, absl::Time now);
  absl::StatusOr<v1::SubmitResponse> Submit(v1::Workload wl, absl::Time now,
                                            Engine::Answer answer = Engine::Answer::kCopy);
  absl::StatusOr<v1::ReleaseQuotaResponse> ReleaseQuota(
      const v1::ReleaseQuotaRequest& request, absl::Time now,
      Engine::Answer answer = Engine::Answer::kCopy);
  absl::Status DeleteWorkload(const v1::DeleteWorkloadRequest& request, absl::Time now);
  absl::StatusOr<v1::Workload> GetWorkload(const v1::GetWorkloadRequest& request) const;
  const v1::Workload* PeekWorkload(const std::string& ns, const std::string& name) const;
  std::shared_ptr<const v1::Workload> WorkloadSnapshot(const std::string& ns,
                                                       const std::string& name) const;
  absl::StatusOr<v1::ListWorkloadsResponse> ListWorkloads(
      const v1::ListWorkloadsRequest& request) const;
  absl::StatusOr<v1::ImportResponse> Import(const v1::ImportRequest& request, absl::Time now);
  absl::StatusOr<v1::ResizeResponse> Resize(const v1::ResizeRequest& request, absl::Time now);
  // ---- engine_pods.cc ----
  absl::StatusOr<v1::ReportPodsResponse> ReportPods(const v1::ReportPodsRequest& request,
                                                    absl::Time now);
  void AddDirectivesFor(const v1::ReportPodsRequest& request, absl::Time now,
                        v1::ReportPodsResponse* response) const;
  v1::ListDirectivesResponse ListDirectives(const v1::ListDirectivesRequest& request,
                                            absl::Time now) const;
  std::vector<v1::PodDirective> TakeDirectiveUpdates(absl::Time now);
  // A timer armed for a pod workload (key "pod:<ns/name>"): reconciles it. False for others.
  bool TickPodTimer(const std::string& timer_key, absl::Time now);
  absl::Status Restore(const v1::QueueObject& object);
  absl::Status Restore(v1::Workload&& workload);
  absl::Status RestoreEncoded(absl::string_view key, absl::string_view encoded);
  absl::Status Restore(const v1::PodObservation& pod);
  absl::Status FinishRestore(uint64_t revision, WorkloadDecoder* decoder);

  // ---- engine_cycle.cc ----
  CycleStats RunCycle(absl::Time now);
  absl::StatusOr<v1::AdmitResponse> Describe(const v1::AdmitRequest& request, absl::Time now) const;
  // Where a pending workload waits in its ClusterQueue; nullopt when it is not in one.
  std::optional<v1::PendingPosition> PositionOf(const WorkloadEntry& entry) const;
  std::vector<std::pair<std::string, int64_t>> ObjectCounts() const;
  std::vector<PendingCount> PendingCounts() const;
  std::vector<NodeShare> WeightedShares() const;

  // ---- engine_lifecycle.cc ----
  absl::StatusOr<v1::SetActiveResponse> SetActive(const v1::SetActiveRequest& request,
                                                  absl::Time now);
  absl::StatusOr<v1::SetAdmissionCheckStateResponse> SetAdmissionCheckState(
      const v1::SetAdmissionCheckStateRequest& request, absl::Time now);
  absl::Time NextDeadline() const;
  void Tick(absl::Time now);

  bool HasPendingHeads() const { return !cqs_with_heads_.empty(); }
  uint64_t revision() const { return revision_; }
  std::vector<Change> TakeChanges(bool keep_snapshots);
  void ForgetSnapshots() { deleted_snapshots_.clear(); }

  // ---- engine_pods_ready.cc (waitForPodsReady, §21) ----
  using WaitForPodsReadyOptions = EngineOptions::WaitForPodsReady;
  absl::StatusOr<v1::ReportPodsReadyResponse> ReportPodsReady(
      const v1::ReportPodsReadyRequest& request, absl::Time now);
  // The wait before the count-th requeue: base doubled per earlier requeue, capped at max.
  absl::Duration RequeueBackoff(int32_t count) const;
  // When an admitted workload's pods run out of time to get ready (again), or InfiniteFuture.
  absl::Time PodsReadyDeadline(const v1::Workload& wl) const;
  // Writes PodsReady for pods that are `ready` or not, as Kueue's job reconciler does (§21.2);
  // returns whether it changed (the caller emits the change). Nothing while disabled.
  bool SyncPodsReady(WorkloadEntry& entry, bool ready, absl::Time now);
  void EmitPodsReady(WorkloadEntry& entry);
  // Keeps not_ready_ in step with whether the workload holds quota without ready pods.
  void TrackNotReady(const WorkloadEntry& entry);
  // At a PodsReady deadline: evicts (PodsReadyTimeout) or deactivates at the requeuing limit;
  // returns whether it did.
  bool PodsReadyTimedOut(WorkloadEntry& entry, absl::Time now);

  // ---- engine_afs.cc (admission fair sharing, §20) ----
  std::vector<LocalQueueUsage> AdmissionFairSharingUsages() const;
  // Whether the ClusterQueue orders by LocalQueue usage (AFS on and its admission mode).
  bool UsesAfs(const std::string& cluster_queue) const;
  // U(LQ) of §20.2 for the LocalQueue "ns/name": weighted usage and pending penalties over its
  // weight.
  double AfsUsage(const std::string& lq_key) const;
  // The admitted usage of a workload entering (+1) or leaving (-1) its LocalQueue's count.
  void AfsAdmittedDelta(const WorkloadEntry& entry, int sign);
  // At a reservation in a UsageBased ClusterQueue: the entry penalty (§20.2).
  void AfsReserved(const WorkloadEntry& entry);
  // At Admitted=True in a UsageBased ClusterQueue: the settlement (§20.2).
  void AfsSettle(const WorkloadEntry& entry, absl::Time now);
  // Drops a workload's pending penalty (released, deleted).
  void AfsForget(const WorkloadEntry& entry);
  // The sampling of one LocalQueue (a timer "afs:<ns/name>"): decay, status, re-arm.
  void AfsSample(const std::string& lq_key, absl::Time now);
  // After a LocalQueue is applied (new, or its weight changed) or deleted.
  void AfsLocalQueueChanged(const std::string& lq_key, absl::Time now);
  // After restore: ledgers seeded from the stored status, sampling timers armed.
  void AfsRestore();
  // Runs an "afs:" timer; false for any other key.
  bool TickAfsTimer(const std::string& key, absl::Time now);
  using AdmissionFairSharingOptions = EngineOptions::AdmissionFairSharing;
  // The queued workloads of the LocalQueue take their new usage into their place in the queue.
  void AfsRekey(const std::string& lq_key);
  static std::string LocalQueueKey(const WorkloadEntry& entry) {
    return absl::StrCat(entry.object().metadata().namespace_(), "/",
                        entry.object().spec().queue_name());
  }

  // ---- engine_multikueue.cc ----
  absl::StatusOr<v1::Workload> NominateClusters(const DispatchTarget& target,
                                                const std::vector<std::string>& clusters,
                                                absl::Time now);
  absl::StatusOr<v1::Workload> RecordWorkerAdmission(const DispatchTarget& target,
                                                     const std::string& cluster, absl::Time now);
  absl::StatusOr<v1::Workload> RetryDispatch(const DispatchTarget& target,
                                             const std::string& message, DispatchEvent event,
                                             absl::Time now);
  absl::Status SetWorkerConnection(const std::string& cluster, bool connected,
                                   const std::string& message, absl::Time now);
  absl::StatusOr<v1::UpdateRemoteJobResponse> UpdateRemoteJob(
      const v1::UpdateRemoteJobRequest& request, absl::Time now);

 // ---- engine_events.cc, engine_slices.cc: for the server's access checks and audit ----
  void RecordAudit(const v1::Event& event, absl::Time now);
  std::vector<const v1::Workload*> ResizeTargets(const v1::ResizeRequest& request);

 private:
  // Records a Change for a workload (bumping its resource_version).
  void EmitWorkload(WorkloadEntry& entry, v1::WatchEvent::Type type, const std::string& reason,
                    const std::string& message);
  // Records a Change for a queue-side object (bumping its resource_version).
  void EmitObject(v1::ObjectKind kind, const std::string& key, v1::QueueObject* object,
                  v1::WatchEvent::Type type, const std::string& reason);

  // Fills entry.queue_key from the workload (§5.2), as Enqueue does; a workload holding quota
  // keeps it for the preemption search's keys (its UID, its queue-order time).
  void SetQueueKey(WorkloadEntry& entry);
  // §5.4 (BestEffortFIFO): a workload failed as NoFit or without preemption candidates; its
  // shape is set aside with every equivalent workload queued now or later, until the next
  // requeue, without an attempt.
  void SetAsideShape(ClusterQueueState& cq, WorkloadEntry& failed, const std::string& reason);
  // What a workload set aside with an equivalent one that failed (for `reason`) says, when its
  // pending condition was one the workload controller rewrites (§6.6).
  void MarkBypassed(WorkloadEntry& entry, const std::string& reason, absl::Time now);
  // Whether a pending workload is active in its ClusterQueue (false when inadmissible or not
  // queued).
  bool ActivePending(const WorkloadEntry& entry) const;

  // ---- engine_pods.cc: plain pods and pod groups (§14, §15) ----
  pods::PodOptions PodOptionsNow() const;
  // The Workload a pod belongs to: its group's, or its own for a managed single pod (the pod
  // Workload it owns, found by owner reference; else the one of its generated name).
  std::string PodWorkloadKey(const v1::PodObservation& pod) const;
  void IndexPod(const std::string& key, bool add);
  // A single pod's Workload imported after the pod was reported without one: the pod is moved
  // to it and reconciled with it.
  void AdoptReportedPod(const WorkloadEntry& entry, absl::Time now);
  // Moves stored pod `key` to the Workload `workload_key` in the index.
  void LinkPod(const std::string& key, std::string workload_key);
  // A Change for a pod: reason PodGated (first seen with the admission gate), PodUngated (the
  // gate is gone since the last report), PodReported, or PodDeleted.
  void EmitPod(const std::string& key, const v1::PodObservation& pod, bool deleted,
               const char* reason = "PodReported");
  std::vector<v1::PodObservation> PodsOf(const std::string& workload_key) const;
  void FinishRestorePods();
  // The entry of workload `key` (namespace/name), made if there is none.
  WorkloadEntry& EntryFor(const std::string& key);
  // Indexes a restored workload and puts it back in its queue or its quota (FinishRestore).
  void RestoreWorkload(WorkloadEntry& entry);
  // Creates, finishes, gives reclaimable pods to, or releases after an eviction the Workload of
  // these pods, and moves a pending one to the queue its pods name. Returns the problems to
  // report (Kueue's messages); appends the events Kueue would record to `events` when given.
  std::vector<std::string> ReconcilePodWorkload(const std::string& workload_key, absl::Time now,
                                                std::vector<v1::PodEvent>* events = nullptr);
  // ---- engine_pods_multikueue.cc: a worker's pods made from a manager's copy ----
  // The copy takes the pods a worker cluster's shim made from it: it becomes their cluster's pod
  // Workload, owned by them. False (nothing changed) when it is not a copy awaiting them.
  bool TakeCopyForPods(WorkloadEntry& entry, const std::vector<v1::PodObservation>& pods,
                       bool is_group);
  // A copy made of pods carries their status back to the manager (remote_job.status).
  void ReportPodsToManager(WorkloadEntry& entry, const std::vector<v1::PodObservation>& pods);
  // The Workload holds a MultiKueue admission check: its pods run in a worker cluster, never
  // here (Kueue's ShouldSkipLocalExecution).
  bool RunsElsewhere(const v1::Workload& wl) const;
  // jobframework's QueueNameChange for a pod Workload that holds no quota (§14.3). A new queue
  // that does not exist leaves the Workload where it is; the answer says why ("" otherwise).
  std::string FollowPodQueueName(WorkloadEntry& entry, const std::vector<v1::PodObservation>& pods,
                                 bool is_group, absl::Time now);
  // After an eviction outside a cycle; inside one the Workload waits for the cycle's end.
  void ReconcileEvictedPodWorkload(WorkloadEntry& entry, absl::Time now);
  std::vector<v1::PodDirective> PodDirectivesFor(const std::string& workload_key,
                                                 absl::Time now) const;

  // ---- engine_slices.cc: elastic workloads (§13) ----
  // Which job a workload belongs to: its owner's UID, else its slice-name annotation or name.
  std::string ChainKey(const v1::Workload& wl) const;
  void IndexChain(WorkloadEntry& entry, bool add);
  // The workloads of a chain, oldest first.
  std::vector<WorkloadEntry*> ChainOf(const std::string& chain);
  // The chain's newest slice that may run pods (pods::IsActiveSlice), nullptr when none.
  const WorkloadEntry* NewestActiveSlice(const std::string& chain) const;
  // The admitted slice `entry` replaces in `cq`, when delta accounting applies (§13.3).
  WorkloadEntry* ReplacedSlice(const WorkloadEntry& entry, const ClusterQueueState& cq);
  SliceBase SliceBaseOf(const WorkloadEntry& old) const;
  // Marks a slice Finished, giving back its quota, and trims the job's finished slices.
  void FinishSlice(WorkloadEntry& old, const std::string& reason, const std::string& message,
                   absl::Time now);
  void PruneSliceHistory(const std::string& chain, absl::Time now);
  // An elastic Job's reported pods are indexed under "<namespace>/<origin slice name>" (the
  // pods' workload-slice-name annotation); their directives are the elastic-job gate's UNGATEs
  // for the chain's active slice.
  std::string ElasticPodsKey(const v1::PodObservation& pod) const;
  std::vector<v1::PodDirective> ElasticPodDirectives(
      const std::vector<v1::PodObservation>& pods) const;
  // A slice changed: its job's reported pods get their directives published again.
  void MarkElasticPodsDirty(const v1::Workload& slice);
  // Removes a workload (quota, queues, chain index) with a DELETED Change.
  void DeleteEntry(WorkloadEntry& entry, absl::Time now, const std::string& reason,
                   const std::string& message);
  // After a slice is admitted: the slice it replaces is Finished in the same change set.
  void OnSliceAdmitted(WorkloadEntry& entry, absl::Time now);
  // An evicted slice whose quota comes back while a newer slice waits to replace it is
  // Finished (WorkloadSliceReplaced) instead of requeued. Returns whether it was.
  bool FinishIfReplacedWhileEvicted(WorkloadEntry& entry, absl::Time now);
  void UpdateCountsInPlace(WorkloadEntry& entry, const std::map<std::string, int32_t>& counts,
                           absl::Time now);
  // Re-renders status.resourceRequests of a pending workload.
  void RefreshResourceRequests(WorkloadEntry& entry);

  // Queue placement of pending workloads.
  void Enqueue(WorkloadEntry& entry, absl::Time now, bool emit_reason_change);
  void Dequeue(WorkloadEntry& entry);
  void RefreshHeads(ClusterQueueState& cq);
  // Moves the inadmissible workloads of every ClusterQueue in `cq`'s cohort tree back to their
  // heaps (quota may have freed anywhere in the tree).
  void RequeueInadmissible(ClusterQueueState& cq);
  void RequeueInadmissibleOne(ClusterQueueState& cq);
  // Re-derives the quota tree after a ClusterQueue or Cohort changed.
  void RebuildQuotaTree();
  // Recomputes whether a ClusterQueue can admit (its flavors exist, it is not stopped). With
  // `now`, a queue that just became inactive marks its pending workloads Suspended.
  void RefreshActive(ClusterQueueState& cq, std::optional<absl::Time> now = std::nullopt);
  // Adds or removes a reserved workload's usage in its ClusterQueue.
  void ChargeUsage(WorkloadEntry& entry, int sign);
  // Usage of a workload from its admission, honouring reclaimable pods (§2.4).
  FlavorResourceQuantities UsageFromAdmission(const WorkloadEntry& entry) const;
  // The same for the admission BuildAdmission makes of `assignment`, without parsing the
  // quantities it renders back.
  FlavorResourceQuantities UsageFromAssignment(const WorkloadEntry& entry,
                                               const Assignment& assignment) const;
  void Admit(WorkloadEntry& entry, ClusterQueueState& cq, const Assignment& assignment,
             absl::Time now);
  // Classical preemption (§7): the minimal set of workloads, in Kueue's candidate order, whose
  // removal lets `requests` fit; candidates must use a pair of `needed`. Empty when none does.
  // Simulates on the quota tree and leaves it as it found it.
  std::vector<Target> FindTargets(const ClusterQueueState& cq, const WorkloadEntry& preemptor,
                                  const FlavorResourceQuantities& requests,
                                  const std::set<FlavorResource>& needed);
  // Fair sharing's preemption (§19.6; preemption_fair.cc), which FindTargets runs instead of
  // the classical search while fair sharing is on: targets across the cohort by share, with the
  // configured strategies.
  std::vector<Target> FindFairTargets(const ClusterQueueState& cq, const WorkloadEntry& preemptor,
                                      const FlavorResourceQuantities& requests,
                                      const std::set<FlavorResource>& needed);
  // The preemption oracle of flavor assignment (§7.6).
  // `found`, when given, receives the targets the search chose (what FindTargets gives for
  // {fr: value}, needing fr).
  OracleAnswer SimulatePreemption(const ClusterQueueState& cq, const WorkloadEntry& preemptor,
                                  const FlavorResource& fr, int64_t value,
                                  std::vector<Target>* found = nullptr);
  // Flavor assignment for `entry` with the preemption oracle, partial admission when the full
  // counts cannot be admitted, and the preemption targets of a preempting assignment.
  // `nominated`: the flavors an assignment computed again within the cycle keeps (§6.5.1).
  Assignment AssignWithTargets(const ClusterQueueState& cq, WorkloadEntry& entry,
                               const std::map<std::string, const v1::ResourceFlavor*>& flavors,
                               std::vector<Target>* targets,
                               const NominatedFlavors* nominated = nullptr);
  // Partial admission (§12): the largest reduced counts that fit, when pod sets set minCount.
  std::optional<Assignment> PartialAssignment(
      const ClusterQueueState& cq, const WorkloadEntry& entry,
      const std::map<std::string, const v1::ResourceFlavor*>& flavors,
      const PreemptionOracle& oracle, const NominatedFlavors* nominated = nullptr);
  // Evicts the reserved workloads `keys` (a stopped queue draining).
  void Drain(const std::set<std::string>& keys, const std::string& reason,
             const std::string& message, absl::Time now);
  // After a ClusterQueue or LocalQueue changed its stop policy: released workloads that its
  // stop evicted are requeued once their queues run again.
  void RequeueRestarted(absl::Time now);
  // Marks a victim Evicted and Preempted with `reason` (§7.7); it keeps its quota until
  // ReleaseQuota(stopped).
  void Preempt(WorkloadEntry& victim, const WorkloadEntry& preemptor, const std::string& reason,
               absl::Time now);
  // ---- engine_lifecycle.cc ----
  // Evicts a reserved workload: Evicted=True, admission checks back to Pending, Admitted synced.
  // It keeps its quota until ReleaseQuota(stopped).
  // `cause` is the underlying cause: of a deactivation (the Evicted reason is then
  // Deactivated + DueTo + cause), or of a PodsReady timeout. Records the EvictedDueTo<reason> Event and counts the eviction
  // in status.schedulingStats.
  void Evict(WorkloadEntry& entry, const std::string& reason, const std::string& message,
             absl::Time now, const std::string& cause = "");
  // spec.active=false (§9.5). `cause`/`cause_message` name why Kueue would have set
  // DeactivationTarget (empty for a user's deactivation).
  void Deactivate(WorkloadEntry& entry, const std::string& cause,
                  const std::string& cause_message, absl::Time now);
  // Admitted from the quota reservation and the admission checks, as Kueue's
  // SyncAdmittedCondition: execution time accumulates when Admitted turns False, the
  // ClusterQueue's admitted count follows, a maximum execution time arms a timer. Returns
  // whether the condition changed.
  bool SyncAdmitted(WorkloadEntry& entry, absl::Time now);
  // ---- engine_multikueue.cc: MultiKueue's objects ----
  bool IsMultiKueueCheck(const std::string& check) const;
  // False for a missing check, or a MultiKueue check whose Active condition is not True.
  bool IsCheckActive(const std::string& check) const;
  // Before an Apply stores `object`: keeps the server-kept status of an AdmissionCheck or
  // MultiKueueCluster (a new cluster starts disconnected at `now`); INVALID_ARGUMENT when an
  // AdmissionCheck's controller would change.
  absl::Status PrepareMultiKueueApply(const v1::QueueObject* existing, v1::QueueObject* object,
                                      absl::Time now) const;
  // Re-derives every MultiKueue AdmissionCheck's Active condition; the ClusterQueues of a check
  // whose activity changed refresh theirs.
  void RefreshMultiKueueChecks(absl::Time now);
  // RefreshActive's causes about checks: inactive ones, several MultiKueue checks, a MultiKueue
  // check per flavor.
  void AddMultiKueueInactiveCauses(const ClusterQueueState& cq, std::vector<std::string>* reasons,
                                   std::vector<std::string>* messages) const;
  // The workload of `target` holding a reservation, with its check `target.check` in `*check`.
  absl::StatusOr<WorkloadEntry*> FindDispatched(const DispatchTarget& target,
                                                v1::AdmissionCheckState** check);
  // status.admissionChecks for the checks `cq` requires on the flavors of the admission.
  void SyncAdmissionChecks(WorkloadEntry& entry, const ClusterQueueState& cq, absl::Time now);
  // Ends a backoff that is over: requeueAt cleared and Requeued=True/BackoffFinished.
  bool FinishBackoff(WorkloadEntry& entry, absl::Time now);
  // Requeued=True/{ClusterQueue,LocalQueue}Restarted once the queue that stopped a released
  // workload runs again.
  bool RequeueIfQueueRestarted(WorkloadEntry& entry, absl::Time now);
  void ArmTimer(absl::Time at, const std::string& key) { timers_.insert({at, key}); }

  // ---- engine_events.cc: Kueue's Events on Workloads ----
  enum class EventType { kNormal, kWarning };
  // Records an Event on the workload (a Change of kind OBJECT_KIND_EVENT); `action` defaults to
  // the reason. The note is cut as Kueue cuts it.
  void RecordEvent(const WorkloadEntry& entry, EventType type, const std::string& reason,
                   const std::string& action, std::string note, absl::Time now);
  // status.schedulingStats.evictions: one more eviction for (reason, underlying cause).
  void CountEviction(WorkloadEntry& entry, const std::string& reason, const std::string& cause);
  // A scheduling attempt failed: the pending condition and, when it changed, Kueue's Warning.
  void MarkPendingAfterAttempt(WorkloadEntry& entry, const std::string& reason,
                               const std::string& message, absl::Time now);
  // Normal QuotaReserved ("Quota reserved in ClusterQueue <cq>, wait time since queued was Ns")
  // and Admitted ("Admitted by ClusterQueue <cq>, wait time since reservation was Ns").
  // `considered`: FormatConsideredFlavors of the assignment that reserved it.
  void RecordQuotaReserved(const WorkloadEntry& entry, const std::string& considered,
                           absl::Time now);
  void RecordAdmitted(const WorkloadEntry& entry, absl::Time now);

  // Sets the pending condition; a Change only when it differs.
  void MarkPending(WorkloadEntry& entry, const std::string& reason, const std::string& message,
                   absl::Time now);
  // The ClusterQueue a LocalQueue points to, or "" when the LocalQueue does not exist.
  std::string ClusterQueueOf(const std::string& ns, const std::string& local_queue) const;
  // The ClusterQueue named `name`, or null.
  ClusterQueueState* FindClusterQueue(absl::string_view name) const {
    auto it = cq_by_name_.find(name);
    return it == cq_by_name_.end() ? nullptr : it->second;
  }
  // The ResourceFlavors by name, built again only after one was applied, deleted or restored.
  const std::map<std::string, const v1::ResourceFlavor*>& FlavorMap();
  // Whether `cq` selects namespace `ns`: by its Namespace object's labels, or by the
  // kubernetes.io/metadata.name label alone when there is none.
  bool Selects(const ClusterQueueState& cq, const std::string& ns) const;
  // After namespace `ns` got `labels` in place of `old_labels`: the ClusterQueues that select it
  // now and did not before requeue their inadmissible workloads (Kueue's namespace handler).
  void OnNamespaceLabels(const google::protobuf::Map<std::string, std::string>& old_labels,
                         const google::protobuf::Map<std::string, std::string>& labels);
  std::string NewUid();
  WorkloadEntry* FindWorkload(const std::string& ns, const std::string& name);
  // The workload at `key`: NOT_FOUND when absent, FAILED_PRECONDITION when `uid` is given and
  // differs.
  absl::StatusOr<WorkloadEntry*> FindGuarded(const std::string& key, const std::string& uid);
  const WorkloadEntry* FindWorkload(const std::string& ns, const std::string& name) const;
  v1::ClusterQueue WithStatus(const ClusterQueueState& cq) const;
  v1::LocalQueue WithStatus(const v1::LocalQueue& lq) const;
  v1::Cohort WithStatus(const v1::Cohort& cohort) const;

  const EngineOptions options_;
  // Workloads holding a quota reservation whose PodsReady is not True (blockAdmission, §21.7).
  std::set<std::string> not_ready_;
  uint64_t revision_ = 0;
  uint64_t cycle_ = 0;  // scheduling cycles run so far
  std::vector<Change> changes_;
  // The workloads the last TakeChanges(keep_snapshots) saw deleted, as they went, by key.
  std::map<std::string, std::shared_ptr<const v1::Workload>> deleted_snapshots_;

  std::map<std::string, v1::QueueObject> flavors_;
  std::map<std::string, v1::QueueObject> cohorts_;
  std::map<std::string, v1::QueueObject> priority_classes_;
  std::map<std::string, v1::QueueObject> admission_checks_;
  std::map<std::string, v1::QueueObject> namespaces_;
  std::map<std::string, v1::QueueObject> multikueue_configs_;
  std::map<std::string, v1::QueueObject> multikueue_clusters_;
  std::map<std::string, v1::QueueObject> local_queues_;  // namespace/name
  // Admission fair sharing's ledger per LocalQueue (namespace/name): the decayed usage per
  // resource (CPU in cores, others in base units) as of last_update, the pending entry
  // penalties by workload, and the admitted usage now (exact, in the engine's units).
  struct AfsLedger {
    std::map<std::string, double> consumed;
    absl::Time last_update = absl::InfinitePast();
    std::map<std::string, std::map<std::string, double>> penalties;
    std::map<std::string, Amount> admitted;
  };
  std::map<std::string, AfsLedger> afs_;
  // How many of them hold their workloads (stopPolicy Hold or HoldAndDrain): while none does,
  // a cycle does not look each head's LocalQueue up.
  int stopped_local_queues_ = 0;
  // FlavorMap's answer while flavor_map_valid_.
  std::map<std::string, const v1::ResourceFlavor*> flavor_map_;
  bool flavor_map_valid_ = false;
  std::map<std::string, ClusterQueueState> cluster_queues_;
  // The same by name, hashed: cluster_queues_ stays ordered for listings and walks, while every
  // workload operation looks its queue up by name (FindClusterQueue).
  absl::flat_hash_map<std::string, ClusterQueueState*> cq_by_name_;
  std::map<std::string, WorkloadEntry> workloads_;  // namespace/name
  // Workloads whose ClusterQueue does not exist (yet), by ClusterQueue name.
  std::map<std::string, std::set<std::string>> orphans_;
  // Workloads whose LocalQueue does not exist (yet), by LocalQueue (namespace/name).
  std::map<std::string, std::set<std::string>> lq_orphans_;
  QuotaTree quota_tree_;
  // The ClusterQueues of each tree, by root: RequeueInadmissible's walk, kept until the tree's
  // shape changes (a ClusterQueue or Cohort applied or deleted).
  std::map<std::string, std::vector<ClusterQueueState*>> cohort_members_;
  // Reported pods by "cluster/namespace/name", and pod keys by the Workload they make up.
  std::map<std::string, PodEntry> pods_;
  std::map<std::string, std::set<std::string>> pods_of_workload_;
  // Pod workloads changed since the last TakeDirectiveUpdates: their directives are published.
  std::set<std::string> dirty_pod_workloads_;
  // Pod workloads evicted during the running cycle, reconciled when it ends.
  std::set<std::string> evicted_pod_workloads_;
  bool in_cycle_ = false;
  // Workloads by job (ChainKey): the slices of an elastic job, or a job's one workload (every
  // workload is in one). Hashed, and a chain of one holds its entry inline: every Submit adds
  // one. Entries of workloads_ do not move; a workload leaves its chain before it is erased.
  absl::flat_hash_map<std::string, absl::InlinedVector<WorkloadEntry*, 1>> chains_;
  // ClusterQueues with a non-empty heap that may admit: the cycle's heads come from these.
  std::set<std::string> cqs_with_heads_;
  // Timed work by due time and workload key: backoffs ending and maximum execution times. An
  // entry may be stale (the workload moved on); Tick re-checks each one it pops.
  std::set<std::pair<absl::Time, std::string>> timers_;
};

// The admission `assignment` gives `entry` in `cq`: flavors, total usage and count per pod set.
v1::Admission BuildAdmission(const WorkloadEntry& entry, const ClusterQueueState& cq,
                             const Assignment& assignment);

// A duration in whole seconds as Kueue prints it ("%.0f"); 0 for a negative one.
int64_t WholeSeconds(absl::Duration d);

// True when an admission check is in state Retry or Rejected.
bool HasFailedChecks(const v1::Workload& wl);
// True for stopPolicy None (or unset).
bool IsRunning(const std::string& stop_policy);
// True for kueue.x-k8s.io/multikueue.
bool IsMultiKueueController(const std::string& controller);
// True when the ClusterQueue's admission checks strategy names `check`.
bool UsesAdmissionCheck(const ClusterQueueState& cq, const std::string& check);

// True while a workload's reservation counts against its ClusterQueue (§2.4).
bool HoldsReservation(const v1::Workload& wl);
// The workload in an answer, as `answer` asks: a copy, or its name and resource version.
void SetAnswer(const v1::Workload& wl, Engine::Answer answer, v1::Workload* out);

// Helpers over queue objects shared by the engine's files.
v1::ObjectMeta* MutableMeta(v1::QueueObject* o);
// "name" for cluster-scoped kinds, "namespace/name" for LocalQueues and Workloads.
std::string ObjectKey(v1::ObjectKind kind, const std::string& ns, const std::string& name);

// Timestamps in and out of protos.
absl::Time FromProto(const google::protobuf::Timestamp& ts);
google::protobuf::Timestamp ToProtoTime(absl::Time t);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_ENGINE_IMPL_H_
