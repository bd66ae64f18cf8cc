// The names Kueue gives its labels, annotations, scheduling gates and finalizers, as the shim's
// integrations and webhooks read and write them on Kubernetes objects (kueue-jobframework.md).
// One place for each, so that no two parts of the shim can spell one differently.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_KUEUE_KEYS_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_KUEUE_KEYS_H_

namespace admitd::shim {

// Labels a job (or pod) carries.
inline constexpr char kQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kPriorityClassLabel[] = "kueue.x-k8s.io/priority-class";
inline constexpr char kMaxExecTimeLabel[] = "kueue.x-k8s.io/max-exec-time-seconds";
inline constexpr char kPrebuiltWorkloadKey[] = "kueue.x-k8s.io/prebuilt-workload-name";

// Annotations a job carries.
inline constexpr char kElasticJobKey[] = "kueue.x-k8s.io/elastic-job";
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

// Pods: the label and finalizer of a managed pod, and its scheduling gates.
inline constexpr char kManagedKey[] = "kueue.x-k8s.io/managed";
inline constexpr char kAdmissionGate[] = "kueue.x-k8s.io/admission";
inline constexpr char kTopologyGate[] = "kueue.x-k8s.io/topology";

// MultiKueue: spec.managedBy of a job it dispatches, and the label on every object a manager
// creates in a worker cluster (the manager's origin).
inline constexpr char kMultiKueueControllerName[] = "kueue.x-k8s.io/multikueue";
inline constexpr char kMultiKueueOriginLabel[] = "kueue.x-k8s.io/multikueue-origin";

// A scale-up slice of an elastic job: "namespace/name" of the slice it replaces.
inline constexpr char kReplacementForAnnotation[] =
    "kueue.x-k8s.io/workload-slice-replacement-for";

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_KUEUE_KEYS_H_
