// QueueService: the admin API (queue-side objects, scheduling steps, the null RPC), as thin
// adapters that turn requests into sequencer commands.
#ifndef ADMITD_SERVER_QUEUE_SERVICE_H_
#define ADMITD_SERVER_QUEUE_SERVICE_H_

#include "admitd/v1/queue_service.grpc.pb.h"
#include "server/dispatch.h"

namespace admitd {

class QueueServiceImpl final : public v1::QueueService::CallbackService {
 public:
  explicit QueueServiceImpl(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* Apply(grpc::CallbackServerContext* rpc, const v1::ApplyRequest* req,
                                  v1::ApplyResponse* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* rpc,
                                const v1::GetObjectRequest* req, v1::QueueObject* resp) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* rpc,
                                 const v1::ListObjectsRequest* req,
                                 v1::ListObjectsResponse* resp) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* rpc,
                                   const v1::DeleteObjectRequest* req,
                                   v1::DeleteObjectResponse* resp) override;
  grpc::ServerUnaryReactor* RunSchedulingCycles(grpc::CallbackServerContext* rpc,
                                                const v1::RunSchedulingCyclesRequest* req,
                                                v1::RunSchedulingCyclesResponse* resp) override;
  grpc::ServerUnaryReactor* Import(grpc::CallbackServerContext* rpc, const v1::ImportRequest* req,
                                   v1::ImportResponse* resp) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* rpc, const v1::PingRequest* req,
                                 v1::PingResponse* resp) override;
  grpc::ServerUnaryReactor* ParseManifests(grpc::CallbackServerContext* rpc,
                                           const v1::ParseManifestsRequest* req,
                                           v1::ParseManifestsResponse* resp) override;

 private:
  // OK for any caller when access control is off; else the caller must have an identity.
  absl::Status Authenticated(grpc::CallbackServerContext& rpc) const;

  ServiceContext* const ctx_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_QUEUE_SERVICE_H_
