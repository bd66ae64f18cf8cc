#include "integration/bench/tracing_run.h"

#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "integration/bench/raw_run.h"
#include "integration/fixtures.h"
#include "otlp/trace_service.grpc.pb.h"

namespace admitd::bench {
namespace {

namespace collector = opentelemetry::proto::collector::trace::v1;

// An OTLP/gRPC collector that counts the spans it receives and keeps nothing.
class CountingCollector final : public collector::TraceService::Service {
 public:
  CountingCollector() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~CountingCollector() override { server_->Shutdown(); }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int64_t spans() const { return spans_.load(); }

  grpc::Status Export(grpc::ServerContext*, const collector::ExportTraceServiceRequest* request,
                      collector::ExportTraceServiceResponse*) override {
    int64_t n = 0;
    for (const auto& rs : request->resource_spans()) {
      for (const auto& ss : rs.scope_spans()) n += ss.spans_size();
    }
    spans_ += n;
    return grpc::Status::OK;
  }

 private:
  int port_ = 0;
  std::atomic<int64_t> spans_{0};
  std::unique_ptr<grpc::Server> server_;
};

struct TracingSetting {
  const char* name;
  std::vector<std::string> args;  // for admitd
};

}  // namespace

int RunTracingComparison(const std::string& admitd_binary,
                         const std::vector<std::string>& admitd_args, int clients,
                         absl::Duration duration) {
  char tmpl[] = "/tmp/admitd-bench-tracing-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "mkdtemp failed\n");
    return 1;
  }
  const std::string dir = tmpl;
  CountingCollector sink;
  const std::vector<TracingSetting> settings = {
      {"tracing off", {}},
      {"tracing 10 %", {"--otlp-endpoint", sink.address(), "--trace-sample-ratio", "0.1"}},
      {"tracing 100 %", {"--otlp-endpoint", sink.address(), "--trace-sample-ratio", "1"}},
  };
  std::vector<RawReport> reports;
  std::vector<int64_t> spans;
  int failed = 0;
  for (size_t i = 0; i < settings.size(); ++i) {
    std::vector<std::string> args = admitd_args;
    args.insert(args.end(), settings[i].args.begin(), settings[i].args.end());
    auto process = testing::Process::Start(admitd_binary, absl::StrCat(dir, "/data-", i), args);
    if (!process.ok()) {
      std::fprintf(stderr, "cannot start admitd (%s): %s\n", settings[i].name,
                   std::string(process.status().message()).c_str());
      std::filesystem::remove_all(dir);
      return 1;
    }
    const int64_t before = sink.spans();
    std::printf("--- %s ---\n", settings[i].name);
    RawReport report = RunRaw((*process)->address(), clients, duration, "", nullptr,
                              (*process)->pid());
    PrintRawReport(report);
    std::fflush(stdout);
    failed += report.ok() ? 0 : 1;
    reports.push_back(report);
    (*process)->Kill(SIGTERM);  // admitd flushes its last spans on the way out
    spans.push_back(sink.spans() - before);
  }
  std::filesystem::remove_all(dir);
  const RawReport& base = reports[0];
  std::printf("\n%-16s %14s %8s %18s %8s %14s\n", "setting", "null RPCs/s", "ratio",
              "workload cycles/s", "ratio", "spans received");
  for (size_t i = 0; i < reports.size(); ++i) {
    const RawReport& r = reports[i];
    std::printf("%-16s %14.0f %8.3f %18.0f %8.3f %14lld\n", settings[i].name,
                r.pings_per_second,
                base.pings_per_second > 0 ? r.pings_per_second / base.pings_per_second : 0,
                r.workloads_per_second,
                base.workloads_per_second > 0 ? r.workloads_per_second / base.workloads_per_second
                                              : 0,
                static_cast<long long>(spans[i]));
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace admitd::bench
