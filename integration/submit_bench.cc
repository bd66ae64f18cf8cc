// submit_bench: durable Submit throughput from many concurrent clients, next to a null-RPC
// baseline (QueueService.Ping) measured in the same run against the same server.
//
//   build/integration/submit_bench [--seconds 5] [--inflight 64] [--sync-delay 2ms]
//
// The server runs in process with its RocksDB store in a temporary directory, fsync on. Every
// Submit is acknowledged only after the batch holding it was synced; the sequencer batches
// whatever arrived while the previous batch was being synced (group commit), so the ratio to the
// null RPC shows how much durability costs. --sync-delay adds a delay after every fsync, to show
// that throughput holds up when fsync is slow.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "integration/fixtures.h"
#include "common/log.h"
#include "server/server.h"

namespace admitd {
namespace {

struct Result {
  double per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
  uint64_t calls = 0;
  uint64_t errors = 0;
};

// A closed loop of `inflight` outstanding calls for `seconds`; `issue(i, done)` starts call
// number i and must invoke done(ok) when it completes.
Result ClosedLoop(int inflight, absl::Duration duration,
                  const std::function<void(uint64_t, std::function<void(bool)>)>& issue) {
  absl::Mutex mu;
  std::vector<double> latencies_us;
  latencies_us.reserve(1 << 20);
  std::atomic<uint64_t> next{0}, errors{0};
  std::atomic<bool> stop{false};
  int outstanding = inflight;
  const absl::Time start = absl::Now();
  std::function<void()> launch;
  launch = [&] {
    const uint64_t i = next.fetch_add(1);
    const absl::Time sent = absl::Now();
    issue(i, [&, sent](bool ok) {
      const double us = absl::ToDoubleMicroseconds(absl::Now() - sent);
      if (!ok) errors++;
      bool again = !stop.load();
      {
        absl::MutexLock lock(&mu);
        latencies_us.push_back(us);
        if (!again) --outstanding;
      }
      if (again) launch();
    });
  };
  for (int i = 0; i < inflight; ++i) launch();
  absl::SleepFor(duration);
  stop = true;
  const absl::Time end = absl::Now();
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(+[](int* n) { return *n == 0; }, &outstanding));
  }
  Result r;
  absl::MutexLock lock(&mu);
  r.calls = latencies_us.size();
  r.errors = errors.load();
  r.per_second = static_cast<double>(r.calls) / absl::ToDoubleSeconds(end - start);
  std::sort(latencies_us.begin(), latencies_us.end());
  if (!latencies_us.empty()) {
    r.p50_us = latencies_us[latencies_us.size() / 2];
    r.p99_us = latencies_us[latencies_us.size() * 99 / 100];
  }
  return r;
}

struct Args {
  double seconds = 5;
  int inflight = 64;
  std::vector<absl::Duration> delays = {absl::ZeroDuration(), absl::Milliseconds(2)};
};

void Run(const Args& args) {
  std::printf("%-12s %-10s %12s %10s %10s %9s %12s\n", "sync_delay", "call", "calls/s",
              "p50_us", "p99_us", "errors", "per_commit");
  for (absl::Duration delay : args.delays) {
    std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                   "/submit_bench_", getpid(), "_", absl::ToInt64Microseconds(delay));
    std::filesystem::remove_all(dir);
    Config config;
    config.listen = "127.0.0.1:0";
    config.data_dir = dir;
    config.sync_delay = delay;
    auto server = AdmitdServer::Start(config);
    if (!server.ok()) {
      std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
      return;
    }
    // Two channels so the client side is not one HTTP/2 connection's bottleneck.
    std::vector<std::unique_ptr<testing::Client>> clients;
    for (int i = 0; i < 2; ++i) clients.push_back(std::make_unique<testing::Client>((*server)->address()));
    auto apply = [&](const v1::ApplyRequest& req) {
      grpc::ClientContext ctx;
      v1::ApplyResponse resp;
      clients[0]->queues->Apply(&ctx, req, &resp);
    };
    apply(testing::Flavor("default"));
    apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "100000000"}}));
    apply(testing::LocalQueue("bench", "lq", "cq"));
    const absl::Duration duration = absl::Seconds(args.seconds);

    struct PingCall {
      grpc::ClientContext ctx;
      v1::PingRequest req;
      v1::PingResponse resp;
    };
    Result ping = ClosedLoop(args.inflight, duration, [&](uint64_t i, std::function<void(bool)> done) {
      auto* call = new PingCall;
      clients[i % clients.size()]->queues->async()->Ping(
          &call->ctx, &call->req, &call->resp, [call, done](grpc::Status s) {
            delete call;
            done(s.ok());
          });
    });

    struct SubmitCall {
      grpc::ClientContext ctx;
      v1::SubmitRequest req;
      v1::SubmitResponse resp;
    };
    const SequencerStats before = (*server)->sequencer().stats();
    Result submit = ClosedLoop(args.inflight, duration, [&](uint64_t i, std::function<void(bool)> done) {
      auto* call = new SubmitCall;
      *call->req.mutable_workload() =
          testing::Workload("bench", absl::StrCat("w-", i), "lq", 1, {{"cpu", "1"}});
      clients[i % clients.size()]->admission->async()->Submit(
          &call->ctx, &call->req, &call->resp, [call, done](grpc::Status s) {
            delete call;
            done(s.ok());
          });
    });
    const SequencerStats after = (*server)->sequencer().stats();
    const double per_commit = static_cast<double>(after.commands - before.commands) /
                              std::max<uint64_t>(1, after.commits - before.commits);
    const std::string d = absl::FormatDuration(delay);
    const double batches = static_cast<double>(std::max<uint64_t>(1, after.batches - before.batches));
    std::printf("%-12s sequencer per batch: apply %.0fus, cycles %.0fus, commit %.0fus, "
                "respond %.0fus; %.0f batches/s\n",
                d.c_str(), absl::ToDoubleMicroseconds(after.apply_time - before.apply_time) / batches,
                absl::ToDoubleMicroseconds(after.cycle_time - before.cycle_time) / batches,
                absl::ToDoubleMicroseconds(after.commit_time - before.commit_time) / batches,
                absl::ToDoubleMicroseconds(after.respond_time - before.respond_time) / batches,
                batches / args.seconds);
    std::printf("%-12s %-10s %12.0f %10.0f %10.0f %9llu %12s\n", d.c_str(), "ping",
                ping.per_second, ping.p50_us, ping.p99_us,
                static_cast<unsigned long long>(ping.errors), "-");
    std::printf("%-12s %-10s %12.0f %10.0f %10.0f %9llu %12.1f\n", d.c_str(), "submit",
                submit.per_second, submit.p50_us, submit.p99_us,
                static_cast<unsigned long long>(submit.errors), per_commit);
    std::printf("%-12s submit/ping ratio: %.2f  (inflight %d, %.0fs each)\n", d.c_str(),
                submit.per_second / ping.per_second, args.inflight, args.seconds);
    std::fflush(stdout);
    clients.clear();
    (*server)->Shutdown(absl::Seconds(2));
    server->reset();
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace admitd

int main(int argc, char** argv) {
  // As in the admitd binary (server/main.cc): no Mutex deadlock detection on the serving path.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  admitd::Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seconds") {
      absl::SimpleAtod(value, &args.seconds);
    } else if (flag == "--inflight") {
      absl::SimpleAtoi(value, &args.inflight);
    } else if (flag == "--sync-delay") {
      absl::Duration d;
      if (!absl::ParseDuration(value, &d)) {
        std::fprintf(stderr, "bad --sync-delay %s\n", value.c_str());
        return 2;
      }
      args.delays = {d};
    } else {
      std::fprintf(stderr, "usage: submit_bench [--seconds S] [--inflight N] [--sync-delay D]\n");
      return 2;
    }
  }
  admitd::log::SetLevel(admitd::log::Level::kWarning);
  admitd::Run(args);
  return 0;
}
