#include "integration/bench/raw_run.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "integration/fixtures.h"

namespace admitd::bench {
namespace {

constexpr int kChannels = 2;  // so the client side is not one HTTP/2 connection's bottleneck

class RawRun {
 public:
  RawRun(const std::string& address, int clients, absl::Duration duration, std::string prefix,
         const ChannelFactory& connect, int server_pid, absl::Duration ping_duration)
      : clients_(clients),
        duration_(duration),
        ping_duration_(ping_duration > absl::ZeroDuration() ? ping_duration : duration),
        prefix_(std::move(prefix)),
        server_pid_(server_pid),
        ns_(absl::StrCat(prefix_, "raw")) {
    for (int i = 0; i < kChannels; ++i) {
      channels_.push_back(connect ? std::make_unique<testing::Client>(connect(address))
                                  : std::make_unique<testing::Client>(address));
    }
  }

  RawReport Run() {
    RawReport report;
    report.clients = clients_;
    report.seconds = absl::ToDoubleSeconds(duration_);
    if (!Setup()) {
      report.errors = 1;
      return report;
    }
    RunPing(report);

    Watcher watcher(channels_[0]->channel, ns_,
                    [this](const v1::WatchEvent& ev, absl::Time at) { OnEvent(ev, at); });
    if (!watcher.Start(absl::Seconds(30))) {
      std::fprintf(stderr, "watch did not start: %s\n", watcher.error().c_str());
      report.errors = 1;
      return report;
    }
    std::printf("workload cycle phase begins\n");  // for scripts that sample admitd meanwhile
    std::fflush(stdout);
    const absl::Time start = absl::Now();
    const CpuSample cpu_start = SampleCpu();
    call_deadline_ = start + duration_ + absl::Seconds(30);
    for (int c = 0; c < clients_; ++c) StartWorkload(c);
    absl::SleepFor(duration_);
    stop_ = true;
    const absl::Time end = absl::Now();
    const CpuSample cpu_end = SampleCpu();
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithDeadline(absl::Condition(+[](RawRun* r) { return r->active_ == 0; }, this),
                            call_deadline_ + absl::Seconds(5));
    }
    watcher.Stop();
    // Every call ends by call_deadline_, and its callback touches this object.
    while (!in_flight_.WaitZero(absl::Seconds(60))) {
      std::fprintf(stderr, "admitd-bench: still waiting for calls in flight\n");
    }
    report.watch_reconnects = watcher.reconnects();

    absl::MutexLock lock(&mu_);
    report.cycles = completed_in_window_;
    report.workloads_per_second =
        static_cast<double>(completed_in_window_) / absl::ToDoubleSeconds(end - start);
    PerCall(cpu_start, cpu_end, completed_in_window_, &report.server_cpu_per_cycle_s,
            &report.client_cpu_per_cycle_s);
    report.server_threads_cycle = Difference(cpu_start.server_threads, cpu_end.server_threads);
    report.commits = commits_in_window_;
    report.submit_ms = Summarize(std::move(submit_ms_));
    report.admitted_ms = Summarize(std::move(admitted_ms_));
    report.release_ms = Summarize(std::move(release_ms_));
    report.cycle_ms = Summarize(std::move(cycle_ms_));
    report.errors += errors_;
    report.refused_retried = refused_.load();
    report.violations = violations_;
    report.first_violation = first_violation_;
    if (active_ != 0) {
      report.errors++;
      std::fprintf(stderr, "%d clients still waiting after the run\n", active_);
    }
    return report;
  }

 private:
  struct Wl {
    int client = 0;
    absl::Time sent;
    bool answered = false;
    bool admitted = false;
    int admissions = 0;
    int finishes = 0;
  };

  bool Setup() {
    auto apply = [&](const v1::ApplyRequest& req) {
      grpc::ClientContext ctx;
      v1::ApplyResponse resp;
      grpc::Status status = channels_[0]->queues->Apply(&ctx, req, &resp);
      if (!status.ok()) std::fprintf(stderr, "Apply: %s\n", status.error_message().c_str());
      return status.ok();
    };
    const std::string cq = absl::StrCat(prefix_, "raw");
    return apply(testing::Flavor(absl::StrCat(prefix_, "raw-rf"))) &&
           apply(testing::ClusterQueue(cq, {absl::StrCat(prefix_, "raw-rf")},
                                       {{"cpu", "100000000"}})) &&
           apply(testing::LocalQueue(ns_, "lq", cq));
  }

  void RunPing(RawReport& report) {
    std::atomic<bool> stop{false};
    absl::Mutex mu;
    std::vector<double> latencies;
    int outstanding = clients_;
    std::function<void(int)> launch = [&](int c) {
      struct Call {
        grpc::ClientContext ctx;
        v1::PingRequest req;
        v1::PingResponse resp;
      };
      auto* call = new Call;
      const absl::Time sent = absl::Now();
      channels_[c % kChannels]->queues->async()->Ping(
          &call->ctx, &call->req, &call->resp, [&, call, c, sent](grpc::Status s) {
            delete call;
            const double ms = absl::ToDoubleMilliseconds(absl::Now() - sent);
            const bool again = !stop.load();
            {
              absl::MutexLock lock(&mu);
              latencies.push_back(ms);
              if (!s.ok()) ++report.errors;
              if (!again) --outstanding;
            }
            if (again) launch(c);
          });
    };
    std::printf("null RPC phase begins\n");
    std::fflush(stdout);
    const absl::Time start = absl::Now();
    const CpuSample cpu_start = SampleCpu();
    for (int c = 0; c < clients_; ++c) launch(c);
    absl::SleepFor(ping_duration_);
    stop = true;
    const absl::Time end = absl::Now();
    const CpuSample cpu_end = SampleCpu();
    absl::MutexLock lock(&mu);
    const int64_t answered_in_window = static_cast<int64_t>(latencies.size());
    mu.Await(absl::Condition(+[](int* n) { return *n == 0; }, &outstanding));
    report.pings_per_second =
        static_cast<double>(answered_in_window) / absl::ToDoubleSeconds(end - start);
    PerCall(cpu_start, cpu_end, answered_in_window, &report.server_cpu_per_ping_s,
            &report.client_cpu_per_ping_s);
    report.pings = answered_in_window;
    report.server_threads_ping = Difference(cpu_start.server_threads, cpu_end.server_threads);
    report.ping_ms = Summarize(std::move(latencies));
  }

  struct CpuSample {
    double server = -1;  // -1: admitd's pid is not known
    double client = 0;
    ThreadUses server_threads;
  };
  CpuSample SampleCpu() const {
    CpuSample out;
    if (server_pid_ > 0) {
      out.server = CpuSeconds(server_pid_);
      out.server_threads = ThreadUseByName(server_pid_);
    }
    out.client = OwnCpuSeconds();
    return out;
  }
  // The CPU between two samples per call, for `calls` calls.
  static void PerCall(const CpuSample& from, const CpuSample& to, int64_t calls, double* server,
                      double* client) {
    if (calls <= 0) return;
    if (from.server >= 0 && to.server >= 0) *server = (to.server - from.server) / calls;
    *client = (to.client - from.client) / calls;
  }

  void StartWorkload(int c) {
    uint64_t id;
    const absl::Time sent = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      id = next_id_++;
      Wl& wl = wls_[id];
      wl.client = c;
      wl.sent = sent;
      ++active_;
    }
    v1::SubmitRequest req;
    *req.mutable_workload() =
        testing::Workload(ns_, absl::StrCat("w-", id), "lq", 1, {{"cpu", "1"}});
    in_flight_.Add();
    AsyncCall<v1::SubmitRequest, v1::SubmitResponse>(
        std::move(req), call_deadline_,
        [this, c](grpc::ClientContext* ctx, const v1::SubmitRequest* q, v1::SubmitResponse* r,
                  std::function<void(grpc::Status)> cb) {
          channels_[c % kChannels]->admission->async()->Submit(ctx, q, r, std::move(cb));
        },
        [this, id](const grpc::Status& status, const v1::SubmitResponse&) {
          bool release = false;
          {
            absl::MutexLock lock(&mu_);
            Wl& wl = wls_[id];
            submit_ms_.push_back(absl::ToDoubleMilliseconds(absl::Now() - wl.sent));
            if (!status.ok()) {
              ++errors_;
              --active_;
            } else {
              wl.answered = true;
              release = wl.admitted;
            }
          }
          if (release) Release(id);
          in_flight_.Done();
        },
        &refused_);
  }

  void Release(uint64_t id) {
    int c;
    absl::Time started;
    {
      absl::MutexLock lock(&mu_);
      c = wls_[id].client;
      started = wls_[id].sent;
    }
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(ns_);
    req.set_name(absl::StrCat("w-", id));
    req.mutable_finished()->set_succeeded(true);
    const absl::Time sent = absl::Now();
    in_flight_.Add();
    AsyncCall<v1::ReleaseQuotaRequest, v1::ReleaseQuotaResponse>(
        std::move(req), call_deadline_,
        [this, c](grpc::ClientContext* ctx, const v1::ReleaseQuotaRequest* q,
                  v1::ReleaseQuotaResponse* r, std::function<void(grpc::Status)> cb) {
          channels_[c % kChannels]->admission->async()->ReleaseQuota(ctx, q, r, std::move(cb));
        },
        [this, c, sent, started](const grpc::Status& status, const v1::ReleaseQuotaResponse&) {
          const absl::Time now = absl::Now();
          {
            absl::MutexLock lock(&mu_);
            release_ms_.push_back(absl::ToDoubleMilliseconds(now - sent));
            cycle_ms_.push_back(absl::ToDoubleMilliseconds(now - started));
            --active_;
            if (!status.ok()) ++errors_;
            if (status.ok() && !stop_.load()) ++completed_in_window_;
          }
          if (status.ok() && !stop_.load()) StartWorkload(c);
          in_flight_.Done();
        },
        &refused_);
  }

  void Violation(const std::string& what) {
    if (violations_++ == 0) first_violation_ = what;
  }

  void OnEvent(const v1::WatchEvent& ev, absl::Time at) {
    if (!ev.has_workload()) return;
    if (!stop_.load() && ev.commit_revision() != last_commit_) {
      last_commit_ = ev.commit_revision();  // the watch's thread only
      commits_in_window_.fetch_add(1, std::memory_order_relaxed);
    }
    const std::string& name = ev.workload().metadata().name();
    uint64_t id = 0;
    if (name.rfind("w-", 0) != 0 || !absl::SimpleAtoi(name.substr(2), &id)) return;
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = wls_.find(id);
      if (it == wls_.end()) return;
      Wl& wl = it->second;
      // Events carry the committed state (one per object per commit), so read the conditions.
      bool reserved = false, finished = false;
      for (const v1::Condition& c : ev.workload().status().conditions()) {
        if (c.status() != "True") continue;
        if (c.type() == "QuotaReserved") reserved = true;
        if (c.type() == "Finished") finished = true;
      }
      if (reserved && !finished && !wl.admitted) {
        if (++wl.admissions > 1) Violation(absl::StrCat(name, " admitted twice"));
        wl.admitted = true;
        admitted_ms_.push_back(absl::ToDoubleMilliseconds(at - wl.sent));
        release = wl.answered;
      } else if (finished) {
        if (++wl.finishes > 1) Violation(absl::StrCat(name, " finished twice"));
        if (wl.admissions != 1) Violation(absl::StrCat(name, " finished without admission"));
        wls_.erase(it);  // done with it
      }
    }
    if (release) Release(id);
  }

  const int clients_;
  const absl::Duration duration_;
  const absl::Duration ping_duration_;
  const std::string prefix_;
  const int server_pid_;  // admitd, for its CPU; -1: not known
  const std::string ns_;
  std::vector<std::unique_ptr<testing::Client>> channels_;
  std::atomic<bool> stop_{false};
  absl::Time call_deadline_ = absl::InfiniteFuture();
  InFlight in_flight_;
  std::atomic<int64_t> refused_{0};  // calls refused unrun and sent again
  uint64_t last_commit_ = 0;  // the commit revision of the watch's last event
  std::atomic<int64_t> commits_in_window_{0};

  absl::Mutex mu_;
  uint64_t next_id_ = 0;
  absl::flat_hash_map<uint64_t, Wl> wls_;
  int active_ = 0;
  int64_t completed_in_window_ = 0;
  int64_t errors_ = 0;
  int64_t violations_ = 0;
  std::string first_violation_;
  std::vector<double> submit_ms_, admitted_ms_, release_ms_, cycle_ms_;
};

}  // namespace

RawReport RunRaw(const std::string& address, int clients, absl::Duration duration,
                 const std::string& prefix, ChannelFactory connect, int server_pid,
                 absl::Duration ping_duration) {
  RawRun run(address, clients, duration, prefix, connect, server_pid, ping_duration);
  return run.Run();
}

namespace {

// admitd's CPU and context switches by thread, per workload cycle and per null RPC, and the
// cycle phase's commits: where a cycle costs more than a null RPC.
void PrintThreads(const RawReport& r) {
  if (r.cycles <= 0 || r.pings <= 0) return;
  const double cycles = static_cast<double>(r.cycles), pings = static_cast<double>(r.pings);
  if (r.server_threads_cycle.empty()) {
    if (r.commits > 0) {
      std::printf("commits in the cycle phase: %lld (%.2f workload cycles per commit)\n",
                  static_cast<long long>(r.commits), cycles / static_cast<double>(r.commits));
    }
    return;
  }
  std::printf("admitd by thread: CPU us and context switches (voluntary + involuntary) per "
              "workload cycle | per null RPC\n");
  std::vector<std::pair<std::string, ThreadUse>> rows(r.server_threads_cycle.begin(),
                                                      r.server_threads_cycle.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.cpu_s > b.second.cpu_s; });
  ThreadUse all_cycle, all_ping;
  for (const auto& [name, use] : rows) {
    ThreadUse ping;
    if (auto it = r.server_threads_ping.find(name); it != r.server_threads_ping.end()) {
      ping = it->second;
    }
    all_cycle.cpu_s += use.cpu_s;
    all_cycle.voluntary += use.voluntary;
    all_cycle.involuntary += use.involuntary;
    all_ping.cpu_s += ping.cpu_s;
    all_ping.voluntary += ping.voluntary;
    all_ping.involuntary += ping.involuntary;
    if (use.cpu_s * 1e6 / cycles < 0.05 && use.switches() / cycles < 0.005) continue;
    std::printf("  %-18s %7.1f us %5.2f + %4.2f | %6.1f us %5.2f + %4.2f\n", name.c_str(),
                use.cpu_s * 1e6 / cycles, use.voluntary / cycles, use.involuntary / cycles,
                ping.cpu_s * 1e6 / pings, ping.voluntary / pings, ping.involuntary / pings);
  }
  std::printf("  %-18s %7.1f us %5.2f + %4.2f | %6.1f us %5.2f + %4.2f\n", "all",
              all_cycle.cpu_s * 1e6 / cycles, all_cycle.voluntary / cycles,
              all_cycle.involuntary / cycles, all_ping.cpu_s * 1e6 / pings,
              all_ping.voluntary / pings, all_ping.involuntary / pings);
  if (r.commits > 0) {
    const double commits = static_cast<double>(r.commits);
    std::printf("commits in the cycle phase: %lld (%.2f workload cycles per commit); admitd "
                "context switches per commit: %.2f\n",
                static_cast<long long>(r.commits), cycles / commits,
                static_cast<double>(all_cycle.switches()) / commits);
  }
}

}  // namespace

void PrintRawReport(const RawReport& r) {
  std::printf("raw mode: %d concurrent clients, %.1f s per phase\n", r.clients, r.seconds);
  std::printf("%-44s %12s %10s %10s\n", "", "per second", "p50 ms", "p99 ms");
  std::printf("%-44s %12.0f %10.3f %10.3f\n", "null RPC (QueueService.Ping)", r.pings_per_second,
              r.ping_ms.p50, r.ping_ms.p99);
  std::printf("%-44s %12.0f %10.3f %10.3f\n", "workload cycle (Submit -> admitted -> Finished)",
              r.workloads_per_second, r.cycle_ms.p50, r.cycle_ms.p99);
  std::printf("%-44s %12s %10.3f %10.3f\n", "  Submit RPC", "", r.submit_ms.p50, r.submit_ms.p99);
  std::printf("%-44s %12s %10.3f %10.3f\n", "  Submit sent -> Admitted event", "",
              r.admitted_ms.p50, r.admitted_ms.p99);
  std::printf("%-44s %12s %10.3f %10.3f\n", "  ReleaseQuota(Finished) RPC", "", r.release_ms.p50,
              r.release_ms.p99);
  std::printf("workloads per second / null RPCs per second: %.3f\n",
              r.pings_per_second > 0 ? r.workloads_per_second / r.pings_per_second : 0);
  if (r.server_cpu_per_ping_s >= 0 && r.server_cpu_per_cycle_s >= 0) {
    std::printf("admitd CPU per workload cycle / per null RPC: %.1f / %.1f us (%.2fx)\n",
                r.server_cpu_per_cycle_s * 1e6, r.server_cpu_per_ping_s * 1e6,
                r.server_cpu_per_ping_s > 0 ? r.server_cpu_per_cycle_s / r.server_cpu_per_ping_s
                                            : 0);
  }
  std::printf("generator CPU per workload cycle / per null RPC: %.1f / %.1f us\n",
              r.client_cpu_per_cycle_s * 1e6, r.client_cpu_per_ping_s * 1e6);
  PrintThreads(r);
  std::printf("errors %lld, watch reconnects %d, refused, retried %lld\n",
              static_cast<long long>(r.errors), r.watch_reconnects,
              static_cast<long long>(r.refused_retried));
  if (r.violations > 0) {
    std::printf("VIOLATION: %s (%lld in all)\n", r.first_violation.c_str(),
                static_cast<long long>(r.violations));
  }
  std::printf("invariants: %s\n", r.violations == 0 ? "OK" : "FAILED");
}

}  // namespace admitd::bench
