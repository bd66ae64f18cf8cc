#include "server/queue_service.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace admitd {
namespace {

constexpr int kMaxCyclesPerCall = 100000;

absl::Status CheckKind(v1::ObjectKind kind) {
  if (kind == v1::OBJECT_KIND_UNSPECIFIED || kind == v1::OBJECT_KIND_WORKLOAD ||
      !v1::ObjectKind_IsValid(kind)) {
    return InvalidArgument(
        {{"kind", absl::StrCat("must be one of OBJECT_KIND_RESOURCE_FLAVOR, OBJECT_KIND_COHORT, "
                               "OBJECT_KIND_CLUSTER_QUEUE, OBJECT_KIND_LOCAL_QUEUE, "
                               "OBJECT_KIND_WORKLOAD_PRIORITY_CLASS, OBJECT_KIND_ADMISSION_CHECK "
                               "(workloads are served by AdmissionService)")}});
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* rpc, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* QueueServiceImpl::Apply(grpc::CallbackServerContext* rpc,
                                                  const v1::ApplyRequest* req,
                                                  v1::ApplyResponse* resp) {
  if (req->object().kind_case() == v1::QueueObject::KIND_NOT_SET) {
    return Refuse(rpc, InvalidArgument({{"object", "must hold one queue object (resource_flavor, "
                                                   "cohort, cluster_queue, local_queue, "
                                                   "workload_priority_class or "
                                                   "admission_check)"}}));
  }
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time now) { return e.Apply(*req, now); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Get(grpc::CallbackServerContext* rpc,
                                                const v1::GetObjectRequest* req,
                                                v1::QueueObject* resp) {
  if (absl::Status s = CheckKind(req->kind()); !s.ok()) return Refuse(rpc, s);
  if (req->name().empty()) return Refuse(rpc, InvalidArgument({{"name", "is required"}}));
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time) { return e.Get(*req); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::List(grpc::CallbackServerContext* rpc,
                                                 const v1::ListObjectsRequest* req,
                                                 v1::ListObjectsResponse* resp) {
  if (absl::Status s = CheckKind(req->kind()); !s.ok()) return Refuse(rpc, s);
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time) { return e.List(*req); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Delete(grpc::CallbackServerContext* rpc,
                                                   const v1::DeleteObjectRequest* req,
                                                   v1::DeleteObjectResponse* resp) {
  if (absl::Status s = CheckKind(req->kind()); !s.ok()) return Refuse(rpc, s);
  if (req->name().empty()) return Refuse(rpc, InvalidArgument({{"name", "is required"}}));
  return Dispatch(ctx_, rpc, resp,
                  [req](engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::DeleteObjectResponse> {
                    ADMITD_RETURN_IF_ERROR(e.Delete(*req, now));
                    return v1::DeleteObjectResponse();
                  });
}

grpc::ServerUnaryReactor* QueueServiceImpl::RunSchedulingCycles(
    grpc::CallbackServerContext* rpc, const v1::RunSchedulingCyclesRequest* req,
    v1::RunSchedulingCyclesResponse* resp) {
  if (req->count() < 0 || req->count() > kMaxCyclesPerCall) {
    return Refuse(rpc, InvalidArgument({{"count", absl::StrCat("must be between 0 and ",
                                                               kMaxCyclesPerCall)}}));
  }
  if (req->advance_clock_seconds() < 0) {
    return Refuse(rpc, InvalidArgument({{"advance_clock_seconds", "must not be negative"}}));
  }
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
  if (req->workloads().empty()) {
    return Refuse(rpc, InvalidArgument({{"workloads", "Required value: at least one workload"}}));
  }
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
