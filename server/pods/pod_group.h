// Plain pods and pod groups (Kueue's KEP-976, pkg/controller/jobs/pod) as pure functions over
// pod observations: which pods are managed, validation, Workload composition for a single pod
// or a group, matching a group to its existing Workload (excess and replaced pods), when a group
// is finished, the WaitingForReplacementPods condition, reclaimable pods, the IsActive() rule
// with and without KEP-6143's fast quota release, and the directives a shim applies.
//
// Everything is deterministic: where Kueue iterates the informer cache's list, these functions
// order pods by name (then uid), and the first pod in that order is the group's "reference" pod
// (Kueue's p.pod) whose queue name and total count the others are compared with.
#ifndef ADMITD_SERVER_PODS_POD_GROUP_H_
#define ADMITD_SERVER_PODS_POD_GROUP_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/pods.pb.h"
#include "common/kueue_keys.h"

namespace admitd::pods {

inline constexpr char kTerminationTargetCondition[] = "TerminationTarget";
inline constexpr char kDefaultLocalQueueName[] = "default";
inline constexpr char kDefaultPodSetName[] = "main";
inline constexpr char kWaitingForReplacementPods[] = "WaitingForReplacementPods";

// Role limits: Kueue's jobframework.MaxPodSets (18) by default and at most; fewer when configured.
inline constexpr int kDefaultMaxRoles = 18;
inline constexpr int kMaxRolesLimit = 18;

struct PodOptions {
  // Distinct role hashes allowed in one group, 1..kMaxRolesLimit.
  int max_roles = kDefaultMaxRoles;
  // Kueue's WorkloadIdentifierAnnotations gate: the group-name annotation wins over the label.
  bool workload_identifier_annotations = false;
  // KEP-6143 (PodIntegrationFastQuotaRelease / FastQuotaReleaseInPodIntegration).
  bool fast_quota_release = false;
};

// InvalidArgument when max_roles is outside 1..kMaxRolesLimit.
absl::Status ValidateOptions(const PodOptions& options);

// An event Kueue records: type Normal|Warning, reason, message, and the object it is recorded on
// (a pod name, or with on_workload the Workload name).
struct PodEvent {
  std::string type;
  std::string reason;
  std::string message;
  std::string object;
  bool on_workload = false;
  bool operator==(const PodEvent& o) const {
    return type == o.type && reason == o.reason && message == o.message && object == o.object &&
           on_workload == o.on_workload;
  }
};

// ---- Pod predicates ---------------------------------------------------------------------------

// The group name (label, or annotation first with workload_identifier_annotations); "" if none.
std::string GroupName(const v1::PodObservation& pod, const PodOptions& options);
// The kueue.x-k8s.io/queue-name label ("" if unset).
std::string QueueName(const v1::PodObservation& pod);
// The pod still carries the kueue.x-k8s.io/admission scheduling gate.
bool IsGated(const v1::PodObservation& pod);
// Phase Succeeded or Failed.
bool IsTerminated(const v1::PodObservation& pod);
// Kueue's isPodRunnableOrSucceeded: not Failed, and not (being deleted with no node assigned).
bool IsRunnableOrSucceeded(const v1::PodObservation& pod);
// Annotation kueue.x-k8s.io/retriable-in-group: "false".
bool IsUnretriable(const v1::PodObservation& pod);
// Holds the kueue.x-k8s.io/managed finalizer.
bool HasManagedFinalizer(const v1::PodObservation& pod);
// kueue.x-k8s.io/pod-group-fast-admission: "true" / kueue.x-k8s.io/pod-group-serving: "true".
bool IsFastAdmission(const v1::PodObservation& pod);
bool IsServing(const v1::PodObservation& pod);

// Go's strconv.Atoi, with its error text ("strconv.Atoi: parsing \"x\": invalid syntax").
absl::StatusOr<int64_t> GoAtoi(absl::string_view s);

// Kueue's groupTotalCount() for one pod, with its error messages: no group name, no total
// annotation, not an integer (the Atoi error), or < 1.
absl::StatusOr<int64_t> GroupTotalCount(const v1::PodObservation& pod, const PodOptions& options);

// ---- Declared pod sets (KEP-976 "driver generates workers") -----------------------------------
//
// A group whose pod carries kueue.x-k8s.io/pod-group-sets (the driver) declares every pod set up
// front, as a Workload's spec.podSets in YAML or JSON: [{"name": "driver", "count": 1},
// {"name": "workers", "count": 10, "template": {"spec": {...}}}]. The one set without a template
// takes the driver's own spec. The Workload is made from the declaration as soon as the driver
// is runnable, without waiting for the other pods, which the driver creates once it runs. A pod's
// set is its kueue.x-k8s.io/pod-group-role label; without one, the driver's is the set without a
// template, and any other pod's is the first set whose template has the pod's role hash.

struct DeclaredSets {
  std::vector<v1::PodSet> sets;  // annotation order; the template-less set has the pod's spec
  std::string own_set;           // the set the declaring pod belongs to
  std::string untemplated_set;   // the set declared without a template ("" if none)
  int64_t Total() const;
};

// The pod carries kueue.x-k8s.io/pod-group-sets.
bool DeclaresSets(const v1::PodObservation& pod);

// Parses and checks `pod`'s kueue.x-k8s.io/pod-group-sets annotation: a non-empty list of at most
// max_roles sets with unique DNS-label names and counts >= 1, no minCount, at most one set without
// a template, the pod's own set found (role label, else the template-less set), and a
// pod-group-total-count annotation, when present, equal to the sum of the counts. The error
// message names the offending part.
absl::StatusOr<DeclaredSets> ParseDeclaredSets(const v1::PodObservation& pod, const PodOptions& options);

// Which pod set (role) a group pod belongs to: its role hash for Kueue's groups, or the declared
// set for a group made from kueue.x-k8s.io/pod-group-sets.
class RoleResolver {
 public:
  // Roles are role hashes.
  RoleResolver() = default;
  // Roles are the names of these declared sets; `untemplated` is the set the declaring pod takes
  // its spec into, reached only through a role label or the annotation, never by role hash.
  RoleResolver(const std::vector<v1::PodSet>& sets, const std::string& untemplated);
  // For a declaration ParseDeclaredSets made.
  static RoleResolver ForDeclaration(const DeclaredSets& declared);
  // For a Workload: declared when it was made from kueue.x-k8s.io/pod-group-sets (it keeps the
  // annotation), by hash otherwise.
  static RoleResolver ForWorkload(const v1::Workload& workload);

  bool declared() const { return declared_; }
  // The pod's role; "" when the group is declared and the pod belongs to none of its sets.
  // Errors only when a role hash cannot be computed.
  absl::StatusOr<std::string> RoleOf(const v1::PodObservation& pod) const;

 private:
  bool declared_ = false;
  std::string untemplated_;
  std::vector<std::string> names_;
  std::vector<std::string> template_hashes_;  // "" for a set without a usable template
};

// The message for a pod that belongs to none of the declared sets.
std::string UndeclaredRoleMessage(const v1::PodObservation& pod);

// ---- Management and validation (the webhook) --------------------------------------------------

struct ManagementInput {
  bool namespace_selected = true;         // managedJobsNamespaceSelector matches
  bool owner_managed_by_kueue = false;    // an ancestor is a Kueue-managed job
  bool default_local_queue_exists = false;
  bool manage_jobs_without_queue_name = false;
};

struct ManagementDecision {
  bool managed = false;
  // The queue the pod is queued in: its label, or "default" when that LocalQueue exists.
  std::string queue_name;
};

// The mutating webhook's decision for a new pod (KEP-976 / §14.1).
ManagementDecision DecideManagement(const v1::PodObservation& pod, const ManagementInput& input);

// The validating webhook on create: field errors formatted as Kubernetes prints them, e.g.
// "metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: both the ... should be set".
std::vector<std::string> ValidatePodCreate(const v1::PodObservation& pod, const PodOptions& options);
// On update: the queue-name label is immutable once the pod is neither gated nor terminated
// ("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"<new>\": field is immutable")
// and cannot be removed while the namespace has a `default` LocalQueue
// (`default_local_queue_exists`); then the create checks, the one-way retriable-in-group:
// "false", and the immutable group name.
std::vector<std::string> ValidatePodUpdate(const v1::PodObservation& old_pod,
                                           const v1::PodObservation& new_pod,
                                           const PodOptions& options,
                                           bool default_local_queue_exists);

// ---- Single pods ------------------------------------------------------------------------------

// "pod-<name>-<first 5 hex of sha1("Pod\n\n<name>\n<uid>")>", prefix truncated to 247 chars.
std::string SinglePodWorkloadName(absl::string_view pod_name, absl::string_view pod_uid);

// The Workload for a single pod: that name, the pod as controller owner, queue `queue_name`,
// one pod set "main" with count 1 and the pod's spec.
v1::Workload BuildSinglePodWorkload(const v1::PodObservation& pod, absl::string_view queue_name);

// ---- Groups -----------------------------------------------------------------------------------

// Kueue's sortActivePods order (kept first): finalizer holders, then ungated, then older.
void SortActivePods(std::vector<v1::PodObservation>* pods);
// Kueue's sortInactivePods order (kept first): finalizer holders, then most recently active
// (last active = min(ContainersReady=False/Failed transition, deletion time), `now` when
// neither), then older.
void SortInactivePods(std::vector<v1::PodObservation>* pods, absl::Time now);

struct GroupComposition {
  enum class Outcome {
    kCreate,   // `workload` is ready to be created
    kWaiting,  // fewer runnable pods than the total: no Workload yet (retried on changes)
    kInvalid,  // the group's metadata is inconsistent: no Workload, `error` says why
  };
  Outcome outcome = Outcome::kWaiting;
  std::string error;
  // Inactive pods whose finalizer is removed (always done, whatever the outcome).
  std::vector<std::string> finalize;
  // Excess active pods (youngest first in Kueue's sort order's tail): finalized, and deleted
  // unless already being deleted.
  std::vector<std::string> delete_excess;
  std::vector<PodEvent> events;
  std::optional<v1::Workload> workload;
  // Declared groups: pods of no declared set (left gated; UndeclaredRoleMessage says why).
  std::vector<std::string> undeclared;
};

// Composes the Workload for a group from all pods observed with its name (one namespace), as
// Kueue's ConstructComposableWorkload does before a Workload exists.
GroupComposition ComposeGroup(std::vector<v1::PodObservation> pods, const PodOptions& options);

struct GroupMatch {
  // The Workload is another controller's (no is-group-workload annotation): pods stay gated,
  // `finalize` holds the inactive pods, the event is WorkloadNameConflict.
  bool name_conflict = false;
  // False: the existing Workload does not describe the group any more and must be deleted.
  bool equivalent = false;
  // Σ over roles of max(0, count - active pods of the role) (fast admission: 1 per empty role).
  int absent_pods = 0;
  std::vector<std::string> kept;            // pods that stay members, role by role
  std::vector<std::string> delete_excess;   // active pods beyond their role's count
  std::vector<std::string> finalize;        // inactive pods considered replaced
  std::vector<std::string> owners_to_add;   // kept pods not yet owners of the Workload
  std::vector<PodEvent> events;
  // Declared groups: pods of no declared set (left gated; inactive ones are also in `finalize`).
  std::vector<std::string> undeclared;
};

// Kueue's FindMatchingWorkloads for a group with an existing Workload. For a declared group the
// roles are the Workload's sets, a role waits for replacements only for its failed pods (pods not
// created yet are not missing), and the Workload stays equivalent while the declaration does. `workload_finished` is
// whether the Workload has Finished=True; `now` orders inactive pods without timestamps.
// Errors only when a role hash cannot be computed.
absl::StatusOr<GroupMatch> MatchGroupWorkload(std::vector<v1::PodObservation> pods,
                                              const v1::Workload& workload,
                                              bool workload_finished, absl::Time now,
                                              const PodOptions& options);

// The pod sets a group's pods describe now (one per role, sorted by role; fast admission: the
// first runnable pod's role with count = total).
absl::StatusOr<std::vector<v1::PodSet>> GroupPodSets(std::vector<v1::PodObservation> pods,
                                                     const PodOptions& options);

struct FinishedState {
  bool finished = false;
  bool success = true;
  std::string reason;   // Succeeded | Failed when finished
  std::string message;
};

// A single pod: finished when Succeeded/Failed; message = the pod's status message.
FinishedState SinglePodFinished(const v1::PodObservation& pod);
// A group (pass the kept pods): Finished when succeeded == total, or when no pod is still
// running and a pod is retriable-in-group: "false"; reason Succeeded, message
// "Pods succeeded: <s>/<total>.". Serving groups never finish. With a `workload` made from
// declared sets, the total is the sum of its counts, and the group is also finished once a pod
// declaring the sets has Succeeded and no pod is still running (the workers it created are done).
FinishedState GroupFinished(std::vector<v1::PodObservation> pods, const PodOptions& options,
                            const v1::Workload* workload = nullptr);

struct ConditionUpdate {
  std::optional<v1::Condition> condition;  // the condition to have (nullopt: none)
  bool updated = false;                    // it differs from what the Workload has
};

// Kueue's waitingForReplacementPodsCondition for a group Workload given the absent pod count.
ConditionUpdate WaitingForReplacementPodsCondition(const v1::Workload& workload, int absent_pods,
                                                   absl::Time now);

// Per role, the number of Succeeded pods (non-serving groups only; roles in first-seen order).
// With a declared `workload`, roles are its sets.
absl::StatusOr<std::vector<v1::ReclaimablePod>> ReclaimablePods(
    std::vector<v1::PodObservation> pods, const PodOptions& options,
    const v1::Workload* workload = nullptr);

// ---- Quota release ----------------------------------------------------------------------------

// Whether one pod keeps its group's Workload active: Running, and (fast release) no deletion
// timestamp, or (legacy) not past deletion timestamp + grace period.
bool PodKeepsGroupActive(const v1::PodObservation& pod, absl::Time now, bool fast_quota_release);
// Kueue's IsActive() for a group: some pod keeps it active.
bool GroupIsActive(const std::vector<v1::PodObservation>& pods, absl::Time now,
                   bool fast_quota_release);
// Kueue's IsActive() for a pod Workload: always false for a single pod (its quota is released as
// soon as it is stopped), GroupIsActive for a group.
bool WorkloadIsActive(bool is_group, const std::vector<v1::PodObservation>& pods, absl::Time now,
                      bool fast_quota_release);

// ---- Directives -------------------------------------------------------------------------------

v1::PodRef RefOf(const v1::PodObservation& pod);

struct UngateInfo {
  std::string pod_set;                              // the pod set the pod belongs to
  std::map<std::string, std::string> node_selector;  // the assigned flavor's node labels
  std::string local_queue;
  std::string cluster_queue;
  std::string workload_name;
};

// UNGATE with the labels/annotation Kueue adds on admission.
v1::PodDirective UngateDirective(const v1::PodObservation& pod, const UngateInfo& info,
                                 int64_t revision);
v1::PodDirective DeleteDirective(const v1::PodObservation& pod, int64_t revision);
v1::PodDirective RemoveFinalizerDirective(const v1::PodObservation& pod, int64_t revision);

// For an admitted group Workload: each gated pod and the pod set with its role hash (a single
// pod: pod set "main"). Kueue's error when a role has no pod set:
// "invalid podset infos: podSetInfo with the name '<hash>' is not found". A declared group's
// pods of no declared set stay gated.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PodsToUngate(
    std::vector<v1::PodObservation> pods, const v1::Workload& workload, bool is_group);

// An event message as Kueue records it: at most 1,024 bytes, a longer one cut to 1,020 and " ...".
std::string TruncateEventMessage(absl::string_view message);
// TruncateEventMessage in place: `message` is left as it is when it is short enough.
void TruncateEventMessageInPlace(std::string* message);

// The stop reason for an evicted Workload: "WorkloadEvictedDueTo<evicted reason>".
std::string EvictionStopReason(absl::string_view evicted_reason);

// Kueue's Stop: DELETE (with TerminationTarget reason/message) for every pod not already being
// deleted and, unless the Workload was deleted, not terminated or gated; with
// `workload_deleted` every pod of a group also gets REMOVE_FINALIZER.
std::vector<v1::PodDirective> StopDirectives(const std::vector<v1::PodObservation>& pods,
                                             absl::string_view stop_reason,
                                             absl::string_view message, bool workload_deleted,
                                             bool is_group, int64_t revision);

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_POD_GROUP_H_
