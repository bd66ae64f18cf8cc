// shim_bench: how long an object waits from its creation to running when admitd-shim connects the
// test cluster to admitd (batch/v1 Jobs by default; `--kinds` mixes in JobSets, PyTorchJobs,
// RayJobs, RayClusters, Deployments and StatefulSets), next to Submit-to-admitted latency measured
// directly over gRPC against the same admitd in the same run, and what the shim and the test API
// server spend.
//
//   build/integration/bench/shim_bench [--jobs 1000] [--kinds job] [--threads 8] [--timeout 300]
//       [--admitd PATH] [--shim PATH] [--apiserver-arg ARG]... [--shim-arg ARG]... [--keep-logs]
//
// It starts three processes on 127.0.0.1, each with its output in a temporary directory: the
// test Kubernetes API server (integration/kube/apiserver.py under /usr/bin/python3, with the
// definitions of the custom resources in the mix, and the simulated controllers `deployment` and
// `statefulset` only when those kinds are in it: for the others unsuspension is what is measured,
// and pods would only add load; `--apiserver-arg --controllers=job` adds more), admitd (RocksDB in
// the temporary directory, fsync on) and admitd-shim (leader election on a Lease, `--integrations`
// the kinds of the mix). Then:
//
// 1. Objects: a ClusterQueue and a LocalQueue with room for every object; `--threads` threads
//    create `--jobs` one-pod 1-CPU objects, object i of kind i % (number of kinds), named
//    "<kind>-<i>". THE SHIM RUNS WITHOUT WEBHOOKS: no admission webhook is in the measured path.
//    Each object is created as the shim's webhooks would have left it (shim_bench_kinds.h):
//    suspended, with the queue-name label; a Deployment's or StatefulSet's pod template carries
//    the webhooks' marks and the admission scheduling gate, so that its pods come out gated.
//    A latency runs from just before the create request was sent to the watch event (one
//    informer per collection in this process) that first shows the object running: unsuspended
//    (spec.suspend false; a PyTorchJob's spec.runPolicy.suspend), or for a Deployment or
//    StatefulSet its pod without the admission gate. An AdmissionService.Watch splits it: when
//    the object's Workload (a pod's, for those two) first appeared in admitd, and when admitd
//    admitted it. The CPU time (utime + stime) of each process is read before the first create,
//    when the last object is seen running, and once the shim has gone quiet (its trailing work:
//    events, reconciles of the started objects).
// 2. Direct: a fresh ClusterQueue and LocalQueue in another namespace; the same threads Submit as
//    many one-pod Workloads over gRPC, each latency running from sending Submit to the watch event
//    that first shows the Workload admitted.
//
// It prints a table (over all objects, then per kind: shim_bench_report.h) and, last, the same
// figures as one JSON line. Everything it started is stopped and the temporary directory removed
// (kept with `--keep-logs`), also on a timeout (`--timeout`: the run reports how far it got, with
// the end of the shim's log, and exits 1) and on SIGINT or SIGTERM.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/shim/kube/informer.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/kube/kube_client.h"
#include "integration/bench/bench_common.h"
#include "integration/bench/bench_process.h"
#include "integration/bench/bench_timeline.h"
#include "integration/bench/shim_bench_kinds.h"
#include "integration/bench/shim_bench_options.h"
#include "integration/bench/shim_bench_report.h"
#include "integration/bench/shim_bench_stack.h"
#include "integration/fixtures.h"

namespace admitd::bench {
namespace {

constexpr char kJobNamespace[] = "shim-bench";
constexpr char kDirectNamespace[] = "direct-bench";
constexpr char kLeaseNamespace[] = "admitd-system";

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }

// The index of object `name` ("jobset-00004", or its pod's name) when it is of the kind object
// `index` has in the mix; -1 otherwise.
int IndexOf(const std::string& name, const std::vector<const BenchKind*>& kinds) {
  const ParsedName p = ParseObjectName(name);
  if (p.kind == nullptr || kinds[p.index % kinds.size()] != p.kind) return -1;
  return p.index;
}

// The index in "wl-<index>", or -1.
int DirectIndexOf(const std::string& name) {
  int i = -1;
  if (name.rfind("wl-", 0) != 0 || !absl::SimpleAtoi(name.substr(3), &i)) return -1;
  return i;
}

class Bench {
 public:
  explicit Bench(ShimBenchOptions options)
      : options_(std::move(options)),
        started_(absl::Now()),
        deadline_(started_ + absl::Seconds(options_.timeout_s)),
        jobs_only_(options_.kinds.size() == 1 && options_.kinds[0]->name == "job"),
        stack_({.admitd = options_.admitd,
                .shim = options_.shim,
                .python = options_.python,
                .kinds = options_.kinds,
                .apiserver_args = options_.apiserver_args,
                .shim_args = options_.shim_args,
                .lease_namespace = kLeaseNamespace,
                .object_namespace = kJobNamespace,
                .history_size = std::max(10000, 20 * options_.jobs),
                .keep_logs = options_.keep_logs}),
        objects_(options_.jobs),
        pods_(options_.jobs),
        direct_(options_.jobs) {}

  // 0: every object running and every Workload admitted; 1 otherwise.
  int Run();
  // Called by the watchdog: kill what was started and remove the temporary directory.
  void Abandon() { stack_.Abandon(); }

 private:
  bool ApplyQueues();
  bool RunObjects();
  bool RunDirect();
  // Waits until `*count` reaches `n` (under t.mu); false on the deadline or when a process died.
  bool WaitFor(Timeline& t, const int* count, int n, const char* what);

  const ShimBenchOptions options_;
  const absl::Time started_;
  const absl::Time deadline_;
  const bool jobs_only_;    // Jobs alone: the output's words as they have always been
  std::string stopped_at_;  // why the run stopped early

  ShimBenchStack stack_;
  std::unique_ptr<testing::Client> client_;

  Timeline objects_;
  // When the first pod of each Deployment or StatefulSet was seen (in `done`).
  Timeline pods_;
  Timeline direct_;
  // What the report prints besides the timelines.
  ShimBenchFigures fig_;
};

bool Bench::ApplyQueues() {
  const std::string quota = absl::StrCat(options_.jobs);
  const std::vector<v1::ApplyRequest> objects = {
      testing::Flavor("bench-flavor"),
      testing::ClusterQueue("shim-cq", {"bench-flavor"}, {{"cpu", quota}}),
      testing::LocalQueue(kJobNamespace, "lq", "shim-cq"),
      testing::ClusterQueue("direct-cq", {"bench-flavor"}, {{"cpu", quota}}),
      testing::LocalQueue(kDirectNamespace, "lq", "direct-cq")};
  for (const v1::ApplyRequest& req : objects) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::ApplyResponse resp;
    grpc::Status s = client_->queues->Apply(&ctx, req, &resp);
    if (!s.ok()) {
      stopped_at_ = absl::StrCat("Apply: ", s.error_message());
      return false;
    }
  }
  return true;
}

bool Bench::WaitFor(Timeline& t, const int* count, int n, const char* what) {
  while (true) {
    {
      absl::MutexLock lock(&t.mu);
      auto reached = [&] { return *count >= n; };
      if (t.mu.AwaitWithDeadline(absl::Condition(&reached),
                                 std::min(deadline_, absl::Now() + absl::Milliseconds(200)))) {
        return true;
      }
    }
    std::string dead;
    if (!stack_.Alive(&dead)) {
      stopped_at_ = absl::StrCat("while waiting for ", what, ": ", dead);
      return false;
    }
    if (g_signal.load() != 0) {
      stopped_at_ = absl::StrCat("signal ", g_signal.load(), " while waiting for ", what);
      return false;
    }
    if (absl::Now() >= deadline_) {
      absl::MutexLock lock(&t.mu);
      stopped_at_ = absl::StrFormat("timeout (%.0f s) while waiting for %s: %d of %d",
                                    options_.timeout_s, what, *count, n);
      return false;
    }
  }
}

bool Bench::RunObjects() {
  absl::StatusOr<shim::KubeConfig> config = shim::KubeConfig::FromKubeconfig(stack_.kubeconfig());
  if (!config.ok()) {
    stopped_at_ = config.status().ToString();
    return false;
  }
  shim::KubeClient kube(*config);
  Timeline& t = objects_;
  const std::vector<const BenchKind*>& kinds = options_.kinds;
  // One informer per collection: each kind's own or, for the kinds whose running shows on their
  // pod, the namespace's pods (IndexOf ignores other kinds' pods). A pod's first event also marks
  // when the simulated controller made it (pods_).
  Timeline& pods_seen = pods_;
  auto marker = [&t, &pods_seen, &kinds](bool pods) {
    return [&t, &pods_seen, &kinds, pods](const std::string& type, const nlohmann::json& object) {
      if (type != "ADDED" && type != "MODIFIED") return;
      const int i = IndexOf(shim::Str(shim::Field(object, "metadata"), "name"), kinds);
      if (i < 0) return;
      const BenchKind& kind = *kinds[i % kinds.size()];
      if (kind.via_pods != pods) return;
      const absl::Time now = absl::Now();
      if (pods) pods_seen.Mark(pods_seen.done, i, now, &pods_seen.n_done);
      if (kind.running(object)) t.Mark(t.done, i, now, &t.n_done);
    };
  };
  std::vector<std::string> paths;
  bool pods = false;
  for (const BenchKind* k : kinds) {
    if (!k->via_pods) paths.push_back(CollectionPath(*k, kJobNamespace));
    pods = pods || k->via_pods;
  }
  const std::string pods_path = absl::StrCat("/api/v1/namespaces/", kJobNamespace, "/pods");
  if (pods) paths.push_back(pods_path);
  std::vector<std::unique_ptr<shim::Informer>> informers;
  std::vector<std::thread> informer_threads;
  for (const std::string& path : paths) {
    informers.push_back(std::make_unique<shim::Informer>(kube, path, marker(path == pods_path)));
    if (absl::Status s = informers.back()->List(); !s.ok()) {
      stopped_at_ = absl::StrCat("list ", path, ": ", s.ToString());
      break;
    }
  }
  for (auto& informer : informers) {
    informer_threads.emplace_back([p = informer.get()] { p->Run(); });
  }
  // Where the time goes inside: when each object's Workload appeared in admitd and was admitted.
  // The Workload of a Deployment's or StatefulSet's pod is owned by the pod, whose name leads
  // back to the object.
  Watcher workloads(client_->channel, kJobNamespace,
                    [&t, &kinds](const v1::WatchEvent& ev, absl::Time received) {
                      const v1::Workload& wl = ev.workload();
                      if (wl.metadata().owner_references_size() == 0) return;
                      const int i = IndexOf(wl.metadata().owner_references(0).name(), kinds);
                      t.Mark(t.in_admitd, i, received, &t.n_in_admitd);
                      if (testing::IsConditionTrue(wl, "Admitted")) {
                        t.Mark(t.admitted, i, received, &t.n_admitted);
                      }
                    });
  bool ok = stopped_at_.empty() && workloads.Start(absl::Seconds(10));
  if (!ok && stopped_at_.empty()) stopped_at_ = absl::StrCat("admitd Watch: ", workloads.error());

  if (ok) {
    fig_.cpu_before = stack_.Cpu();
    stack_.Rss(fig_.rss_before_kib);
    fig_.tcp_before = ReadTcpCounters();
    fig_.first_sent = absl::Now();
    ForEach(options_.jobs, options_.threads, [&](int i) {
      if (absl::Now() >= deadline_ || g_signal.load() != 0) return;
      const BenchKind& kind = *kinds[i % kinds.size()];
      const nlohmann::json body = kind.manifest(ObjectName(kind, i), kJobNamespace);
      const std::string path = CollectionPath(kind, kJobNamespace);
      const absl::Time sent = absl::Now();
      absl::StatusOr<nlohmann::json> created = kube.Create(path, body);
      t.Record(i, sent, absl::Now(), created.ok() ? "" : created.status().ToString());
    });
    fig_.last_returned = absl::Now();
    int expected;
    {
      absl::MutexLock lock(&t.mu);
      expected = t.n_returned;
      if (t.n_failed > 0) {
        stopped_at_ = absl::StrCat(t.n_failed, jobs_only_ ? " Job" : "",
                                   " creates failed, the first: ", t.first_error);
      }
    }
    ok = stopped_at_.empty() &&
         WaitFor(t, &t.n_done, expected,
                 jobs_only_ ? "Jobs to be unsuspended" : "objects to be running");
  }
  fig_.cpu_done = stack_.Cpu();
  {
    absl::MutexLock lock(&t.mu);
    fig_.last_done = fig_.first_sent;
    for (absl::Time d : t.done) fig_.last_done = std::max(fig_.last_done, d);
  }
  // The shim's trailing work (the events it records, the reconciles the start causes): until its
  // CPU time stops moving for a second, at most 30 s.
  const absl::Time settle_start = absl::Now();
  for (double last = fig_.cpu_done.shim; ok;) {
    absl::SleepFor(absl::Seconds(1));
    const double now = stack_.ShimCpu();
    if (now - last < 0.02 || absl::Now() - settle_start > absl::Seconds(30) ||
        absl::Now() >= deadline_ || g_signal.load() != 0) {
      break;
    }
    last = now;
  }
  fig_.settle_s = absl::ToDoubleSeconds(absl::Now() - settle_start);
  fig_.cpu_settled = stack_.Cpu();
  stack_.PeakRss(fig_.hwm_kib);
  fig_.tcp_after = ReadTcpCounters();
  std::vector<std::string> counters = {
      "admitd_shim_reconciles_total",          "admitd_shim_reconcile_errors_total",
      "admitd_shim_workloads_submitted_total", "admitd_shim_jobs_started_total",
      "admitd_shim_events_recorded_total",     "admitd_shim_events_dropped_total"};
  const size_t always = counters.size();
  // Those above are the Jobs' (and every kind's Workloads and events); the other kinds' own.
  for (const BenchKind* k : kinds) {
    if (k->name == "job") continue;
    if (k->via_pods) {
      counters.push_back(absl::StrCat("admitd_shim_", k->name, "_pods_labelled_total"));
    } else {
      counters.push_back(absl::StrCat("admitd_shim_", k->name, "_reconciles_total"));
      counters.push_back(absl::StrCat("admitd_shim_", k->name, "_reconcile_errors_total"));
      counters.push_back(absl::StrCat("admitd_shim_", k->name, "s_started_total"));
    }
  }
  if (pods) counters.push_back("admitd_shim_pods_reported_total");
  for (size_t i = 0; i < counters.size(); ++i) {
    const double value = ScrapeMetric(stack_.shim_metrics_url(), counters[i]);
    if (i < always || value >= 0) fig_.shim_counters.emplace_back(counters[i], value);
  }

  workloads.Stop();
  // Each returns from its watch at its next event: a bookmark within a second.
  for (auto& informer : informers) informer->Stop();
  for (std::thread& th : informer_threads) th.join();
  return ok;
}

bool Bench::RunDirect() {
  Timeline& t = direct_;
  Watcher watcher(client_->channel, kDirectNamespace,
                  [&t](const v1::WatchEvent& ev, absl::Time received) {
                    const v1::Workload& wl = ev.workload();
                    if (testing::IsConditionTrue(wl, "Admitted")) {
                      t.Mark(t.done, DirectIndexOf(wl.metadata().name()), received, &t.n_done);
                    }
                  });
  if (!watcher.Start(absl::Seconds(10))) {
    stopped_at_ = absl::StrCat("admitd Watch: ", watcher.error());
    return false;
  }
  fig_.direct_first_sent = absl::Now();
  ForEach(options_.jobs, options_.threads, [&](int i) {
    if (absl::Now() >= deadline_ || g_signal.load() != 0) return;
    v1::SubmitRequest req;
    *req.mutable_workload() =
        testing::Workload(kDirectNamespace, absl::StrFormat("wl-%05d", i), "lq", 1, {{"cpu", "1"}});
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    const absl::Time sent = absl::Now();
    grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    t.Record(i, sent, absl::Now(), s.ok() ? "" : s.error_message());
  });
  int expected;
  {
    absl::MutexLock lock(&t.mu);
    expected = t.n_returned;
    if (t.n_failed > 0) {
      stopped_at_ = absl::StrCat(t.n_failed, " Submits failed, the first: ", t.first_error);
    }
  }
  const bool ok = stopped_at_.empty() && WaitFor(t, &t.n_done, expected, "Workloads admitted");
  {
    absl::MutexLock lock(&t.mu);
    fig_.direct_last_done = fig_.direct_first_sent;
    for (absl::Time d : t.done) fig_.direct_last_done = std::max(fig_.direct_last_done, d);
  }
  watcher.Stop();
  return ok;
}

int Bench::Run() {
  bool ok = stack_.Start(deadline_, &stopped_at_);
  if (ok) {
    client_ = std::make_unique<testing::Client>(stack_.admitd_address());
    ok = ApplyQueues();
  }
  if (ok) {
    std::printf(
        "started: test API server, admitd %s, admitd-shim (leading); %d %s...\n",
        stack_.admitd_address().c_str(), options_.jobs,
        jobs_only_ ? "Jobs" : absl::StrCat("objects (", KindNames(options_.kinds), ")").c_str());
    std::fflush(stdout);
    ok = RunObjects();
  }
  if (ok) {
    std::printf("%s done; %d Workloads over gRPC...\n", jobs_only_ ? "Jobs" : "Objects",
                options_.jobs);
    std::fflush(stdout);
    ok = RunDirect();
  }
  if (stack_.started()) {
    fig_.ok = ok;
    fig_.stopped_at = stopped_at_;
    fig_.threads = options_.threads;
    fig_.kinds = options_.kinds;
    fig_.objects = &objects_;
    fig_.pods = &pods_;
    fig_.direct = &direct_;
    PrintShimBenchReport(fig_);
    if (!ok) {
      // Why an object did not start is most often in the shim's log.
      std::fprintf(stderr, "--- the end of admitd-shim's log ---\n%s\n",
                   stack_.ShimLogTail(6000).c_str());
    }
  } else {
    std::printf("shim_bench: INCOMPLETE\nstopped: %s\n", stopped_at_.c_str());
  }
  client_.reset();
  stack_.Stop();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace admitd::bench

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  admitd::bench::ShimBenchOptions options;
  if (std::string error; !admitd::bench::ParseShimBenchOptions(argc, argv, &options, &error)) {
    if (!error.empty()) std::fprintf(stderr, "shim_bench: %s\n", error.c_str());
    std::fputs(admitd::bench::kShimBenchUsage, stderr);
    return 2;
  }
  struct sigaction sa = {};
  sa.sa_handler = admitd::bench::OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  admitd::bench::Bench bench(options);
  // The watchdog: a run that cannot end by itself (a call stuck past its own deadline, a second
  // signal) is ended 30 s after the timeout, or at once on a second signal.
  absl::Notification finished;
  std::thread watchdog([&] {
    const absl::Time hard = absl::Now() + absl::Seconds(options.timeout_s + 30);
    absl::Time signalled = absl::InfiniteFuture();
    while (!finished.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
      if (admitd::bench::g_signal.load() != 0 && signalled == absl::InfiniteFuture()) {
        signalled = absl::Now();
      }
      if (absl::Now() >= hard || absl::Now() - signalled > absl::Seconds(15)) {
        std::fprintf(stderr, "shim_bench: no orderly end; killing what it started\n");
        bench.Abandon();
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
  });
  const int rc = bench.Run();
  finished.Notify();
  watchdog.join();
  return rc;
}
