// Engine: admitd's admission engine, a deterministic state machine over Kueue's objects.
//
// It owns every ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass,
// AdmissionCheck and Workload in memory, validates writes with Kueue's rules, keeps quota usage
// incrementally and runs Kueue's scheduling cycle. It has no threads, no clock and no I/O:
// every mutating call takes `now`, and every change it makes is recorded as a Change (with the
// revision it got) that the caller persists and publishes. The same calls with the same `now` values produce the same
// changes, byte for byte.
//
// Thread safety: none. One thread (the sequencer) owns an Engine; const methods may be called
// concurrently only while no mutating call runs.
//
//   Engine engine;
//   engine.Apply(apply_flavor, now);
//   engine.Apply(apply_cluster_queue, now);
//   engine.Apply(apply_local_queue, now);
//   engine.Submit(submit, now);
//   engine.RunCycle(now);                       // admits what fits
//   for (const Change& c : engine.TakeChanges()) store.Write(c);
#ifndef ADMITD_SERVER_ENGINE_ENGINE_H_
#define ADMITD_SERVER_ENGINE_ENGINE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/pod_service.pb.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/queue_service.pb.h"
#include "server/engine/event_record.h"
#include "common/kueue_keys.h"

namespace admitd::engine {

class WorkloadDecoder;  // workload_decoder.h

// One object written or deleted, and the watch event it produces.
struct Change {
  uint64_t revision = 0;  // every Change gets its own, strictly increasing
  v1::ObjectKind kind = v1::OBJECT_KIND_UNSPECIFIED;
  std::string key;  // "name" for cluster-scoped kinds, "namespace/name" otherwise
  v1::WatchEvent::Type type = v1::WatchEvent::TYPE_UNSPECIFIED;  // ADDED, MODIFIED, DELETED
  // What happened: for workloads Submitted, QuotaReserved, Admitted, Pending, Evicted,
  // Requeued, Finished, Updated, Deleted; for queue objects Applied or Deleted.
  std::string reason;
  std::string message;  // empty for an Event: its note (EventRecord::note) is its message
  // The object after the change (for a workload: as of TakeChanges, see there). Exactly one of
  // these four is set.
  std::shared_ptr<const v1::Workload> workload;
  std::shared_ptr<const v1::QueueObject> queue_object;
  std::shared_ptr<const v1::PodObservation> pod;  // kind OBJECT_KIND_POD: stored, not watched
  // Kind OBJECT_KIND_EVENT: a Kubernetes Event Kueue records on a Workload (or an audit event);
  // logged and watched, not stored (its key is unique to it). EncodeEvent and ToEvent
  // (event_record.h) give its wire form and message.
  std::shared_ptr<const EventRecord> event;
  // The encoding of `workload` (SerializeAsString), when the engine made one: it does for a
  // workload it keeps encoded from now on (a finished one), so a store need not encode it again.
  std::shared_ptr<const std::string> encoded;
};

// Fair sharing's preemption strategies (§19.6), as Kueue's fairSharing.preemptionStrategies
// names them.
enum class FairPreemptionStrategy { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

struct EngineOptions {
  int max_pod_sets = 18;  // Kueue's MaxPodSets
  // Record Kueue's Events on Workloads (QuotaReserved, Admitted, the pending reasons, evictions,
  // preemptions...) as Changes of kind OBJECT_KIND_EVENT.
  bool record_events = true;
  // Feature gate ElasticJobsViaWorkloadSlices: Resize of an elastic workload scales it in place
  // or through a new workload slice (KEP-77).
  bool elastic_jobs = true;
  // Finished slices kept per job; older ones are deleted.
  int slice_history_limit = 5;
  // Plain pods (KEP-976): roles per pod group (Kueue's 18; fewer when configured),
  // KEP-6143's fast quota release, and the namespaces whose pods are never managed.
  int pod_group_max_roles = 18;
  bool pod_fast_quota_release = false;
  std::vector<std::string> pod_unmanaged_namespaces = {"kube-system", "admitd-system"};
  // Requeuing after an admission-check retry (§9.4): the n-th requeue waits
  // min(base * 2^(n-1), max); more than `backoff_limit_count` requeues deactivate the workload
  // (RequeuingLimitExceeded). A negative limit means unlimited.
  absl::Duration backoff_base = absl::Seconds(60);
  absl::Duration backoff_max = absl::Seconds(3600);
  int backoff_limit_count = -1;
  // waitForPodsReady (§21): the PodsReady condition, eviction of an admitted workload whose
  // pods are not ready within `timeout` (requeued with the backoff above, deactivated past its
  // limit), of one not ready again within `recovery_timeout` (0: never), and with
  // `block_admission`, no admission while a workload holding quota has not its pods ready.
  // `requeue_from_eviction` (Kueue's requeuingStrategy.timestamp Eviction; else Creation):
  // whether an evicted workload queues from its eviction.
  struct WaitForPodsReady {
    bool enabled = false;
    absl::Duration timeout = absl::Minutes(5);
    bool block_admission = false;
    absl::Duration recovery_timeout = absl::ZeroDuration();
    bool requeue_from_eviction = true;
  };
  WaitForPodsReady wait_for_pods_ready;
  // Admission fair sharing (§20): each LocalQueue's admitted usage, decayed with the half-life
  // (0: no memory) and sampled every `usage_sampling_interval`, orders the workloads of the
  // ClusterQueues whose admissionScope.admissionMode is UsageBasedAdmissionFairSharing, lower
  // usage first; `resource_weights` weigh resources in that usage (unlisted: 1).
  struct AdmissionFairSharing {
    bool enabled = false;
    absl::Duration usage_half_life = absl::ZeroDuration();
    absl::Duration usage_sampling_interval = absl::Minutes(5);
    std::map<std::string, double> resource_weights;
  };
  AdmissionFairSharing admission_fair_sharing;
  // Fair sharing (§19): admission order across a cohort by the tournament of dominant resource
  // shares, preemption across it by share with these strategies tried in order, and
  // status.fairSharing written. Off: the classical order and preemption of §6.4 and §7.
  bool fair_sharing = false;
  std::vector<FairPreemptionStrategy> fair_preemption_strategies = {
      FairPreemptionStrategy::kLessThanOrEqualToFinalShare,
      FairPreemptionStrategy::kLessThanInitialShare};
  // The largest object (a Workload, a queue object, a reported pod) accepted, encoded; etcd's
  // default request limit. 0: no limit.
  size_t max_object_bytes = 1536 * 1024;
  // A List page ends before it would pass this many bytes of objects (it always holds one), so
  // a client with gRPC's default 4 MiB receive limit can read every page. 0: no limit.
  size_t max_list_page_bytes = 3 * 1024 * 1024;
};

// A ClusterQueue's or Cohort's weighted share (§19.4), as Kueue's weighted_share gauges report it.
struct NodeShare {
  bool cohort = false;
  std::string name;
  std::string parent_cohort;  // a ClusterQueue's spec.cohortName
  double precise = 0;         // +infinity for a weight-0 node that borrows
};

// A LocalQueue's usage as admission fair sharing counts it (§20.2), for Kueue's
// local_queue_admission_fair_sharing_usage gauge.
struct LocalQueueUsage {
  std::string namespace_;
  std::string name;
  std::string cluster_queue;
  double usage = 0;  // +infinity for weight 0
};

// A ClusterQueue's pending workloads as Kueue's pending_workloads metric counts them.
struct PendingCount {
  std::string cluster_queue;
  int active = 0;        // in the heap, waiting for an attempt
  int inadmissible = 0;  // tried and set aside, or waiting out a requeue backoff
};

// What one scheduling cycle did.
struct CycleStats {
  int heads = 0;     // workloads popped and tried
  int admitted = 0;  // got a quota reservation
  // Per ClusterQueue, the entries with preemption targets that were skipped because another
  // entry of the cycle needed the same quota (§6.5 steps 6 and 7); only queues with some.
  std::map<std::string, int> preemption_skips;
  // Per assignment computed again for overlapping targets (§6.5 step 1), its ClusterQueue and
  // Kueue's result: "new_targets", "deferred_fit" or "skipped".
  std::vector<std::pair<std::string, const char*>> recomputations;
  // True when another cycle right now could change something (a head is still waiting in a
  // queue that was not blocked). The sequencer keeps cycling while this holds.
  bool more = false;
};

// The controller name of MultiKueue AdmissionChecks, which admitd's dispatcher decides.
// The event a MultiKueue Retry records on the workload (reason MultiKueue), if any.
enum class DispatchEvent { kNone, kNormal, kWarning };

// The workload a dispatcher step is about, and its MultiKueue check.
struct DispatchTarget {
  std::string ns;
  std::string name;
  std::string uid;  // the step applies to this workload only (FAILED_PRECONDITION otherwise)
  std::string check;
};

// Queue objects: the kind's name as Kueue spells it ("ClusterQueue"; "object" for none), the
// kind a QueueObject holds, and its metadata.
const char* KindName(v1::ObjectKind kind);
v1::ObjectKind KindOf(const v1::QueueObject& o);
const v1::ObjectMeta& Meta(const v1::QueueObject& o);

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  // Moving lets a server rebuild its engine in place (restore into a new one, then assign).
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  // ---- Recovery ----------------------------------------------------------------------------
  // Loads stored objects in any order, without validation or Changes, then FinishRestore
  // rebuilds queues and usage and resumes the revision counter at `revision`.
  absl::Status Restore(const v1::QueueObject& object);
  absl::Status Restore(const v1::Workload& workload);
  absl::Status Restore(v1::Workload&& workload);  // takes the workload over instead of copying it
  // The stored workload `key` (namespace/name) in its wire form, as the store holds it: kept
  // encoded, decoded by FinishRestore (DATA_LOSS there when it does not parse or names another
  // workload) and again when first read after it. A tenth of the decoded form's memory for the
  // workloads nothing reads between two restarts.
  absl::Status RestoreEncoded(absl::string_view key, absl::string_view encoded);
  absl::Status Restore(const v1::PodObservation& pod);
  // Stored workloads restored encoded are decoded by `decoder` when given (workload_decoder.h:
  // a caller may decode ahead of the engine on a thread of its own), else one by one here.
  absl::Status FinishRestore(uint64_t revision, WorkloadDecoder* decoder = nullptr);

  // ---- Queue-side objects (QueueService) -----------------------------------------------------
  // Creates or updates one object. INVALID_ARGUMENT (with field violations) for a bad object,
  // ABORTED when expected_resource_version moved, ALREADY_EXISTS for create_only on an existing
  // object. Nothing changes on error.
  absl::StatusOr<v1::ApplyResponse> Apply(const v1::ApplyRequest& request, absl::Time now);
  absl::StatusOr<v1::QueueObject> Get(const v1::GetObjectRequest& request) const;
  absl::StatusOr<v1::ListObjectsResponse> List(const v1::ListObjectsRequest& request) const;
  absl::Status Delete(const v1::DeleteObjectRequest& request, absl::Time now);

  // Records admitted workloads from a running Kueue without scheduling them (see the proto).
  absl::StatusOr<v1::ImportResponse> Import(const v1::ImportRequest& request, absl::Time now);

  // Appends `event` (an audit record of an admin change, made by the caller) to the event log
  // with this batch's changes, its time set to `now`. Recorded even when events on workloads
  // are off. It is about a Kueue object: its regarding apiVersion is kEventRegardingApiVersion.
  void RecordAudit(v1::Event event, absl::Time now);

  // ---- Workloads (AdmissionService) ---------------------------------------------------------
  // Queues a workload (see the proto for semantics). Unknown LocalQueue: NOT_FOUND naming
  // spec.queueName; invalid fields: INVALID_ARGUMENT. Nothing changes on error.
  absl::StatusOr<v1::SubmitResponse> Submit(const v1::SubmitRequest& request, absl::Time now);
  // What Submit and ReleaseQuota put in their answer's workload: a copy of it, or only its
  // namespace, name and resource_version, for a caller that answers with WorkloadSnapshot after
  // the batch's scheduling cycles (and so copies nothing).
  enum class Answer { kCopy, kReference };
  // The same, but takes the request's workload instead of copying it; `request` is left empty.
  absl::StatusOr<v1::SubmitResponse> Submit(v1::SubmitRequest&& request, absl::Time now,
                                            Answer answer = Answer::kCopy);
  absl::StatusOr<v1::ReleaseQuotaResponse> ReleaseQuota(const v1::ReleaseQuotaRequest& request,
                                                        absl::Time now,
                                                        Answer answer = Answer::kCopy);
  // Deletes a workload; for an elastic workload, every workload of its job.
  absl::Status DeleteWorkload(const v1::DeleteWorkloadRequest& request, absl::Time now);
  // Records a shim's pod observations and reconciles the Workloads they make up (see
  // pod_service.proto). INVALID_ARGUMENT without a cluster; per-pod problems are answered in
  // `errors` and change nothing for that pod.
  absl::StatusOr<v1::ReportPodsResponse> ReportPods(const v1::ReportPodsRequest& request,
                                                    absl::Time now);
  // The directives outstanding for the pods of `request`'s Workloads, added to `response`.
  void AddDirectivesFor(const v1::ReportPodsRequest& request, absl::Time now,
                        v1::ReportPodsResponse* response) const;
  v1::ListDirectivesResponse ListDirectives(const v1::ListDirectivesRequest& request,
                                            absl::Time now) const;
  // Every outstanding directive of the pod Workloads changed since the last call (or whose pods
  // were reported), for the watch stream; call once per batch, after TakeChanges.
  std::vector<v1::PodDirective> TakeDirectiveUpdates(absl::Time now);
  // Changes the pod counts of a job's workload (see the proto). INVALID_ARGUMENT for bad
  // counts or pod sets that are not the workload's, NOT_FOUND for an unknown job or workload.
  absl::StatusOr<v1::ResizeResponse> Resize(const v1::ResizeRequest& request, absl::Time now);
  absl::StatusOr<v1::Workload> GetWorkload(const v1::GetWorkloadRequest& request) const;
  // The workload itself without a copy, or null; valid until the engine next changes.
  const v1::Workload* FindWorkload(const std::string& ns, const std::string& name) const;
  // The workloads a Resize of `request` would act on (the job's, or the named one's chain);
  // empty when there is none.
  std::vector<const v1::Workload*> ResizeTargets(const v1::ResizeRequest& request);
  // The workload as it stands, as an immutable object the caller may keep and read from any
  // thread: the engine's own object, shared, not copied (the engine copies it before its next
  // write), so it is the snapshot the last TakeChanges handed out if it has not changed since. A
  // workload that call saw deleted is returned as it was deleted. Null for an unknown workload.
  std::shared_ptr<const v1::Workload> WorkloadSnapshot(const std::string& ns,
                                                       const std::string& name) const;
  absl::StatusOr<v1::ListWorkloadsResponse> ListWorkloads(
      const v1::ListWorkloadsRequest& request) const;
  // Where a workload stands (AdmitResponse without waiting). With dry_run, also what the next
  // scheduling attempt would do, computed on a copy: nothing changes.
  absl::StatusOr<v1::AdmitResponse> Describe(const v1::AdmitRequest& request,
                                             absl::Time now) const;
  // Sets spec.active (§9.5): deactivating evicts a reserved workload (`Deactivated`) or takes a
  // pending one out of its queue; reactivating requeues it (`Reactivated`). Idempotent;
  // NOT_FOUND for an unknown workload.
  // waitForPodsReady: an integration reports whether its job's pods are ready; the Workload's
  // PodsReady condition follows as Kueue's job reconciler writes it. FAILED_PRECONDITION while
  // waitForPodsReady is off, and for workloads made of reported pods (derived from the pods).
  absl::StatusOr<v1::ReportPodsReadyResponse> ReportPodsReady(
      const v1::ReportPodsReadyRequest& request, absl::Time now);
  absl::StatusOr<v1::SetActiveResponse> SetActive(const v1::SetActiveRequest& request,
                                                  absl::Time now);
  // An admission check controller's verdict (§10). INVALID_ARGUMENT for an unknown state,
  // NOT_FOUND for an unknown workload, FAILED_PRECONDITION when the workload holds no
  // reservation or has no such check.
  absl::StatusOr<v1::SetAdmissionCheckStateResponse> SetAdmissionCheckState(
      const v1::SetAdmissionCheckStateRequest& request, absl::Time now);

  // ---- MultiKueue: the dispatcher's writes on the manager (multikueue.md §5–§7) -------------
  // Each re-checks that the workload still holds a reservation with the check; otherwise
  // FAILED_PRECONDITION and nothing changes.
  // The workers that get a copy (status.nominatedClusterNames); nomination_time moves to `now`
  // when the list grows. Only while the check is Pending, without clusterName nor eviction.
  absl::StatusOr<v1::Workload> NominateClusters(const DispatchTarget& target,
                                                const std::vector<std::string>& clusters,
                                                absl::Time now);
  // The copy in `cluster` was admitted first: the check Ready with `The workload was admitted
  // on "<cluster>"`, status.clusterName set, nominations cleared, Normal event MultiKueue;
  // Admitted when every check is Ready. Idempotent.
  absl::StatusOr<v1::Workload> RecordWorkerAdmission(const DispatchTarget& target,
                                                     const std::string& cluster, absl::Time now);
  // The check Retry with `message` (and, with `event`, a MultiKueue event of that type): the workload
  // is evicted (AdmissionCheck) and, once released, queues again at once. A no-op when it is
  // already evicted or the check already failed.
  absl::StatusOr<v1::Workload> RetryDispatch(const DispatchTarget& target,
                                             const std::string& message, DispatchEvent event,
                                             absl::Time now);
  // A worker's connection: its MultiKueueCluster's Active condition (True/Active/Connected, or
  // False/ClientConnectionFailed/`message`) and disconnected_since (the first loss is kept
  // until a connection succeeds); the MultiKueue checks follow. NOT_FOUND for an unknown one.
  absl::Status SetWorkerConnection(const std::string& cluster, bool connected,
                                   const std::string& message, absl::Time now);
  // Workload.remote_job and the adoption of a prebuilt copy (AdmissionService.UpdateRemoteJob).
  // INVALID_ARGUMENT for a document that is not a JSON object or an incomplete owner;
  // FAILED_PRECONDITION when another job owns the workload. Works on finished workloads too.
  absl::StatusOr<v1::UpdateRemoteJobResponse> UpdateRemoteJob(
      const v1::UpdateRemoteJobRequest& request, absl::Time now);

  // ---- Time ---------------------------------------------------------------------------------
  // The earliest time at which Tick may have something to do (a backoff ending, a maximum
  // execution time passing); InfiniteFuture when nothing is timed. It may be early, never late.
  absl::Time NextDeadline() const;
  // Does the timed work that is due at `now`: requeues workloads whose backoff ended and
  // deactivates workloads past their maximum execution time.
  void Tick(absl::Time now);

  // ---- Scheduling ---------------------------------------------------------------------------
  // One Kueue scheduling cycle: one head per ClusterQueue with work, tried in Kueue's order.
  CycleStats RunCycle(absl::Time now);
  // True when some ClusterQueue has a pending head that a cycle would try.
  bool HasPendingHeads() const;
  // Pending workloads per ClusterQueue, split into active and inadmissible.
  std::vector<PendingCount> PendingCounts() const;
  // Every LocalQueue's admission fair sharing usage while it is on; empty when off.
  std::vector<LocalQueueUsage> AdmissionFairSharingUsages() const;
  // Every ClusterQueue's and cohort's weighted share while fair sharing is on; empty when off.
  std::vector<NodeShare> WeightedShares() const;
  // How many objects of each kind the engine holds (Kueue's kind names; "Pod" for reported
  // pods), for the metrics.
  std::vector<std::pair<std::string, int64_t>> ObjectCounts() const;

  // ---- Changes ------------------------------------------------------------------------------
  // The revision of the last Change made (or restored).
  uint64_t revision() const;
  // Every Change since the last call, in revision order. The Changes of one workload within a
  // call share one snapshot: the workload as it stands at this call (as it last stood, when the
  // call's changes deleted it), with the resource_version of its latest Change.
  // With `keep_snapshots`, the engine also keeps the snapshots of the workloads the call saw
  // deleted, for WorkloadSnapshot, until ForgetSnapshots or the next TakeChanges; without, it
  // keeps none. (A live workload's snapshot is the workload itself, shared.)
  // A workload these Changes show finished is held encoded from here on, like a restored one
  // (reads decode it; Get, List and snapshots leave it encoded): its Changes carry the encoding.
  std::vector<Change> TakeChanges(bool keep_snapshots = false);
  // Drops the snapshots TakeChanges kept (the Changes and whoever was lent one keep theirs).
  void ForgetSnapshots();
  // There is no rollback: a caller whose commit of these Changes fails must stop.

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The coarse state of a workload, from its conditions.
v1::WorkloadState StateOf(const v1::Workload& workload);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_ENGINE_H_
