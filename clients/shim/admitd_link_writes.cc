// AdmitdLink's writes (AdmitdApi, in admitd_link.h): one call each, with the reconcile's
// deadline and traceparent, its outcome reported for reachability, its answer remembered.
#include "clients/shim/admitd_link.h"
#include "clients/shim/framework/reconcile_util.h"

namespace admitd::shim {

using reconcile::FromGrpc;
using reconcile::SetDeadline;

absl::StatusOr<v1::SubmitResponse> AdmitdLink::Submit(const v1::SubmitRequest& req) {
  v1::SubmitResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().Submit(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok()) return FromGrpc("submit", s);
  Remember(resp.workload());
  return resp;
}

absl::StatusOr<v1::ResizeResponse> AdmitdLink::Resize(const v1::ResizeRequest& req) {
  v1::ResizeResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().Resize(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok()) return FromGrpc("resize", s);
  for (const v1::Workload& wl : resp.workloads()) Remember(wl);
  return resp;
}

absl::Status AdmitdLink::ReleaseQuota(const v1::ReleaseQuotaRequest& req) {
  v1::ReleaseQuotaResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().ReleaseQuota(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok()) return FromGrpc("release quota", s);
  Remember(resp.workload());
  return absl::OkStatus();
}

absl::Status AdmitdLink::DeleteWorkload(const v1::Workload& wl) {
  v1::DeleteWorkloadRequest req;
  req.set_namespace_(wl.metadata().namespace_());
  req.set_name(wl.metadata().name());
  req.set_uid(wl.metadata().uid());
  v1::DeleteWorkloadResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().Delete(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND &&
      s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
    return FromGrpc("delete workload", s);
  }
  Forget(wl.metadata().namespace_(), wl.metadata().name(), wl.metadata().uid());
  return absl::OkStatus();
}

absl::StatusOr<v1::Workload> AdmitdLink::UpdateRemoteJob(const v1::UpdateRemoteJobRequest& req) {
  v1::UpdateRemoteJobResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().UpdateRemoteJob(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok()) return FromGrpc("update remote job", s);
  Remember(resp.workload());
  return resp.workload();
}

absl::Status AdmitdLink::ReportPodsReady(const v1::ReportPodsReadyRequest& req) {
  v1::ReportPodsReadyResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().ReportPodsReady(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok()) return FromGrpc("report pods ready", s);
  Remember(resp.workload());
  return absl::OkStatus();
}

absl::Status AdmitdLink::SetActive(const v1::SetActiveRequest& req) {
  v1::SetActiveResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admission().SetActive(&ctx, req, &resp);
  ReportCall(s);
  if (!s.ok()) return FromGrpc("set active", s);
  return absl::OkStatus();
}

}  // namespace admitd::shim
