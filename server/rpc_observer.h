// RpcObserver: a gRPC server interceptor that measures every call admitd serves, whatever its
// service and whether it is unary or a stream: its latency per method
// (admitd_grpc_server_handling_seconds{method}) and its outcome per method and status code
// (admitd_grpc_server_handled_total{method,code}); and, with a tracer, the call's server span,
// a child of the `traceparent` the client sent (W3C Trace Context in the gRPC metadata).
//
//   auto observer = std::make_unique<RpcObserver>(&metrics.registry(), tracer);
//   RpcObserver* calls = observer.get();     // the builder takes ownership
//   interceptors.push_back(std::move(observer));
//   ... in a handler: tracing::SpanContext span = calls->SpanOf(rpc);
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_SERVER_RPC_OBSERVER_H_
#define ADMITD_SERVER_RPC_OBSERVER_H_

#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics_registry.h"
#include "common/trace/tracer.h"

namespace admitd {

class RpcObserver final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `metrics` must outlive the observer; `tracer` may be null (no spans) or must outlive it.
  RpcObserver(MetricsRegistry* metrics, tracing::Tracer* tracer);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

  // The server span of the call `rpc` while it runs: what the work it causes links to. An
  // invalid context when the call is not traced (tracing off, not sampled, or over).
  tracing::SpanContext SpanOf(const grpc::ServerContextBase* rpc) const;

  // What one method's calls are counted under (created on its first call, kept for good).
  struct Method {
    std::string name;  // "Service/Method" without the package, e.g. "AdmissionService/Submit"
    prometheus::Histogram* latency = nullptr;
    // Indexed by grpc::StatusCode (0..16); created on first use.
    std::array<std::atomic<prometheus::Counter*>, 17> handled{};
  };

 private:
  friend class RpcInterceptor;
  Method* MethodOf(const char* full_name);
  void CountHandled(Method* method, grpc::StatusCode code);
  void Started(const grpc::ServerContextBase* rpc, const tracing::SpanContext& span);
  void Ended(const grpc::ServerContextBase* rpc);

  MetricsRegistry* const metrics_;
  tracing::Tracer* const tracer_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Method>, std::less<>> methods_ ABSL_GUARDED_BY(mu_);
  // Calls with a sampled server span, while they run.
  absl::flat_hash_map<const grpc::ServerContextBase*, tracing::SpanContext> spans_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd

#endif  // ADMITD_SERVER_RPC_OBSERVER_H_
