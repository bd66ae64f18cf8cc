#include "server/rpc_observer.h"

#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace admitd {

namespace {

constexpr const char* kCodeNames[17] = {
    "OK",          "CANCELLED",        "UNKNOWN",           "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",  "ALREADY_EXISTS",    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",      "UNAVAILABLE",       "DATA_LOSS",
    "UNAUTHENTICATED"};

// "/admitd.v1.AdmissionService/Submit" -> "AdmissionService/Submit".
std::string ShortName(std::string_view full) {
  if (!full.empty() && full[0] == '/') full.remove_prefix(1);
  const size_t slash = full.find('/');
  const size_t dot = full.rfind('.', slash);
  if (dot != std::string_view::npos && slash != std::string_view::npos) full.remove_prefix(dot + 1);
  return std::string(full);
}

}  // namespace

// One call: its start, and its server span while it runs.
class RpcInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcInterceptor(RpcObserver* observer, RpcObserver::Method* method,
                 const grpc::ServerContextBase* rpc)
      : observer_(observer), method_(method), rpc_(rpc), start_(absl::Now()) {}
  ~RpcInterceptor() override {
    // A call that ends without a status (its connection went away) still ends its span.
    if (span_.has_value()) {
      observer_->Ended(rpc_);
      span_->SetStatus(tracing::StatusCode::kError, "the call ended without a status");
    }
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (observer_->tracer_ != nullptr &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      StartSpan(*methods->GetRecvInitialMetadata());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      method_->latency->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
      observer_->CountHandled(method_, status.error_code());
      if (span_.has_value()) {
        span_->SetAttribute("rpc.grpc.status_code", static_cast<int64_t>(status.error_code()));
        if (!status.ok()) {
          span_->SetStatus(tracing::StatusCode::kError, status.error_message());
        }
        observer_->Ended(rpc_);
        span_->End();
        span_.reset();
      }
    }
    methods->Proceed();
  }

 private:
  void StartSpan(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
    std::optional<tracing::SpanContext> parent;
    auto tp = metadata.find("traceparent");
    if (tp != metadata.end()) {
      parent = tracing::ParseTraceparent(std::string_view(tp->second.data(), tp->second.size()));
      auto ts = metadata.find("tracestate");
      if (parent && ts != metadata.end() && ts->second.size() <= 512) {
        parent->trace_state.assign(ts->second.data(), ts->second.size());
      }
    }
    tracing::SpanStart how;
    how.kind = tracing::SpanKind::kServer;
    how.parent = parent ? &*parent : nullptr;
    how.start = start_;
    tracing::Span span = observer_->tracer_->StartSpan(method_->name, how);
    if (!span.recording()) return;
    span.SetAttribute("rpc.system", std::string("grpc"));
    const size_t slash = method_->name.find('/');
    span.SetAttribute("rpc.service", absl::StrCat("admitd.v1.", method_->name.substr(0, slash)));
    span.SetAttribute("rpc.method", method_->name.substr(slash + 1));
    observer_->Started(rpc_, span.context());
    span_.emplace(std::move(span));
  }

  RpcObserver* const observer_;
  RpcObserver::Method* const method_;
  const grpc::ServerContextBase* const rpc_;
  const absl::Time start_;
  std::optional<tracing::Span> span_;
};

RpcObserver::RpcObserver(MetricsRegistry* metrics, tracing::Tracer* tracer)
    : metrics_(metrics), tracer_(tracer != nullptr && tracer->enabled() ? tracer : nullptr) {}

grpc::experimental::Interceptor* RpcObserver::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcInterceptor(this, MethodOf(info->method()), info->server_context());
}

RpcObserver::Method* RpcObserver::MethodOf(const char* full_name) {
  const std::string_view full = full_name == nullptr ? "" : full_name;
  absl::MutexLock lock(&mu_);
  auto it = methods_.find(full);
  if (it != methods_.end()) return it->second.get();
  auto method = std::make_unique<Method>();
  method->name = ShortName(full);
  method->latency = &metrics_->Histogram(
      "admitd_grpc_server_handling_seconds",
      "Time from a call's arrival to its status being sent, per method (streams: their whole "
      "life).",
      {{"method", method->name}}, kLatencyBuckets);
  return methods_.emplace(std::string(full), std::move(method)).first->second.get();
}

void RpcObserver::CountHandled(Method* method, grpc::StatusCode code) {
  const int i = static_cast<int>(code);
  if (i < 0 || i >= 17) return;
  prometheus::Counter* counter = method->handled[i].load(std::memory_order_acquire);
  if (counter == nullptr) {
    counter = &metrics_->Counter("admitd_grpc_server_handled_total",
                                 "Calls completed, per method and gRPC status code.",
                                 {{"method", method->name}, {"code", kCodeNames[i]}});
    method->handled[i].store(counter, std::memory_order_release);
  }
  counter->Increment();
}

void RpcObserver::Started(const grpc::ServerContextBase* rpc, const tracing::SpanContext& span) {
  absl::MutexLock lock(&mu_);
  spans_[rpc] = span;
}

void RpcObserver::Ended(const grpc::ServerContextBase* rpc) {
  absl::MutexLock lock(&mu_);
  spans_.erase(rpc);
}

tracing::SpanContext RpcObserver::SpanOf(const grpc::ServerContextBase* rpc) const {
  if (tracer_ == nullptr) return {};
  absl::MutexLock lock(&mu_);
  auto it = spans_.find(rpc);
  return it == spans_.end() ? tracing::SpanContext{} : it->second;
}

}  // namespace admitd
