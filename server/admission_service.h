// AdmissionService: the workload lifecycle and Watch, as thin adapters over the sequencer.
#ifndef ADMITD_SERVER_ADMISSION_SERVICE_H_
#define ADMITD_SERVER_ADMISSION_SERVICE_H_

#include "admitd/v1/admission_service.grpc.pb.h"
#include "server/dispatch.h"

namespace admitd {

// Watch is a raw method: its stream writes events already encoded (see WatchReactor).
class AdmissionServiceImpl final : public v1::AdmissionService::WithRawCallbackMethod_Watch<
                                       v1::AdmissionService::CallbackService> {
 public:
  explicit AdmissionServiceImpl(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* rpc, const v1::SubmitRequest* req,
                                   v1::SubmitResponse* resp) override;
  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* rpc, const v1::AdmitRequest* req,
                                  v1::AdmitResponse* resp) override;
  grpc::ServerUnaryReactor* ReleaseQuota(grpc::CallbackServerContext* rpc,
                                         const v1::ReleaseQuotaRequest* req,
                                         v1::ReleaseQuotaResponse* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* rpc,
                                const v1::GetWorkloadRequest* req, v1::Workload* resp) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* rpc,
                                 const v1::ListWorkloadsRequest* req,
                                 v1::ListWorkloadsResponse* resp) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* rpc,
                                   const v1::DeleteWorkloadRequest* req,
                                   v1::DeleteWorkloadResponse* resp) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Watch(grpc::CallbackServerContext* rpc,
                                                    const grpc::ByteBuffer* req) override;
  grpc::ServerUnaryReactor* Resize(grpc::CallbackServerContext* rpc,
                                   const v1::ResizeRequest* req,
                                   v1::ResizeResponse* resp) override;
  grpc::ServerUnaryReactor* ReportPodsReady(grpc::CallbackServerContext* rpc,
                                            const v1::ReportPodsReadyRequest* req,
                                            v1::ReportPodsReadyResponse* resp) override;
  grpc::ServerUnaryReactor* SetActive(grpc::CallbackServerContext* rpc,
                                      const v1::SetActiveRequest* req,
                                      v1::SetActiveResponse* resp) override;
  grpc::ServerUnaryReactor* SetAdmissionCheckState(
      grpc::CallbackServerContext* rpc, const v1::SetAdmissionCheckStateRequest* req,
      v1::SetAdmissionCheckStateResponse* resp) override;
  grpc::ServerUnaryReactor* UpdateRemoteJob(grpc::CallbackServerContext* rpc,
                                            const v1::UpdateRemoteJobRequest* req,
                                            v1::UpdateRemoteJobResponse* resp) override;

 private:
  ServiceContext* const ctx_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_ADMISSION_SERVICE_H_
