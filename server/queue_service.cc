#include "server/queue_service.h"

#include "common/status.h"
#include "server/request_checks.h"

namespace admitd {
namespace {

grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* rpc, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* QueueServiceImpl::Apply(grpc::CallbackServerContext* rpc,
                                                  const v1::ApplyRequest* req,
                                                  v1::ApplyResponse* resp) {
  if (absl::Status s = CheckApplyRequest(*req); !s.ok()) return Refuse(rpc, s);
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time now) { return e.Apply(*req, now); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Get(grpc::CallbackServerContext* rpc,
                                                const v1::GetObjectRequest* req,
                                                v1::QueueObject* resp) {
  if (absl::Status s = CheckGetObjectRequest(*req); !s.ok()) return Refuse(rpc, s);
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time) { return e.Get(*req); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::List(grpc::CallbackServerContext* rpc,
                                                 const v1::ListObjectsRequest* req,
                                                 v1::ListObjectsResponse* resp) {
  if (absl::Status s = CheckQueueKind(req->kind()); !s.ok()) return Refuse(rpc, s);
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time) { return e.List(*req); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Delete(grpc::CallbackServerContext* rpc,
                                                   const v1::DeleteObjectRequest* req,
                                                   v1::DeleteObjectResponse* resp) {
  if (absl::Status s = CheckDeleteObjectRequest(*req); !s.ok()) return Refuse(rpc, s);
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::DeleteObjectResponse> {
                    ADMITD_RETURN_IF_ERROR(e.Delete(*req, now));
                    return v1::DeleteObjectResponse();
                  });
}

grpc::ServerUnaryReactor* QueueServiceImpl::RunSchedulingCycles(
    grpc::CallbackServerContext* rpc, const v1::RunSchedulingCyclesRequest* req,
    v1::RunSchedulingCyclesResponse* resp) {
  if (absl::Status s = CheckRunSchedulingCyclesRequest(*req); !s.ok()) return Refuse(rpc, s);
  if (req->advance_clock_seconds() > 0 && !ctx_->sequencer->manual_clock()) {
    return Refuse(rpc, ErrorWithReason(absl::StatusCode::kFailedPrecondition, "NO_MANUAL_CLOCK",
                                       "advance_clock_seconds needs a server started with "
                                       "--manual-clock"));
  }
  const int count = req->count() == 0 ? 1 : req->count();
  Sequencer* sequencer = ctx_->sequencer;
  const absl::Duration advance = absl::Seconds(req->advance_clock_seconds());
  return Dispatch(
      ctx_, rpc, resp,
      [count, sequencer, advance](
          engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::RunSchedulingCyclesResponse> {
        v1::RunSchedulingCyclesResponse out;
        if (advance > absl::ZeroDuration()) {
          ADMITD_RETURN_IF_ERROR(sequencer->AdvanceClock(advance));
          now += advance;
        }
        // Timed work that fell due runs first, as the sequencer does in automatic mode.
        if (e.NextDeadline() <= now) e.Tick(now);
        for (int i = 0; i < count; ++i) {
          engine::CycleStats stats = e.RunCycle(now);
          out.set_cycles_run(out.cycles_run() + 1);
          out.set_admitted(out.admitted() + stats.admitted);
          out.set_attempted(out.attempted() + stats.heads);
        }
        return out;
      },
      [](engine::Engine& e, v1::RunSchedulingCyclesResponse* out) {
        out->set_revision(e.revision());
      });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Import(grpc::CallbackServerContext* rpc,
                                                   const v1::ImportRequest* req,
                                                   v1::ImportResponse* resp) {
  if (absl::Status s = CheckImportRequest(*req); !s.ok()) return Refuse(rpc, s);
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time now) { return e.Import(*req, now); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Ping(grpc::CallbackServerContext* rpc,
                                                 const v1::PingRequest*, v1::PingResponse*) {
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace admitd
