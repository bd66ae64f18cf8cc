// Helpers the pod library's files share. Internal to server/pods.
#ifndef ADMITD_SERVER_PODS_POD_INTERNAL_H_
#define ADMITD_SERVER_PODS_POD_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/time/time.h"
#include "admitd/v1/pods.pb.h"

namespace admitd::pods {
struct PodOptions;
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

}  // namespace admitd::pods::internal

#endif  // ADMITD_SERVER_PODS_POD_INTERNAL_H_
