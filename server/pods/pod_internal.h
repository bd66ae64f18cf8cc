// Helpers the pod library's files share. Internal to server/pods.
#ifndef ADMITD_SERVER_PODS_POD_INTERNAL_H_
#define ADMITD_SERVER_PODS_POD_INTERNAL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/pods.pb.h"

namespace admitd::pods {
struct PodOptions;
struct GroupComposition;
}  // namespace admitd::pods

namespace admitd::pods::internal {

absl::Time ToTime(const google::protobuf::Timestamp& ts);
// Name order (then uid): the deterministic stand-in for the informer's list order.
void SortByName(std::vector<v1::PodObservation>* pods);
std::string Label(const v1::PodObservation& pod, const char* key);
std::string Annotation(const v1::PodObservation& pod, const char* key);
bool HasAnnotation(const v1::PodObservation& pod, const char* key);
// Go's %q for the ASCII strings annotation values usually are.
std::string GoQuote(absl::string_view s);
// Kubernetes field paths: metadata.labels[<key>], metadata.annotations[<key>], and the one the
// pod's group name comes from.
std::string LabelPath(const char* key);
std::string AnnotationPath(const char* key);
std::string GroupNamePath(const v1::PodObservation& pod, const PodOptions& options);

std::vector<std::string> Names(const std::vector<v1::PodObservation>& pods);
// Splits pods into runnable-or-succeeded (active) and the rest.
void Partition(const std::vector<v1::PodObservation>& pods, std::vector<v1::PodObservation>* active,
               std::vector<v1::PodObservation>* inactive);
// The pods still holding the kueue.x-k8s.io/managed finalizer.
std::vector<std::string> FinalizerHolders(const std::vector<v1::PodObservation>& pods);
// The pod as an owner reference of its Workload.
v1::OwnerReference PodOwner(const v1::PodObservation& pod, bool controller);
// Queue, priority class and maximum execution time as jobframework.NewWorkload takes them.
void FillWorkloadSpec(const v1::PodObservation& pod, absl::string_view queue_name, v1::Workload* wl);
// The kueue.x-k8s.io/max-exec-time-seconds label, when a positive integer.
std::optional<int32_t> MaxExecTime(const v1::PodObservation& pod);

// ComposeGroup for a group with a pod declaring kueue.x-k8s.io/pod-group-sets (pods sorted by
// name; `out->finalize` already set).
void ComposeDeclaredGroup(const std::vector<v1::PodObservation>& pods, const PodOptions& options,
                          GroupComposition* out);

}  // namespace admitd::pods::internal

#endif  // ADMITD_SERVER_PODS_POD_INTERNAL_H_
