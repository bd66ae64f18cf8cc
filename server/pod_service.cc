#include "server/pod_service.h"

#include "absl/time/clock.h"
#include "common/status.h"

namespace admitd {

grpc::ServerUnaryReactor* PodServiceImpl::ReportPods(grpc::CallbackServerContext* rpc,
                                                     const v1::ReportPodsRequest* req,
                                                     v1::ReportPodsResponse* resp) {
  return Dispatch(
      ctx_, rpc, resp,
      [req](engine::Engine& e, absl::Time now) { return e.ReportPods(*req, now); },
      [req](engine::Engine& e, v1::ReportPodsResponse* r) {
        // The directives as they stand after the batch's scheduling cycles: a pod group that
        // became complete with this report is usually admitted, and its pods ungated, already.
        e.AddDirectivesFor(*req, absl::Now(), r);
      });
}

grpc::ServerUnaryReactor* PodServiceImpl::ListDirectives(grpc::CallbackServerContext* rpc,
                                                         const v1::ListDirectivesRequest* req,
                                                         v1::ListDirectivesResponse* resp) {
  if (req->cluster().empty()) {
    grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
    reactor->Finish(ToGrpcStatus(InvalidArgument({{"cluster", "Required value"}})));
    return reactor;
  }
  return Dispatch(ctx_, rpc, resp, [req](engine::Engine& e, absl::Time now) {
    return absl::StatusOr<v1::ListDirectivesResponse>(e.ListDirectives(*req, now));
  });
}

}  // namespace admitd
