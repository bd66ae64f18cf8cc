// The names Kueue gives its labels, annotations, scheduling gates and finalizers
// (kueue-jobframework.md §1.5), and admitd's own keys beside them: one place for each, read and
// written by the server (pods, slices, MultiKueue copies) and by the shim (integrations,
// webhooks), so that no two parts can spell one differently.
#ifndef ADMITD_COMMON_KUEUE_KEYS_H_
#define ADMITD_COMMON_KUEUE_KEYS_H_

namespace admitd {

// Labels a job (or pod) carries.
inline constexpr char kQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kPriorityClassLabel[] = "kueue.x-k8s.io/priority-class";
inline constexpr char kMaxExecTimeLabel[] = "kueue.x-k8s.io/max-exec-time-seconds";
// A job's prebuilt Workload (a label, or with WorkloadIdentifierAnnotations an annotation).
inline constexpr char kPrebuiltWorkloadKey[] = "kueue.x-k8s.io/prebuilt-workload-name";

// Annotations a job carries.
inline constexpr char kElasticJobAnnotation[] = "kueue.x-k8s.io/elastic-job";
inline constexpr char kAdmissionGatedBy[] = "kueue.x-k8s.io/admission-gated-by";

// A pod set's topology requests (annotations of its pod template).
inline constexpr char kRequiredTopology[] = "kueue.x-k8s.io/podset-required-topology";
inline constexpr char kPreferredTopology[] = "kueue.x-k8s.io/podset-preferred-topology";
inline constexpr char kUnconstrainedTopology[] = "kueue.x-k8s.io/podset-unconstrained-topology";
inline constexpr char kSliceRequiredTopology[] = "kueue.x-k8s.io/podset-slice-required-topology";
inline constexpr char kSliceSize[] = "kueue.x-k8s.io/podset-slice-size";
inline constexpr char kSliceConstraints[] =
    "kueue.x-k8s.io/podset-slice-required-topology-constraints";
inline constexpr char kPodSetGroupName[] = "kueue.x-k8s.io/podset-group-name";

// What an admission puts on a pod template (podset info, §1.9).
inline constexpr char kPodSetLabel[] = "kueue.x-k8s.io/podset";
inline constexpr char kLocalQueueNameLabel[] = "kueue.x-k8s.io/local-queue-name";
inline constexpr char kClusterQueueNameLabel[] = "kueue.x-k8s.io/cluster-queue-name";
inline constexpr char kWorkloadAnnotation[] = "kueue.x-k8s.io/workload";

// Plain pods and pod groups (§3): the managed label and finalizer, the scheduling gates, the
// group's labels and annotations.
inline constexpr char kManagedLabel[] = "kueue.x-k8s.io/managed";
inline constexpr char kManagedFinalizer[] = "kueue.x-k8s.io/managed";
inline constexpr char kAdmissionGate[] = "kueue.x-k8s.io/admission";
inline constexpr char kTopologyGate[] = "kueue.x-k8s.io/topology";
inline constexpr char kGroupNameLabel[] = "kueue.x-k8s.io/pod-group-name";
inline constexpr char kGroupNameAnnotation[] = "kueue.x-k8s.io/pod-group-name";
inline constexpr char kGroupTotalCountAnnotation[] = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr char kGroupFastAdmissionAnnotation[] = "kueue.x-k8s.io/pod-group-fast-admission";
inline constexpr char kGroupServingAnnotation[] = "kueue.x-k8s.io/pod-group-serving";
inline constexpr char kGroupSetsAnnotation[] = "kueue.x-k8s.io/pod-group-sets";
inline constexpr char kGroupRoleLabel[] = "kueue.x-k8s.io/pod-group-role";
inline constexpr char kGroupPodIndexLabel[] = "kueue.x-k8s.io/pod-group-pod-index";
// Names the pod label whose value the webhook copies into kGroupPodIndexLabel.
inline constexpr char kGroupPodIndexLabelAnnotation[] = "kueue.x-k8s.io/pod-group-pod-index-label";
// On a pod template (Deployment, StatefulSet): its pods are gated for that parent's integration.
inline constexpr char kPodSuspendingParentAnnotation[] = "kueue.x-k8s.io/pod-suspending-parent";
inline constexpr char kRoleHashAnnotation[] = "kueue.x-k8s.io/role-hash";
inline constexpr char kRetriableInGroupAnnotation[] = "kueue.x-k8s.io/retriable-in-group";
inline constexpr char kIsGroupWorkloadAnnotation[] = "kueue.x-k8s.io/is-group-workload";

// Elastic jobs (KEP-77): the gate on a pod waiting for its slice, the slice chain's name, and on a
// scale-up slice "namespace/name" of the slice it replaces.
inline constexpr char kElasticJobGate[] = "kueue.x-k8s.io/elastic-job";
inline constexpr char kSliceNameAnnotation[] = "kueue.x-k8s.io/workload-slice-name";
inline constexpr char kReplacementForAnnotation[] =
    "kueue.x-k8s.io/workload-slice-replacement-for";

// The finalizer Kueue puts on every Workload it makes, until the Workload finishes.
inline constexpr char kResourceInUseFinalizer[] = "kueue.x-k8s.io/resource-in-use";

// MultiKueue: spec.managedBy of a job it dispatches, and the label on every object a manager
// creates in a worker cluster (the manager's origin).
inline constexpr char kMultiKueueControllerName[] = "kueue.x-k8s.io/multikueue";
inline constexpr char kMultiKueueOriginLabel[] = "kueue.x-k8s.io/multikueue-origin";

// admitd's own: on the Workloads of a cluster's jobs (from its shim) and of its pods (made by
// admitd from the pods reported), which cluster they belong to.
inline constexpr char kJobClusterLabel[] = "admitd.io/job-cluster";
inline constexpr char kPodClusterLabel[] = "admitd.io/pod-cluster";

}  // namespace admitd

#endif  // ADMITD_COMMON_KUEUE_KEYS_H_
