#include "server/request_checks.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/metadata_validation.h"

namespace admitd {

absl::Status CheckWorkloadName(const std::string& ns, const std::string& name) {
  std::vector<FieldViolation> violations;
  if (ns.empty()) violations.push_back({"namespace", "is required"});
  if (name.empty()) violations.push_back({"name", "is required"});
  return violations.empty() ? absl::OkStatus() : InvalidArgument(violations);
}

absl::Status CheckQueueKind(v1::ObjectKind kind) {
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR:
    case v1::OBJECT_KIND_COHORT:
    case v1::OBJECT_KIND_CLUSTER_QUEUE:
    case v1::OBJECT_KIND_LOCAL_QUEUE:
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS:
    case v1::OBJECT_KIND_ADMISSION_CHECK:
    case v1::OBJECT_KIND_NAMESPACE:
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG:
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: break;
    default:
      return InvalidArgument({{"kind",
                               "must be one of OBJECT_KIND_RESOURCE_FLAVOR, OBJECT_KIND_COHORT, "
                               "OBJECT_KIND_CLUSTER_QUEUE, OBJECT_KIND_LOCAL_QUEUE, "
                               "OBJECT_KIND_WORKLOAD_PRIORITY_CLASS, OBJECT_KIND_ADMISSION_CHECK, "
                               "OBJECT_KIND_NAMESPACE, OBJECT_KIND_MULTIKUEUE_CONFIG, "
                               "OBJECT_KIND_MULTIKUEUE_CLUSTER (workloads are served by "
                               "AdmissionService)"}});
  }
  return absl::OkStatus();
}

absl::Status CheckSubmitRequest(const v1::SubmitRequest& request) {
  if (!request.has_workload()) return InvalidArgument({{"workload", "is required"}});
  return absl::OkStatus();
}

absl::Status CheckAdmitRequest(const v1::AdmitRequest& request, absl::Duration* wait) {
  ADMITD_RETURN_IF_ERROR(CheckWorkloadName(request.namespace_(), request.name()));
  absl::Duration timeout = kDefaultAdmitWait;
  if (request.has_timeout()) {
    // A Duration's nanos are below a second and carry the seconds' sign.
    const int64_t seconds = request.timeout().seconds();
    const int32_t nanos = request.timeout().nanos();
    if (nanos <= -1000000000 || nanos >= 1000000000 || (seconds > 0 && nanos < 0) ||
        (seconds < 0 && nanos > 0)) {
      return InvalidArgument({{"timeout.nanos",
                               absl::StrCat("Invalid value: ", nanos,
                                            ": must be below one second and carry the sign of "
                                            "seconds")}});
    }
    timeout = absl::Seconds(seconds) + absl::Nanoseconds(nanos);
    if (timeout < absl::ZeroDuration() || timeout > kMaxAdmitWait) {
      return InvalidArgument({{"timeout", "must be between 0s and 1h"}});
    }
  }
  if (wait != nullptr) *wait = timeout;
  return absl::OkStatus();
}

absl::Status CheckReleaseQuotaRequest(const v1::ReleaseQuotaRequest& request) {
  ADMITD_RETURN_IF_ERROR(CheckWorkloadName(request.namespace_(), request.name()));
  if (request.release_case() == v1::ReleaseQuotaRequest::RELEASE_NOT_SET) {
    return InvalidArgument({{"release", "must be one of finished, stopped or reclaimable"}});
  }
  return absl::OkStatus();
}

absl::Status CheckApplyRequest(const v1::ApplyRequest& request) {
  if (request.object().kind_case() == v1::QueueObject::KIND_NOT_SET) {
    return InvalidArgument({{"object",
                             "must hold one queue object (resource_flavor, cohort, "
                             "cluster_queue, local_queue, workload_priority_class or "
                             "admission_check)"}});
  }
  return absl::OkStatus();
}

absl::Status CheckGetObjectRequest(const v1::GetObjectRequest& request) {
  ADMITD_RETURN_IF_ERROR(CheckQueueKind(request.kind()));
  if (request.name().empty()) return InvalidArgument({{"name", "is required"}});
  return absl::OkStatus();
}

absl::Status CheckDeleteObjectRequest(const v1::DeleteObjectRequest& request) {
  ADMITD_RETURN_IF_ERROR(CheckQueueKind(request.kind()));
  if (request.name().empty()) return InvalidArgument({{"name", "is required"}});
  return absl::OkStatus();
}

absl::Status CheckRunSchedulingCyclesRequest(const v1::RunSchedulingCyclesRequest& request) {
  if (request.count() < 0 || request.count() > kMaxCyclesPerCall) {
    return InvalidArgument({{"count", absl::StrCat("must be between 0 and ", kMaxCyclesPerCall)}});
  }
  if (request.advance_clock_seconds() < 0) {
    return InvalidArgument({{"advance_clock_seconds", "must not be negative"}});
  }
  return absl::OkStatus();
}

absl::Status CheckImportRequest(const v1::ImportRequest& request) {
  if (request.workloads().empty()) {
    return InvalidArgument({{"workloads", "Required value: at least one workload"}});
  }
  return absl::OkStatus();
}

absl::Status CheckListDirectivesRequest(const v1::ListDirectivesRequest& request) {
  std::vector<FieldViolation> violations;
  engine::CheckClusterName(&violations, "cluster", request.cluster());
  return violations.empty() ? absl::OkStatus() : InvalidArgument(violations);
}

absl::Status CheckWatchRequest(const v1::WatchRequest& request) {
  std::vector<FieldViolation> violations;
  for (int i = 0; i < request.kinds_size(); ++i) {
    const int kind = request.kinds(i);
    if (!v1::ObjectKind_IsValid(kind) || kind == v1::OBJECT_KIND_UNSPECIFIED) {
      violations.push_back({absl::StrCat("kinds[", i, "]"),
                            absl::StrCat("Unsupported value: ", kind, ": not an ObjectKind")});
    }
  }
  if (!request.cluster().empty()) engine::CheckClusterName(&violations, "cluster", request.cluster());
  if (request.from_oldest() && request.since_revision() != 0) {
    violations.push_back({"since_revision",
                          absl::StrCat("Invalid value: ", request.since_revision(),
                                       ": must be 0 with from_oldest")});
  }
  return violations.empty() ? absl::OkStatus() : InvalidArgument(violations);
}


}  // namespace admitd
