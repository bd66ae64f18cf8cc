// The checks every RPC makes on its request before the engine sees it: the
// request's shape (required names, a queue object kind that QueueService
// serves, bounded timeouts and cycle counts). Each returns OK or
// INVALID_ARGUMENT with field violations, as the gRPC services answer it. They
// are pure and free of gRPC, so tests and fuzz targets run the same path as a
// server:
//
//   if (absl::Status s = CheckAdmitRequest(req); !s.ok()) return Refuse(rpc,
//   s);
//   ... engine.Describe(req, now) ...
//
// Requests whose every field the engine checks itself (ResizeRequest,
// ReportPodsRequest, ListWorkloadsRequest) have no check here.
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_REQUEST_CHECKS_H_
#define ADMITD_SERVER_REQUEST_CHECKS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/pod_service.pb.h"
#include "admitd/v1/queue_service.pb.h"

namespace admitd {

// Limits of the checks below.
inline constexpr absl::Duration kDefaultAdmitWait = absl::Seconds(30);
inline constexpr absl::Duration kMaxAdmitWait = absl::Hours(1);
inline constexpr int kMaxCyclesPerCall = 100000;

// Namespace and name identify a workload in every AdmissionService call but
// Submit and List.
absl::Status CheckWorkloadName(const std::string& ns, const std::string& name);

// A queue object kind QueueService serves (not unspecified, not a workload, a
// known value).
absl::Status CheckQueueKind(v1::ObjectKind kind);

// AdmissionService.
absl::Status CheckSubmitRequest(const v1::SubmitRequest& request);
// Also sets `*wait` (when not null) to how long a waiting Admit may wait: the
// request's timeout, or kDefaultAdmitWait without one.
absl::Status CheckAdmitRequest(const v1::AdmitRequest& request, absl::Duration* wait = nullptr);
absl::Status CheckReleaseQuotaRequest(const v1::ReleaseQuotaRequest& request);

// QueueService.
absl::Status CheckApplyRequest(const v1::ApplyRequest& request);
absl::Status CheckGetObjectRequest(const v1::GetObjectRequest& request);
absl::Status CheckDeleteObjectRequest(const v1::DeleteObjectRequest& request);
// Whether the server's clock may be advanced is the server's to say, not
// checked here.
absl::Status CheckRunSchedulingCyclesRequest(const v1::RunSchedulingCyclesRequest& request);
absl::Status CheckImportRequest(const v1::ImportRequest& request);

// PodService.
absl::Status CheckListDirectivesRequest(const v1::ListDirectivesRequest& request);

// Watch: known kinds only, and a cluster name that is one.
absl::Status CheckWatchRequest(const v1::WatchRequest& request);

}  // namespace admitd

#endif  // ADMITD_SERVER_REQUEST_CHECKS_H_
