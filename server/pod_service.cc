#include "server/pod_service.h"

#include "absl/time/clock.h"
#include "common/status.h"
#include "server/request_checks.h"
#include "server/metrics.h"

namespace admitd {

grpc::ServerUnaryReactor* PodServiceImpl::ReportPods(grpc::CallbackServerContext* rpc,
                                                     const v1::ReportPodsRequest* req,
                                                     v1::ReportPodsResponse* resp) {
  return Dispatch(
      ctx_, rpc, resp,
      [req](engine::Engine& e, absl::Time now) { return e.ReportPods(*req, now); },
      [req, metrics = ctx_->metrics](engine::Engine& e, v1::ReportPodsResponse* r) {
        // The directives as they stand after the batch's scheduling cycles: a pod group that
        // became complete with this report is usually admitted, and its pods ungated, already.
        e.AddDirectivesFor(*req, absl::Now(), r);
        if (metrics != nullptr && r->errors_size() > 0) {
          metrics->Add("admitd_pods_rejected_total",
                       "Reported pods refused as Kueue's pod webhook would refuse them, or whose "
                       "group is inconsistent.",
                       {{"cluster", req->cluster()}}, r->errors_size());
        }
      });
}

grpc::ServerUnaryReactor* PodServiceImpl::ListDirectives(grpc::CallbackServerContext* rpc,
                                                         const v1::ListDirectivesRequest* req,
                                                         v1::ListDirectivesResponse* resp) {
  if (absl::Status s = CheckListDirectivesRequest(*req); !s.ok()) {
    grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  return Dispatch(ctx_, rpc, resp, [req](engine::Engine& e, absl::Time now) {
    return absl::StatusOr<v1::ListDirectivesResponse>(e.ListDirectives(*req, now));
  });
}

}  // namespace admitd
