// Glue between gRPC callback handlers and the Sequencer: a unary RPC becomes a Command whose
// apply runs the engine call and whose respond finishes the RPC after the batch committed. A call
// is refused before it reaches the sequencer while admitd does not take calls (UNAVAILABLE) and
// when too many calls already wait (the Intake: RESOURCE_EXHAUSTED); both refusals carry a
// google.rpc.RetryInfo, which says the call was not run and may be retried after its delay.
#ifndef ADMITD_SERVER_DISPATCH_H_
#define ADMITD_SERVER_DISPATCH_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "server/grpc_status.h"
#include "server/intake.h"
#include "server/rpc_observer.h"
#include "server/sequencer.h"

namespace admitd {

// What the services share: the sequencer, and whether calls are taken (recovery has finished,
// shutdown has not begun).
struct ServiceContext {
  Sequencer* sequencer = nullptr;
  store::Store* store = nullptr;
  class WatchHub* hub = nullptr;
  class Metrics* metrics = nullptr;  // may be null
  const class AccessControl* access = nullptr;  // null: every call allowed
  const class RpcObserver* calls = nullptr;      // null: calls are not traced
  Intake* intake = nullptr;                      // null: calls to the sequencer are not bounded
  std::atomic<bool> ready{false};
  std::atomic<bool> shutting_down{false};
  // When the last call was refused because of shutdown (absl::GetCurrentTimeNanos()), so that
  // shutdown can wait for callers to notice before it closes the connections.
  std::atomic<int64_t> last_refused_ns{0};
};

inline absl::Status NotReady() {
  return WithRetryDelay(absl::UnavailableError("admitd is recovering its state; retry shortly"),
                        absl::Milliseconds(500));
}

// OK when a new call may start; UNAVAILABLE while recovering or shutting down. A call refused
// here never reached the sequencer: it changed nothing and may be retried anywhere.
inline absl::Status CheckAccepting(ServiceContext* ctx) {
  if (ctx->shutting_down.load(std::memory_order_acquire)) {
    ctx->last_refused_ns.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
    return WithRetryDelay(
        absl::UnavailableError(
            "admitd is shutting down; the call was not run, retry it once the server is back"),
        absl::Seconds(1));
  }
  if (!ctx->ready.load(std::memory_order_acquire)) return NotReady();
  return absl::OkStatus();
}

// CheckAccepting, then the intake bound: OK when `call` may be queued for the sequencer now, and
// then it counts as waiting until ReleaseCall (after it was answered).
inline absl::Status TakeCall(ServiceContext* ctx, const IntakeCall& call) {
  if (absl::Status accepting = CheckAccepting(ctx); !accepting.ok()) return accepting;
  return ctx->intake == nullptr ? absl::OkStatus() : ctx->intake->Take(call);
}

inline void ReleaseCall(ServiceContext* ctx) {
  if (ctx->intake != nullptr) ctx->intake->Release();
}

// A unary reactor whose response may point at a workload snapshot instead of owning a copy:
// the response borrows the immutable snapshot, which the reactor keeps alive and takes back from
// the response in OnDone, before gRPC destroys the response. It deletes itself then.
class LendingReactor final : public grpc::ServerUnaryReactor {
 public:
  // Makes `*response`'s workload field point at `workload` (dropping what it held). Call at most
  // once, before the call is finished.
  template <typename Response>
  void Lend(std::shared_ptr<const v1::Workload> workload, Response* response) {
    response->unsafe_arena_set_allocated_workload(const_cast<v1::Workload*>(workload.get()));
    lent_ = std::move(workload);
    take_back_ = [response] { response->unsafe_arena_release_workload(); };
  }

  void OnDone() override {
    if (take_back_) take_back_();
    delete this;
  }

  // OnDone only lets go of a pointer and frees the reactor, so gRPC may run it on the thread that
  // finished the call. Otherwise it hands every call's OnDone to its executor thread: one more
  // wake-up and context switch per answered Submit and ReleaseQuota. (gRPC's own default unary
  // reactor says the same of itself.)
  bool InternalInlineable() override { return true; }

 private:
  std::shared_ptr<const v1::Workload> lent_;
  std::function<void()> take_back_;
};

// Runs `call(engine, now) -> absl::StatusOr<Response>` in the sequencer and answers with its
// result once the batch is durable. `refine(engine, &response)` (optional) runs after the
// batch's scheduling cycles, to answer with the freshest state. The call is answered through
// `reactor`, or through the context's default reactor when it is null. `what` names the method
// and says whether it only reads, for the intake bound.
template <typename Response, typename Call, typename Refine>
grpc::ServerUnaryReactor* Dispatch(ServiceContext* ctx, grpc::CallbackServerContext* rpc,
                                   const IntakeCall& what, Response* response, Call call,
                                   Refine refine, grpc::ServerUnaryReactor* reactor = nullptr) {
  if (reactor == nullptr) reactor = rpc->DefaultReactor();
  if (absl::Status taken = TakeCall(ctx, what); !taken.ok()) {
    reactor->Finish(ToGrpcStatus(taken));
    return reactor;
  }
  auto result = std::make_shared<absl::StatusOr<Response>>(absl::UnknownError("not applied"));
  Command command;
  command.apply = [result, call = std::move(call)](engine::Engine& engine, absl::Time now) {
    *result = call(engine, now);
  };
  command.prepare = [result, response, refine = std::move(refine)](engine::Engine& engine) {
    if (!result->ok()) return;
    *response = std::move(**result);
    refine(engine, response);
  };
  if (ctx->calls != nullptr) command.trace = ctx->calls->SpanOf(rpc);
  // Answered on the committer thread, right after the batch is durable. (A thread of its own for
  // the answers' socket writes, handed each batch, cost more in wake-ups than it saved.)
  command.respond = [result, reactor, ctx](const absl::Status& commit) {
    // A call the engine refused changed nothing, so its own error is the answer even if the
    // batch failed; a call that never ran gets the reason it did not.
    const bool never_ran = result->status().code() == absl::StatusCode::kUnknown &&
                           result->status().message() == "not applied";
    grpc::Status status = never_ran        ? ToGrpcStatus(commit)
                          : !result->ok()  ? ToGrpcStatus(result->status())
                          : !commit.ok()   ? ToGrpcStatus(commit)
                                           : grpc::Status::OK;
    reactor->Finish(status);
    ReleaseCall(ctx);
  };
  ctx->sequencer->Enqueue(std::move(command));
  return reactor;
}

template <typename Response, typename Call>
grpc::ServerUnaryReactor* Dispatch(ServiceContext* ctx, grpc::CallbackServerContext* rpc,
                                   const IntakeCall& what, Response* response, Call call) {
  return Dispatch(ctx, rpc, what, response, std::move(call), [](engine::Engine&, Response*) {});
}

}  // namespace admitd

#endif  // ADMITD_SERVER_DISPATCH_H_
