// resize_bench: Resize-to-admitted latency of elastic scale-ups among many running workloads,
// next to Submit-to-admitted latency of a fresh workload of the same size, measured in the same
// run against the same server.
//
//   build/integration/resize_bench [--running 10000] [--ops 2000] [--inflight 8]
//
// The server runs in process with its RocksDB store in a temporary directory, fsync on, scheduling
// automatically. `--running` elastic jobs of one 1-cpu pod are submitted and admitted first. Then
// `--inflight` clients each scale a job of their own from 1 to 2 pods (a new workload slice that
// replaces the admitted one) and wait for a Watch stream to show the slice admitted; then the
// same clients submit fresh 2-pod workloads and wait the same way. A latency runs from sending
// the RPC to the Watch event that shows the workload admitted.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "integration/fixtures.h"
#include "common/log.h"
#include "server/server.h"

namespace admitd {
namespace {

struct Args {
  int running = 10000;
  int ops = 2000;
  int inflight = 8;
};

bool IsAdmitted(const v1::Workload& wl) {
  bool admitted = false, finished = false;
  for (const auto& c : wl.status().conditions()) {
    if (c.type() == "Admitted") admitted = c.status() == "True";
    if (c.type() == "Finished") finished = c.status() == "True";
  }
  return admitted && !finished && wl.status().has_admission();
}

// Watches every workload event and remembers when each workload was first seen admitted.
class AdmissionTimes {
 public:
  explicit AdmissionTimes(testing::Client& client) {
    v1::WatchRequest req;
    req.add_kinds(v1::OBJECT_KIND_WORKLOAD);
    reader_ = client.admission->Watch(&ctx_, req);
    v1::WatchEvent first;
    reader_->Read(&first);  // SYNCED: live events follow
    thread_ = std::thread([this] {
      v1::WatchEvent event;
      while (reader_->Read(&event)) {
        if (!event.has_workload() || !IsAdmitted(event.workload())) continue;
        const absl::Time now = absl::Now();
        absl::MutexLock lock(&mu_);
        admitted_.try_emplace(event.workload().metadata().name(), now);
      }
    });
  }
  ~AdmissionTimes() {
    ctx_.TryCancel();
    thread_.join();
    reader_->Finish();
  }
  // Waits until `name` is admitted; returns when it was seen.
  absl::Time Wait(const std::string& name) {
    absl::MutexLock lock(&mu_);
    auto seen = [&] { return admitted_.count(name) > 0; };
    mu_.Await(absl::Condition(&seen));
    return admitted_.at(name);
  }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader_;
  std::thread thread_;
  absl::Mutex mu_;
  std::map<std::string, absl::Time> admitted_;
};

struct Stats {
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  size_t n = 0;
  int errors = 0;
};

Stats Summarize(std::vector<double> ms, int errors) {
  Stats s;
  s.errors = errors;
  s.n = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.p50_ms = ms[ms.size() / 2];
  s.p99_ms = ms[ms.size() * 99 / 100];
  s.max_ms = ms.back();
  return s;
}

// `inflight` threads run `op(i)` for i in [0, ops), each returning a latency in ms (< 0: error).
Stats Measure(int ops, int inflight, const std::function<double(int)>& op) {
  absl::Mutex mu;
  std::vector<double> ms;
  int errors = 0;
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < inflight; ++t) {
    threads.emplace_back([&] {
      for (int i = next.fetch_add(1); i < ops; i = next.fetch_add(1)) {
        const double d = op(i);
        absl::MutexLock lock(&mu);
        if (d < 0) {
          ++errors;
        } else {
          ms.push_back(d);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return Summarize(std::move(ms), errors);
}

void Run(const Args& args) {
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                       "/resize_bench_", getpid());
  std::filesystem::remove_all(dir);
  Config config;
  config.listen = "127.0.0.1:0";
  config.data_dir = dir;
  auto server = AdmitdServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
    return;
  }
  testing::Client client((*server)->address());
  auto apply = [&](const v1::ApplyRequest& req) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    client.queues->Apply(&ctx, req, &resp);
  };
  apply(testing::Flavor("default"));
  apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "100000000"}}));
  apply(testing::LocalQueue("bench", "lq", "cq"));

  // The running workloads.
  const absl::Time fill_start = absl::Now();
  {
    Stats fill = Measure(args.running, 32, [&](int j) {
      grpc::ClientContext ctx;
      v1::SubmitRequest req;
      *req.mutable_workload() = testing::ElasticJobWorkload("bench", j, 1);
      v1::SubmitResponse resp;
      return client.admission->Submit(&ctx, req, &resp).ok() ? 0.0 : -1.0;
    });
    for (int admitted = 0; admitted < args.running - fill.errors;) {
      grpc::ClientContext ctx;
      v1::GetObjectRequest get;
      get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
      get.set_name("cq");
      v1::QueueObject cq;
      if (client.queues->Get(&ctx, get, &cq).ok()) {
        admitted = cq.cluster_queue().status().admitted_workloads();
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    std::printf("%d elastic workloads submitted and admitted in %.1fs (%d errors)\n", args.running,
                absl::ToDoubleSeconds(absl::Now() - fill_start), fill.errors);
  }

  AdmissionTimes times(client);
  const int ops = std::min(args.ops, args.running);
  Stats resize = Measure(ops, args.inflight, [&](int j) {
    grpc::ClientContext ctx;
    v1::ResizeRequest req;
    req.set_namespace_("bench");
    req.mutable_job()->set_api_version("batch/v1");
    req.mutable_job()->set_kind("Job");
    req.mutable_job()->set_name(absl::StrCat("job-", j));
    req.mutable_job()->set_uid(absl::StrCat("uid-", j));
    req.set_generation(2);
    v1::PodSetCount* ps = req.add_pod_sets();
    ps->set_name("main");
    ps->set_count(2);
    v1::ResizeResponse resp;
    const absl::Time sent = absl::Now();
    grpc::Status s = client.admission->Resize(&ctx, req, &resp);
    if (!s.ok() || resp.outcome() != v1::ResizeResponse::SLICE_CREATED ||
        resp.workloads_size() == 0) {
      return -1.0;
    }
    const std::string slice = resp.workloads(resp.workloads_size() - 1).metadata().name();
    return absl::ToDoubleMilliseconds(times.Wait(slice) - sent);
  });
  Stats submit = Measure(ops, args.inflight, [&](int i) {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("bench", absl::StrCat("fresh-", i), "lq", 2, {{"cpu", "1"}});
    v1::SubmitResponse resp;
    const absl::Time sent = absl::Now();
    if (!client.admission->Submit(&ctx, req, &resp).ok()) return -1.0;
    return absl::ToDoubleMilliseconds(times.Wait(absl::StrCat("fresh-", i)) - sent);
  });
  std::printf("%-22s %8s %10s %10s %10s %7s\n", "operation", "ops", "p50_ms", "p99_ms", "max_ms",
              "errors");
  std::printf("%-22s %8zu %10.2f %10.2f %10.2f %7d\n", "resize-to-admitted", resize.n,
              resize.p50_ms, resize.p99_ms, resize.max_ms, resize.errors);
  std::printf("%-22s %8zu %10.2f %10.2f %10.2f %7d\n", "submit-to-admitted", submit.n,
              submit.p50_ms, submit.p99_ms, submit.max_ms, submit.errors);
  std::printf("(%d running workloads, inflight %d, fsync on)\n", args.running, args.inflight);
  std::fflush(stdout);
  (*server)->Shutdown(absl::Seconds(2));
  server->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace admitd

int main(int argc, char** argv) {
  admitd::Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    bool ok = false;
    if (flag == "--running") ok = absl::SimpleAtoi(value, &args.running);
    if (flag == "--ops") ok = absl::SimpleAtoi(value, &args.ops);
    if (flag == "--inflight") ok = absl::SimpleAtoi(value, &args.inflight);
    if (!ok) {
      std::fprintf(stderr, "usage: resize_bench [--running N] [--ops N] [--inflight N]\n");
      return 2;
    }
  }
  admitd::log::SetLevel(admitd::log::Level::kWarning);
  admitd::Run(args);
  return 0;
}
