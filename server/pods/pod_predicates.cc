// What a pod says about itself: group name, queue, gates, phase, and the group total count
// with Kueue's messages.
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/pods/pod_group.h"
#include "server/pods/pod_internal.h"

namespace admitd::pods {

using internal::Annotation;
using internal::GoQuote;
using internal::HasAnnotation;
using internal::Label;
using v1::PodObservation;

// ---- Predicates ---------------------------------------------------------------------------------

std::string GroupName(const PodObservation& pod, const PodOptions& options) {
  if (options.workload_identifier_annotations) {
    if (std::string name = Annotation(pod, kGroupNameAnnotation); !name.empty()) return name;
  }
  return Label(pod, kGroupNameLabel);
}

std::string QueueName(const PodObservation& pod) { return Label(pod, kQueueNameLabel); }

bool IsGated(const PodObservation& pod) {
  return std::any_of(pod.scheduling_gates().begin(), pod.scheduling_gates().end(),
                     [](const v1::PodSchedulingGate& g) { return g.name() == kAdmissionGate; });
}

bool IsTerminated(const PodObservation& pod) {
  return pod.phase() == v1::POD_PHASE_SUCCEEDED || pod.phase() == v1::POD_PHASE_FAILED;
}

bool IsRunnableOrSucceeded(const PodObservation& pod) {
  if (pod.has_deletion_timestamp() && pod.node_name().empty()) return false;
  return pod.phase() != v1::POD_PHASE_FAILED;
}

bool IsUnretriable(const PodObservation& pod) {
  return Annotation(pod, kRetriableInGroupAnnotation) == "false";
}

bool HasManagedFinalizer(const PodObservation& pod) {
  return std::find(pod.finalizers().begin(), pod.finalizers().end(), kManagedFinalizer) !=
         pod.finalizers().end();
}

bool IsFastAdmission(const PodObservation& pod) {
  return Annotation(pod, kGroupFastAdmissionAnnotation) == "true";
}

bool IsServing(const PodObservation& pod) { return Annotation(pod, kGroupServingAnnotation) == "true"; }

absl::StatusOr<int64_t> GoAtoi(absl::string_view s) {
  const auto syntax = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("strconv.Atoi: parsing ", GoQuote(s), ": invalid syntax"));
  };
  absl::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return syntax();
  unsigned __int128 value = 0;
  bool overflow = false;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return syntax();
    if (!overflow) {
      value = value * 10 + static_cast<unsigned>(c - '0');
      if (value > static_cast<unsigned __int128>(INT64_MAX) + 1) overflow = true;
    }
  }
  if (overflow || (!negative && value > static_cast<unsigned __int128>(INT64_MAX))) {
    return absl::OutOfRangeError(
        absl::StrCat("strconv.Atoi: parsing ", GoQuote(s), ": value out of range"));
  }
  if (negative) return static_cast<int64_t>(-static_cast<__int128>(value));
  return static_cast<int64_t>(value);
}

absl::StatusOr<int64_t> GroupTotalCount(const PodObservation& pod, const PodOptions& options) {
  if (GroupName(pod, options).empty()) {
    if (options.workload_identifier_annotations) {
      return absl::InvalidArgumentError(absl::StrCat("pod doesn't have a '", kGroupNameAnnotation,
                                                     "' annotation/label"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("pod doesn't have a '", kGroupNameLabel, "' label"));
  }
  if (!HasAnnotation(pod, kGroupTotalCountAnnotation)) {
    return absl::InvalidArgumentError(
        absl::StrCat("failed to extract '", kGroupTotalCountAnnotation, "' annotation"));
  }
  const std::string value = Annotation(pod, kGroupTotalCountAnnotation);
  absl::StatusOr<int64_t> total = GoAtoi(value);
  if (!total.ok()) return total.status();
  if (*total < 1) {
    return absl::InvalidArgumentError(absl::StrCat("incorrect annotation value '",
                                                   kGroupTotalCountAnnotation, "=", value,
                                                   "': group total count should be greater than zero"));
  }
  return *total;
}

}  // namespace admitd::pods
