#include "server/admission_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/access_control.h"
#include "server/grpc_status.h"
#include "server/request_checks.h"
#include "server/watch_reactor.h"

namespace admitd {
namespace {

// Answers with the workload's state after the batch's scheduling cycles, lent from the engine's
// snapshot (shared with the batch's watch events) instead of copied. The engine call answered
// with Answer::kReference, so the response names the workload and holds nothing else.
template <typename Response>
void LendSnapshot(engine::Engine& e, LendingReactor* reactor, Response* resp) {
  const v1::ObjectMeta& meta = resp->workload().metadata();
  std::shared_ptr<const v1::Workload> now = e.WorkloadSnapshot(meta.namespace_(), meta.name());
  if (now != nullptr) reactor->Lend(std::move(now), resp);
}

// Replaces the workload in a response with its state after the batch's scheduling cycles.
// A workload the cycles did not touch (same resource_version) is left as it is: copying it again
// would only cost time.
template <typename Response>
void Refresh(engine::Engine& e, Response* resp) {
  const v1::ObjectMeta& meta = resp->workload().metadata();
  const v1::Workload* now = e.FindWorkload(meta.namespace_(), meta.name());
  if (now != nullptr && now->metadata().resource_version() != meta.resource_version()) {
    *resp->mutable_workload() = *now;
  }
}

// Runs `call` when the gate allows the named workload (or it does not exist: the engine then
// answers NOT_FOUND).
template <typename Call>
auto Gated(WorkloadGate gate, std::string ns, std::string name, Call call) {
  return [gate = std::move(gate), ns = std::move(ns), name = std::move(name),
          call = std::move(call)](engine::Engine& e, absl::Time now) -> decltype(call(e, now)) {
    if (const v1::Workload* wl = e.FindWorkload(ns, name); wl != nullptr) {
      ADMITD_RETURN_IF_ERROR(gate.Allows(*wl));
    }
    return call(e, now);
  };
}

}  // namespace

grpc::ServerUnaryReactor* AdmissionServiceImpl::Submit(grpc::CallbackServerContext* rpc,
                                                       const v1::SubmitRequest* req,
                                                       v1::SubmitResponse* resp) {
  if (absl::Status s = CheckSubmitRequest(*req); !s.ok()) return Refuse(rpc, s);
  if (absl::StatusOr<auth::Identity> caller = CheckCall(
          ctx_->access, *rpc,
          {auth::Verb::kSubmit, auth::Resource::kWorkloads, req->workload().metadata().namespace_(),
           ClusterOf(req->workload())});
      !caller.ok()) {
    return Refuse(rpc, caller.status());
  }
  // The workload is moved out of the request rather than copied: gRPC allocated the request
  // as a mutable message, and nothing reads it after the engine took it.
  auto* request = const_cast<v1::SubmitRequest*>(req);
  auto* reactor = new LendingReactor();
  return Dispatch(
      ctx_, rpc, {"AdmissionService/Submit"}, resp,
      [request](engine::Engine& e, absl::Time now) {
        return e.Submit(std::move(*request), now, engine::Engine::Answer::kReference);
      },
      [reactor](engine::Engine& e, v1::SubmitResponse* r) { LendSnapshot(e, reactor, r); },
      reactor);
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::Admit(grpc::CallbackServerContext* rpc,
                                                      const v1::AdmitRequest* req,
                                                      v1::AdmitResponse* resp) {
  absl::Duration wait;
  if (absl::Status s = CheckAdmitRequest(*req, &wait); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kGet, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  if (!req->wait() || req->dry_run()) {
    // Described once to surface errors (NOT_FOUND), then again after the batch's cycles.
    return Dispatch(
        ctx_, rpc, {"AdmissionService/Admit", IntakeCall::kRead}, resp,
        Gated(*std::move(gate), req->namespace_(), req->name(),
              [req](engine::Engine& e, absl::Time now) { return e.Describe(*req, now); }),
        [req](engine::Engine& e, v1::AdmitResponse* out) {
          if (auto d = e.Describe(*req, absl::Now()); d.ok()) *out = *std::move(d);
        });
  }
  // Wait: answer when the workload settles or the deadline passes, whichever comes first.
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  if (absl::Status taken = TakeCall(ctx_, {"AdmissionService/Admit", IntakeCall::kRead});
      !taken.ok()) {
    reactor->Finish(ToGrpcStatus(taken));
    return reactor;
  }
  ServiceContext* ctx = ctx_;
  absl::Time deadline = std::min(absl::Now() + wait, absl::FromChrono(rpc->deadline()));
  std::string key = absl::StrCat(req->namespace_(), "/", req->name());
  Sequencer* sequencer = ctx_->sequencer;
  // A read: prepare looks the workload up and registers the waiter, which answers once the
  // workload settles (or at the deadline); respond answers only a refusal. The call stops
  // counting as waiting for the sequencer once its waiter is registered.
  auto error = std::make_shared<absl::Status>(absl::UnknownError("not applied"));
  Command command;
  command.apply = [](engine::Engine&, absl::Time) {};
  command.prepare = [=, gate = *std::move(gate)](engine::Engine& e) {
    if (const v1::Workload* wl = e.FindWorkload(req->namespace_(), req->name()); wl != nullptr) {
      if (absl::Status allowed = gate.Allows(*wl); !allowed.ok()) {
        *error = allowed;
        return;
      }
    }
    absl::StatusOr<v1::AdmitResponse> first = e.Describe(*req, absl::Now());
    *error = first.status();
    if (!first.ok()) return;
    sequencer->WaitForWorkload(key, deadline, [=](engine::Engine& e2, bool /*timed_out*/) {
      absl::StatusOr<v1::AdmitResponse> now = e2.Describe(*req, absl::Now());
      if (now.ok()) *resp = *std::move(now);
      reactor->Finish(now.ok() ? grpc::Status::OK : ToGrpcStatus(now.status()));
    });
  };
  command.respond = [=](const absl::Status& commit) {
    if (!error->ok()) {
      reactor->Finish(ToGrpcStatus(error->code() == absl::StatusCode::kUnknown && !commit.ok()
                                       ? commit
                                       : *error));
    }
    ReleaseCall(ctx);
  };
  sequencer->Enqueue(std::move(command));
  return reactor;
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::ReleaseQuota(grpc::CallbackServerContext* rpc,
                                                             const v1::ReleaseQuotaRequest* req,
                                                             v1::ReleaseQuotaResponse* resp) {
  if (absl::Status s = CheckReleaseQuotaRequest(*req); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kRelease, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  auto* reactor = new LendingReactor();
  return Dispatch(
      ctx_, rpc, {"AdmissionService/ReleaseQuota", IntakeCall::kRelease}, resp,
      Gated(*std::move(gate), req->namespace_(), req->name(),
            [req](engine::Engine& e, absl::Time now) {
              return e.ReleaseQuota(*req, now, engine::Engine::Answer::kReference);
            }),
      [reactor](engine::Engine& e, v1::ReleaseQuotaResponse* r) { LendSnapshot(e, reactor, r); },
      reactor);
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::Get(grpc::CallbackServerContext* rpc,
                                                    const v1::GetWorkloadRequest* req,
                                                    v1::Workload* resp) {
  if (absl::Status s = CheckWorkloadName(req->namespace_(), req->name()); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kGet, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(ctx_, rpc, {"AdmissionService/Get", IntakeCall::kRead}, resp,
                  Gated(*std::move(gate), req->namespace_(), req->name(),
                        [req](engine::Engine& e, absl::Time) { return e.GetWorkload(*req); }));
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::List(grpc::CallbackServerContext* rpc,
                                                     const v1::ListWorkloadsRequest* req,
                                                     v1::ListWorkloadsResponse* resp) {
  absl::StatusOr<auth::Identity> caller = CheckCall(
      ctx_->access, *rpc, {auth::Verb::kList, auth::Resource::kWorkloads, req->namespace_(), ""});
  if (!caller.ok() && caller.status().code() == absl::StatusCode::kPermissionDenied &&
      ctx_->access != nullptr) {
    // Bound to clusters, the caller may list its clusters' workloads of the namespace.
    absl::StatusOr<WorkloadGate> gate =
        WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kList, req->namespace_());
    if (gate.ok()) caller = gate->identity();
  }
  if (!caller.ok()) return Refuse(rpc, caller.status());
  std::shared_ptr<const auth::Scope> scope =
      ctx_->access == nullptr
          ? nullptr
          : ctx_->access->ScopeOf(*caller, auth::Verb::kList, auth::Resource::kWorkloads);
  return Dispatch(ctx_, rpc, {"AdmissionService/List", IntakeCall::kRead}, resp,
                  [req, scope](engine::Engine& e,
                               absl::Time) -> absl::StatusOr<v1::ListWorkloadsResponse> {
                    absl::StatusOr<v1::ListWorkloadsResponse> out = e.ListWorkloads(*req);
                    if (!out.ok() || scope == nullptr || scope->AllowsEverything()) return out;
                    // A page keeps its token; only what the caller may read is in it.
                    auto* workloads = out->mutable_workloads();
                    for (int i = workloads->size() - 1; i >= 0; --i) {
                      const v1::Workload& wl = workloads->Get(i);
                      if (!scope->Allows(wl.metadata().namespace_(), ClusterOf(wl))) {
                        workloads->DeleteSubrange(i, 1);
                      }
                    }
                    return out;
                  });
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::Delete(grpc::CallbackServerContext* rpc,
                                                       const v1::DeleteWorkloadRequest* req,
                                                       v1::DeleteWorkloadResponse* resp) {
  if (absl::Status s = CheckWorkloadName(req->namespace_(), req->name()); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kDelete, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(
      ctx_, rpc, {"AdmissionService/Delete", IntakeCall::kRelease}, resp,
      Gated(*std::move(gate), req->namespace_(), req->name(),
            [req](engine::Engine& e,
                  absl::Time now) -> absl::StatusOr<v1::DeleteWorkloadResponse> {
              ADMITD_RETURN_IF_ERROR(e.DeleteWorkload(*req, now));
              return v1::DeleteWorkloadResponse();
            }));
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::Resize(grpc::CallbackServerContext* rpc,
                                                       const v1::ResizeRequest* req,
                                                       v1::ResizeResponse* resp) {
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kResize, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(
      ctx_, rpc, {"AdmissionService/Resize"}, resp,
      [req, gate = *std::move(gate)](engine::Engine& e,
                                     absl::Time now) -> absl::StatusOr<v1::ResizeResponse> {
        for (const v1::Workload* wl : e.ResizeTargets(*req)) ADMITD_RETURN_IF_ERROR(gate.Allows(*wl));
        return e.Resize(*req, now);
      },
      [](engine::Engine& e, v1::ResizeResponse* r) {
        // Answer with the workloads as they stand after the batch's scheduling cycles; those
        // the cycles finished (a slice replaced by its admitted successor) are no longer live.
        google::protobuf::RepeatedPtrField<v1::Workload> live;
        for (v1::Workload& wl : *r->mutable_workloads()) {
          v1::GetWorkloadRequest get;
          get.set_namespace_(wl.metadata().namespace_());
          get.set_name(wl.metadata().name());
          absl::StatusOr<v1::Workload> now = e.GetWorkload(get);
          if (!now.ok()) continue;
          const bool finished = std::any_of(
              now->status().conditions().begin(), now->status().conditions().end(),
              [](const v1::Condition& c) { return c.type() == "Finished" && c.status() == "True"; });
          if (!finished) *live.Add() = *std::move(now);
        }
        r->mutable_workloads()->Swap(&live);
      });
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::SetActive(grpc::CallbackServerContext* rpc,
                                                          const v1::SetActiveRequest* req,
                                                          v1::SetActiveResponse* resp) {
  if (absl::Status s = CheckWorkloadName(req->namespace_(), req->name()); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kSetActive, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(
      ctx_, rpc, {"AdmissionService/SetActive"}, resp,
      Gated(*std::move(gate), req->namespace_(), req->name(),
            [req](engine::Engine& e, absl::Time now) { return e.SetActive(*req, now); }),
      Refresh<v1::SetActiveResponse>);
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::ReportPodsReady(
    grpc::CallbackServerContext* rpc, const v1::ReportPodsReadyRequest* req,
    v1::ReportPodsReadyResponse* resp) {
  if (absl::Status s = CheckWorkloadName(req->namespace_(), req->name()); !s.ok()) return Refuse(rpc, s);
  // Readiness is the job's own report about its pods: allowed to whoever may release its quota.
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kRelease, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(
      ctx_, rpc, {"AdmissionService/ReportPodsReady"}, resp,
      Gated(*std::move(gate), req->namespace_(), req->name(),
            [req](engine::Engine& e, absl::Time now) { return e.ReportPodsReady(*req, now); }),
      Refresh<v1::ReportPodsReadyResponse>);
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::SetAdmissionCheckState(
    grpc::CallbackServerContext* rpc, const v1::SetAdmissionCheckStateRequest* req,
    v1::SetAdmissionCheckStateResponse* resp) {
  if (absl::Status s = CheckWorkloadName(req->namespace_(), req->name()); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<WorkloadGate> gate = WorkloadGate::Open(
      ctx_->access, *rpc, auth::Verb::kSetAdmissionCheckState, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(
      ctx_, rpc, {"AdmissionService/SetAdmissionCheckState"}, resp,
      Gated(*std::move(gate), req->namespace_(), req->name(),
            [req](engine::Engine& e, absl::Time now) {
              return e.SetAdmissionCheckState(*req, now);
            }),
      Refresh<v1::SetAdmissionCheckStateResponse>);
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::UpdateRemoteJob(
    grpc::CallbackServerContext* rpc, const v1::UpdateRemoteJobRequest* req,
    v1::UpdateRemoteJobResponse* resp) {
  if (absl::Status s = CheckWorkloadName(req->namespace_(), req->name()); !s.ok()) return Refuse(rpc, s);
  // Carrying a job between clusters is part of submitting it.
  absl::StatusOr<WorkloadGate> gate =
      WorkloadGate::Open(ctx_->access, *rpc, auth::Verb::kSubmit, req->namespace_());
  if (!gate.ok()) return Refuse(rpc, gate.status());
  return Dispatch(
      ctx_, rpc, {"AdmissionService/UpdateRemoteJob"}, resp,
      Gated(*std::move(gate), req->namespace_(), req->name(),
            [req](engine::Engine& e, absl::Time now) { return e.UpdateRemoteJob(*req, now); }),
      Refresh<v1::UpdateRemoteJobResponse>);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* AdmissionServiceImpl::Watch(
    grpc::CallbackServerContext* rpc, const grpc::ByteBuffer* req) {
  return WatchReactor::Start(ctx_, *req, rpc);
}

}  // namespace admitd
