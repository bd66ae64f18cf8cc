// PodService: plain pods and pod groups (KEP-976), as thin adapters over the sequencer.
#ifndef ADMITD_SERVER_POD_SERVICE_H_
#define ADMITD_SERVER_POD_SERVICE_H_

#include "admitd/v1/pod_service.grpc.pb.h"
#include "server/dispatch.h"

namespace admitd {

class PodServiceImpl final : public v1::PodService::CallbackService {
 public:
  explicit PodServiceImpl(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* ReportPods(grpc::CallbackServerContext* rpc,
                                       const v1::ReportPodsRequest* req,
                                       v1::ReportPodsResponse* resp) override;
  grpc::ServerUnaryReactor* ListDirectives(grpc::CallbackServerContext* rpc,
                                           const v1::ListDirectivesRequest* req,
                                           v1::ListDirectivesResponse* resp) override;

 private:
  ServiceContext* const ctx_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_POD_SERVICE_H_
