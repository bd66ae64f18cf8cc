// Which pods are managed, and the validation Kueue's pod webhook applies (KEP-976 §14.1).
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/pods/pod_group.h"
#include "server/pods/pod_internal.h"

namespace admitd::pods {
namespace {

using internal::Annotation;
using internal::AnnotationPath;
using internal::GoQuote;
using internal::GroupNamePath;
using internal::HasAnnotation;
using internal::Label;
using internal::LabelPath;
using v1::PodObservation;

bool IsDNS1123Subdomain(const std::string& value, std::vector<std::string>* errs) {
  if (value.size() > 253) errs->push_back("must be no more than 253 characters");
  static const std::regex kRe("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  if (!std::regex_match(value, kRe)) {
    errs->push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  }
  return errs->empty();
}

}  // namespace

// ---- Management and validation ------------------------------------------------------------------

ManagementDecision DecideManagement(const PodObservation& pod, const ManagementInput& input) {
  ManagementDecision d;
  if (!input.namespace_selected || input.owner_managed_by_kueue) return d;
  d.queue_name = QueueName(pod);
  if (d.queue_name.empty() && input.default_local_queue_exists) d.queue_name = kDefaultLocalQueueName;
  d.managed = !d.queue_name.empty() || input.manage_jobs_without_queue_name;
  return d;
}

std::vector<std::string> ValidatePodCreate(const PodObservation& pod, const PodOptions& options) {
  std::vector<std::string> errs;
  if (auto it = pod.labels().find(kManagedLabel); it != pod.labels().end() && it->second != "true") {
    errs.push_back(absl::StrCat(LabelPath(kManagedLabel),
                                ": Forbidden: managed label value can only be 'true'"));
  }
  // validatePodGroupMetadata
  const bool has_total = HasAnnotation(pod, kGroupTotalCountAnnotation);
  std::string detail = absl::StrCat("both the '", kGroupTotalCountAnnotation,
                                    "' annotation and the '", kGroupNameLabel, "' label should be set");
  if (options.workload_identifier_annotations && !Annotation(pod, kGroupNameAnnotation).empty()) {
    detail = absl::StrCat("both the '", kGroupTotalCountAnnotation, "' annotation and the '",
                          kGroupNameAnnotation, "' annotation should be set");
  }
  const std::string group = GroupName(pod, options);
  // A pod of a group that declares its sets (kueue.x-k8s.io/pod-group-sets, or a role in one)
  // needs no total count: the declaration gives it.
  const bool declares = DeclaresSets(pod);
  const bool has_role = !Label(pod, kGroupRoleLabel).empty();
  if (group.empty() && (declares || has_role)) {
    errs.push_back(absl::StrCat(GroupNamePath(pod, options), ": Required value: the '",
                                declares ? kGroupSetsAnnotation : kGroupRoleLabel, "' ",
                                declares ? "annotation" : "label", " needs the '", kGroupNameLabel,
                                "' label"));
    return errs;
  }
  if (declares) {
    if (absl::StatusOr<DeclaredSets> sets = ParseDeclaredSets(pod, options); !sets.ok()) {
      errs.push_back(absl::StrCat(AnnotationPath(kGroupSetsAnnotation), ": Invalid value: ",
                                  sets.status().message()));
    }
  }
  if (group.empty()) {
    if (has_total) {
      errs.push_back(absl::StrCat(GroupNamePath(pod, options), ": Required value: ", detail));
      return errs;
    }
  } else {
    std::vector<std::string> name_errs;
    if (!IsDNS1123Subdomain(group, &name_errs)) {
      errs.push_back(absl::StrCat(GroupNamePath(pod, options), ": Invalid value: ", GoQuote(group),
                                  ": ", absl::StrJoin(name_errs, ",")));
    }
    if (!has_total && !declares && !has_role) {
      errs.push_back(absl::StrCat(AnnotationPath(kGroupTotalCountAnnotation),
                                  ": Required value: ", detail));
      return errs;
    }
  }
  if (has_total) {
    absl::StatusOr<int64_t> total = GroupTotalCount(pod, options);
    if (!total.ok()) {
      errs.push_back(absl::StrCat(AnnotationPath(kGroupTotalCountAnnotation), ": Invalid value: ",
                                  GoQuote(Annotation(pod, kGroupTotalCountAnnotation)), ": ",
                                  total.status().message()));
    }
  }
  return errs;
}

std::vector<std::string> ValidatePodUpdate(const PodObservation& old_pod, const PodObservation& new_pod,
                                           const PodOptions& options,
                                           bool default_local_queue_exists) {
  // jobframework's validateUpdateForQueueName: a pod is "suspended" while gated or terminated.
  std::vector<std::string> errs;
  const std::string old_queue = QueueName(old_pod);
  const std::string new_queue = QueueName(new_pod);
  if (!IsGated(new_pod) && !IsTerminated(new_pod) && new_queue != old_queue) {
    errs.push_back(absl::StrCat(LabelPath(kQueueNameLabel), ": Invalid value: ", GoQuote(new_queue),
                                ": field is immutable"));
  }
  if (new_queue.empty() && !old_queue.empty() && default_local_queue_exists) {
    errs.push_back(absl::StrCat(LabelPath(kQueueNameLabel),
                                ": Invalid value: \"\": queue-name must not be empty in namespace "
                                "with default queue"));
  }
  for (std::string& e : ValidatePodCreate(new_pod, options)) errs.push_back(std::move(e));
  if (!GroupName(new_pod, options).empty() && IsUnretriable(old_pod) && !IsUnretriable(new_pod)) {
    errs.push_back(absl::StrCat(AnnotationPath(kRetriableInGroupAnnotation),
                                ": Forbidden: unretriable pod group can't be converted to retriable"));
  }
  // The declaration and a pod's role are fixed once the pod exists.
  if (Annotation(new_pod, kGroupSetsAnnotation) != Annotation(old_pod, kGroupSetsAnnotation)) {
    errs.push_back(absl::StrCat(AnnotationPath(kGroupSetsAnnotation), ": Invalid value: ",
                                GoQuote(Annotation(new_pod, kGroupSetsAnnotation)), ": field is immutable"));
  }
  if (Label(new_pod, kGroupRoleLabel) != Label(old_pod, kGroupRoleLabel)) {
    errs.push_back(absl::StrCat(LabelPath(kGroupRoleLabel), ": Invalid value: ",
                                GoQuote(Label(new_pod, kGroupRoleLabel)), ": field is immutable"));
  }
  if (std::string old_group = GroupName(old_pod, options); !old_group.empty()) {
    std::string new_group = GroupName(new_pod, options);
    if (new_group != old_group) {
      errs.push_back(absl::StrCat(GroupNamePath(new_pod, options), ": Invalid value: ",
                                  GoQuote(new_group), ": field is immutable"));
    }
  }
  return errs;
}

}  // namespace admitd::pods
