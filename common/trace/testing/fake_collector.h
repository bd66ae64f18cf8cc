// FakeCollector (tests only): an OTLP/gRPC trace collector on 127.0.0.1 that keeps every span
// it receives, for tests that check what admitd, the shim or the tracer exported.
//
//   FakeCollector collector;
//   TracerOptions options;
//   options.endpoint = collector.address();
//   ... ASSERT_TRUE(collector.WaitFor([](const auto& spans) { return spans.size() >= 3; }));
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_COMMON_TRACE_TESTING_FAKE_COLLECTOR_H_
#define ADMITD_COMMON_TRACE_TESTING_FAKE_COLLECTOR_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "otlp/trace_service.grpc.pb.h"

namespace admitd::tracing {

class FakeCollector final
    : public opentelemetry::proto::collector::trace::v1::TraceService::Service {
 public:
  using OtlpSpan = opentelemetry::proto::trace::v1::Span;

  FakeCollector() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeCollector() override { server_->Shutdown(); }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  grpc::Status Export(
      grpc::ServerContext*,
      const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest* request,
      opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse*) override {
    absl::MutexLock lock(&mu_);
    ++requests_;
    for (const auto& rs : request->resource_spans()) {
      for (const auto& kv : rs.resource().attributes()) {
        if (kv.key() == "service.name") service_names_.push_back(kv.value().string_value());
      }
      for (const auto& ss : rs.scope_spans()) {
        for (const OtlpSpan& s : ss.spans()) spans_.push_back(s);
      }
    }
    return grpc::Status::OK;
  }

  std::vector<OtlpSpan> spans() const {
    absl::MutexLock lock(&mu_);
    return spans_;
  }
  std::vector<std::string> service_names() const {
    absl::MutexLock lock(&mu_);
    return service_names_;
  }
  int requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

  // Waits until `done(spans)` holds, at most `timeout`; false when it never did.
  bool WaitFor(const std::function<bool(const std::vector<OtlpSpan>&)>& done,
               absl::Duration timeout = absl::Seconds(20)) const {
    struct Check {
      const std::function<bool(const std::vector<OtlpSpan>&)>* done;
      const std::vector<OtlpSpan>* spans;
    } check{&done, &spans_};
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(
        absl::Condition(+[](Check* c) { return (*c->done)(*c->spans); }, &check), timeout);
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<OtlpSpan> spans_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> service_names_ ABSL_GUARDED_BY(mu_);
  int requests_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace admitd::tracing

#endif  // ADMITD_COMMON_TRACE_TESTING_FAKE_COLLECTOR_H_
