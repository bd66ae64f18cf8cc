// multikueue_bench: MultiKueue dispatch latency, next to single-cluster admission in the same run.
//
//   build/integration/multikueue_bench [--jobs 1000] [--workers 3] [--inflight 16]
//
// Runs in process, on loopback, each server with its own RocksDB store (fsync on):
// - single: one admitd; `jobs` workloads are submitted by `inflight` concurrent clients, and each
//   one's latency is Submit sent → Admitted seen on a watch of that admitd.
// - multikueue: a manager and `workers` worker admitds (AllAtOnce); the same submissions go to
//   the manager, and each latency is Submit sent → Admitted seen on the manager's watch, which
//   is after a worker admitted a copy and the manager recorded it as the winner.
// Every ClusterQueue has room for every job, so the figures are the machinery's cost, not
// queueing for quota. Prints p50, p99, max and throughput for both, and their ratios.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "integration/fixtures.h"
#include "server/server.h"

namespace admitd {
namespace {

using testing::Client;

constexpr char kNs[] = "bench";

struct Figures {
  double p50_ms = 0, p99_ms = 0, max_ms = 0, per_second = 0;
  int admitted = 0;
};

void Die(const std::string& what) {
  std::fprintf(stderr, "multikueue_bench: %s\n", what.c_str());
  std::exit(1);
}

void Apply(Client& c, const v1::ApplyRequest& req) {
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  grpc::Status s = c.queues->Apply(&ctx, req, &resp);
  if (!s.ok()) Die("apply: " + s.error_message());
}

std::unique_ptr<AdmitdServer> Start(const std::string& dir, Config config = Config()) {
  config.listen = "127.0.0.1:0";
  config.data_dir = dir;
  absl::StatusOr<std::unique_ptr<AdmitdServer>> s = AdmitdServer::Start(config);
  if (!s.ok()) Die("start: " + s.status().ToString());
  return *std::move(s);
}

// Room for every job: `jobs` CPUs.
void Queues(Client& c, int jobs, const std::string& check = "") {
  Apply(c, testing::Flavor("default"));
  v1::ApplyRequest cq = testing::ClusterQueue("cq", {"default"}, {{"cpu", absl::StrCat(jobs)}});
  if (!check.empty()) {
    cq.mutable_object()->mutable_cluster_queue()->mutable_spec()
        ->mutable_admission_checks_strategy()->add_admission_checks()->set_name(check);
  }
  Apply(c, cq);
  Apply(c, testing::LocalQueue(kNs, "lq", "cq"));
}

// Submits `jobs` workloads from `inflight` threads and waits until a watch of `target` saw
// each admitted (or `limit` passes).
Figures Run(Client& target, int jobs, int inflight, absl::Duration limit) {
  absl::Mutex mu;
  std::map<std::string, absl::Time> sent;
  std::vector<double> latencies_ms;
  // The watch starts first, from the current revision.
  grpc::ClientContext watch_ctx;
  v1::WatchRequest wreq;
  wreq.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  wreq.set_namespace_(kNs);
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader =
      target.admission->Watch(&watch_ctx, wreq);
  std::atomic<int> admitted{0};
  std::thread watcher([&] {
    v1::WatchEvent ev;
    std::map<std::string, bool> seen;
    while (reader->Read(&ev)) {
      if (ev.type() == v1::WatchEvent::SYNCED || !ev.has_workload()) continue;
      const v1::Workload& wl = ev.workload();
      if (!testing::IsConditionTrue(wl, "Admitted") || seen[wl.metadata().name()]) continue;
      seen[wl.metadata().name()] = true;
      const absl::Time now = absl::Now();
      absl::MutexLock lock(&mu);
      auto it = sent.find(wl.metadata().name());
      if (it != sent.end()) latencies_ms.push_back(absl::ToDoubleMilliseconds(now - it->second));
      ++admitted;
    }
  });
  absl::SleepFor(absl::Milliseconds(100));  // the watch is open
  const absl::Time start = absl::Now();
  std::atomic<int> next{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < inflight; ++t) {
    submitters.emplace_back([&] {
      for (int i = next.fetch_add(1); i < jobs; i = next.fetch_add(1)) {
        v1::SubmitRequest req;
        const std::string name = absl::StrCat("job-", i);
        *req.mutable_workload() = testing::Workload(kNs, name, "lq", 1, {{"cpu", "1"}});
        {
          absl::MutexLock lock(&mu);
          sent[name] = absl::Now();
        }
        grpc::ClientContext ctx;
        v1::SubmitResponse resp;
        grpc::Status s = target.admission->Submit(&ctx, req, &resp);
        if (!s.ok()) Die("submit: " + s.error_message());
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  const absl::Time until = absl::Now() + limit;
  while (admitted.load() < jobs && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  const absl::Duration wall = absl::Now() - start;
  watch_ctx.TryCancel();
  watcher.join();
  Figures f;
  absl::MutexLock lock(&mu);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  f.admitted = static_cast<int>(latencies_ms.size());
  if (!latencies_ms.empty()) {
    f.p50_ms = latencies_ms[latencies_ms.size() / 2];
    f.p99_ms = latencies_ms[std::min(latencies_ms.size() - 1, latencies_ms.size() * 99 / 100)];
    f.max_ms = latencies_ms.back();
  }
  f.per_second = f.admitted / absl::ToDoubleSeconds(wall);
  return f;
}

void Print(const char* name, const Figures& f, int jobs) {
  std::printf("%-11s admitted %5d/%d  p50 %8.2f ms  p99 %8.2f ms  max %8.2f ms  %8.1f workloads/s\n",
              name, f.admitted, jobs, f.p50_ms, f.p99_ms, f.max_ms, f.per_second);
}

}  // namespace
}  // namespace admitd

int main(int argc, char** argv) {
  using namespace admitd;  // NOLINT
  int jobs = 1000, workers = 3, inflight = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    int* target = flag == "--jobs" ? &jobs : flag == "--workers" ? &workers
                  : flag == "--inflight" ? &inflight : nullptr;
    if (target == nullptr || !absl::SimpleAtoi(argv[i + 1], target) || *target < 1) {
      std::fprintf(stderr, "usage: multikueue_bench [--jobs N] [--workers N] [--inflight N]\n");
      return 2;
    }
  }
  log::SetLevel(log::Level::kWarning);
  const std::string root = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                        "/multikueue-bench-", getpid());
  std::filesystem::remove_all(root);

  // Single cluster.
  Figures single;
  {
    std::unique_ptr<AdmitdServer> server = Start(root + "/single");
    testing::Client client(server->address());
    Queues(client, jobs);
    single = Run(client, jobs, inflight, absl::Minutes(5));
    server->Shutdown(absl::Seconds(5));
  }

  // A manager and its workers.
  Figures dispatched;
  {
    std::vector<std::unique_ptr<AdmitdServer>> worker_servers;
    for (int w = 0; w < workers; ++w) {
      worker_servers.push_back(Start(absl::StrCat(root, "/w", w)));
      testing::Client c(worker_servers.back()->address());
      Queues(c, jobs);
    }
    std::unique_ptr<AdmitdServer> manager = Start(root + "/manager");
    testing::Client client(manager->address());
    Queues(client, jobs, "mk");
    v1::ApplyRequest ac;
    auto* check = ac.mutable_object()->mutable_admission_check();
    check->mutable_metadata()->set_name("mk");
    check->mutable_spec()->set_controller_name("kueue.x-k8s.io/multikueue");
    check->mutable_spec()->mutable_parameters()->set_api_group("kueue.x-k8s.io");
    check->mutable_spec()->mutable_parameters()->set_kind("MultiKueueConfig");
    check->mutable_spec()->mutable_parameters()->set_name("workers");
    Apply(client, ac);
    v1::ApplyRequest config;
    auto* mkconfig = config.mutable_object()->mutable_multi_kueue_config();
    mkconfig->mutable_metadata()->set_name("workers");
    for (int w = 0; w < workers; ++w) {
      mkconfig->mutable_spec()->add_clusters(absl::StrCat("w", w));
      v1::ApplyRequest mkc;
      auto* cluster = mkc.mutable_object()->mutable_multi_kueue_cluster();
      cluster->mutable_metadata()->set_name(absl::StrCat("w", w));
      cluster->mutable_spec()->mutable_admitd()->set_address(worker_servers[w]->address());
      Apply(client, mkc);
    }
    Apply(client, config);
    // Every worker connected before the clock starts.
    for (absl::Time until = absl::Now() + absl::Seconds(30);; absl::SleepFor(absl::Milliseconds(20))) {
      int connected = 0;
      for (int w = 0; w < workers; ++w) {
        connected += manager->metrics().Value("admitd_multikueue_worker_connected",
                                              {{"cluster", absl::StrCat("w", w)}}) == 1;
      }
      if (connected == workers) break;
      if (absl::Now() > until) Die("the workers did not connect");
    }
    dispatched = Run(client, jobs, inflight, absl::Minutes(5));
    manager->Shutdown(absl::Seconds(5));
    for (auto& w : worker_servers) w->Shutdown(absl::Seconds(5));
  }
  std::filesystem::remove_all(root);

  std::printf("%d jobs, %d submitting clients; latency: Submit sent -> Admitted seen on a watch\n",
              jobs, inflight);
  Print("single", single, jobs);
  Print("multikueue", dispatched, jobs);
  std::printf("ratio       p50 %.2fx  p99 %.2fx  throughput %.2fx  (%d workers, AllAtOnce)\n",
              single.p50_ms > 0 ? dispatched.p50_ms / single.p50_ms : 0,
              single.p99_ms > 0 ? dispatched.p99_ms / single.p99_ms : 0,
              single.per_second > 0 ? dispatched.per_second / single.per_second : 0, workers);
  return dispatched.admitted == jobs && single.admitted == jobs ? 0 : 1;
}
