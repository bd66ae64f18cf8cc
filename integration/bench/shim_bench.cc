// shim_bench: how long a batch/v1 Job waits from its creation to its unsuspension when admitd-shim
// connects the test cluster to admitd, next to Submit-to-admitted latency measured directly over
// gRPC against the same admitd in the same run, and what the shim and the test API server spend.
//
//   build/integration/bench/shim_bench [--jobs 1000] [--threads 8] [--timeout 300]
//       [--admitd PATH] [--shim PATH] [--apiserver-arg ARG]... [--shim-arg ARG]...
//
// It starts three processes on 127.0.0.1, each with its output in a temporary directory: the
// test Kubernetes API server (integration/kube/apiserver.py under /usr/bin/python3, with no
// simulated controllers: unsuspension is what is measured, and pods would only add load;
// `--apiserver-arg --controllers=job` adds them), admitd (RocksDB in the temporary directory,
// fsync on) and admitd-shim (leader election on a Lease, no webhook). Then:
//
// 1. Jobs: a ClusterQueue and a LocalQueue with room for every Job; `--threads` threads create
//    `--jobs` suspended one-pod Jobs with the queue-name label. A latency runs from just before
//    the create request was sent to the Job watch event (an informer in this process) that first
//    shows spec.suspend false. An AdmissionService.Watch splits it: when the Job's Workload first
//    appeared in admitd, and when admitd admitted it. The CPU time (utime + stime) of each process
//    is read before the first create, when the last Job is seen unsuspended, and once the shim has
//    gone quiet (its trailing work: events, reconciles of the unsuspended Jobs).
// 2. Direct: a fresh ClusterQueue and LocalQueue in another namespace; the same threads Submit as
//    many one-pod Workloads over gRPC, each latency running from sending Submit to the watch event
//    that first shows the Workload admitted.
//
// It prints a table and, last, the same figures as one JSON line. Everything it started is
// stopped and the temporary directory removed, also on a timeout (`--timeout`: the run reports
// how far it got and exits 1) and on SIGINT or SIGTERM.
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
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
#include "clients/shim/kube/kube_client.h"
#include "integration/bench/bench_common.h"
#include "integration/bench/bench_process.h"
#include "integration/bench/bench_timeline.h"
#include "integration/fixtures.h"


namespace admitd::bench {
namespace {

constexpr char kUsage[] =
    "usage: shim_bench [--jobs N] [--threads N] [--timeout SECONDS]\n"
    "  --jobs N             Jobs created at once, and Workloads submitted (default 1000)\n"
    "  --threads N          threads creating Jobs and submitting Workloads (default 8)\n"
    "  --timeout SECONDS    give up after this long, reporting how far the run got (default 300)\n"
    "  --admitd PATH        the admitd binary (default: the one built with this)\n"
    "  --shim PATH          the admitd-shim binary (default: the one built with this)\n"
    "  --python PATH        the interpreter for the test API server (default /usr/bin/python3)\n"
    "  --apiserver-arg ARG  an extra argument for the test API server (repeatable), e.g.\n"
    "                       --apiserver-arg --controllers=job\n"
    "  --shim-arg ARG       an extra argument for admitd-shim (repeatable), e.g. --shim-arg "
    "--workers=32\n";

constexpr char kJobNamespace[] = "shim-bench";
constexpr char kDirectNamespace[] = "direct-bench";
constexpr char kLeaseNamespace[] = "admitd-system";

struct Options {
  int jobs = 1000;
  int threads = 8;
  double timeout_s = 300;
  std::string admitd = ADMITD_BINARY;
  std::string shim = ADMITD_SHIM_BINARY;
  std::string python = "/usr/bin/python3";
  std::vector<std::string> apiserver_args;
  std::vector<std::string> shim_args;
};

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal.store(sig); }


// CPU seconds of each process at one moment.
struct CpuSample {
  double shim = 0, apiserver = 0, admitd = 0, bench = 0;
};

// The index in "<prefix><index>", or -1.
int IndexOf(const std::string& name, const std::string& prefix) {
  int i = -1;
  if (name.rfind(prefix, 0) != 0 || !absl::SimpleAtoi(name.substr(prefix.size()), &i)) return -1;
  return i;
}


std::string JobName(int i) { return absl::StrFormat("job-%05d", i); }

nlohmann::json JobManifest(int i) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", JobName(i)},
            {"namespace", kJobNamespace},
            {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
          {"spec",
           {{"parallelism", 1},
            {"completions", 1},
            {"suspend", true},
            {"template",
             {{"spec",
               {{"restartPolicy", "Never"},
                {"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}}}}}};
}

class Bench {
 public:
  explicit Bench(Options options)
      : options_(std::move(options)),
        started_(absl::Now()),
        deadline_(started_ + absl::Seconds(options_.timeout_s)),
        jobs_(options_.jobs),
        direct_(options_.jobs) {}

  // 0: every Job unsuspended and every Workload admitted; 1 otherwise.
  int Run();
  // Called by the watchdog: kill what was started and remove the temporary directory.
  void Abandon();

 private:
  bool StartProcesses();
  bool ApplyQueues();
  bool RunJobs();
  bool RunDirect();
  // Waits until `*count` reaches `n` (under t.mu); false on the deadline or when a process died.
  bool WaitFor(Timeline& t, const int* count, int n, const char* what);
  bool ProcessesAlive(std::string* dead);
  CpuSample Cpu() const;
  void Report(bool ok);
  void Cleanup();

  const Options options_;
  const absl::Time started_;
  const absl::Time deadline_;
  std::string tmp_;
  std::string stopped_at_;  // why the run stopped early

  absl::Mutex children_mu_;
  std::unique_ptr<Child> apiserver_, admitd_, shim_;
  std::string admitd_address_;
  std::string shim_metrics_url_;
  std::unique_ptr<testing::Client> client_;

  Timeline jobs_;
  Timeline direct_;
  CpuSample cpu_before_, cpu_done_, cpu_settled_;
  double settle_s_ = 0;
  int64_t rss_before_kib_[3] = {-1, -1, -1};  // shim, apiserver, admitd
  int64_t hwm_kib_[3] = {-1, -1, -1};
  TcpCounters tcp_before_, tcp_after_;
  // The shim's counters after the Jobs phase (its /metrics), by metric name.
  std::vector<std::pair<std::string, double>> shim_counters_;
  absl::Time jobs_first_sent_, jobs_last_returned_, jobs_last_done_;
  absl::Time direct_first_sent_, direct_last_done_;
};

bool Bench::StartProcesses() {
  char dir[] = "/tmp/shim-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    stopped_at_ = "mkdtemp failed";
    return false;
  }
  {
    absl::MutexLock lock(&children_mu_);
    tmp_ = dir;
  }
  const absl::Time start_deadline = std::min(deadline_, absl::Now() + absl::Seconds(30));

  std::vector<std::string> api = {
      options_.python, ADMITD_SOURCE_DIR "/integration/kube/apiserver.py", "--port", "0",
      "--kubeconfig-out", tmp_ + "/kubeconfig", "--namespace", kLeaseNamespace, "--namespace",
      kJobNamespace, "--bookmark-interval", "1",
      // Room in the watch history for every write of the run.
      "--history-size", absl::StrCat(std::max(10000, 20 * options_.jobs))};
  api.insert(api.end(), options_.apiserver_args.begin(), options_.apiserver_args.end());
  {
    absl::MutexLock lock(&children_mu_);
    apiserver_ = Child::Spawn("apiserver.py", api, tmp_ + "/apiserver.log");
  }
  if (!apiserver_ || apiserver_->WaitForLog("listening ", start_deadline).empty()) {
    stopped_at_ = absl::StrCat("the test API server did not start: ",
                               apiserver_ ? apiserver_->Log() : "spawn failed");
    return false;
  }

  {
    absl::MutexLock lock(&children_mu_);
    admitd_ = Child::Spawn(
        "admitd", {options_.admitd, "--listen", "127.0.0.1:0", "--data-dir", tmp_ + "/data"},
        tmp_ + "/admitd.log");
  }
  const std::string admitd_log = admitd_ ? admitd_->WaitForLog("msg=serving", start_deadline) : "";
  admitd_address_ = FieldAfter(admitd_log, "msg=listening addr=");
  if (admitd_address_.empty()) {
    stopped_at_ = absl::StrCat("admitd did not start: ", admitd_ ? admitd_->Log() : "spawn failed");
    return false;
  }
  client_ = std::make_unique<testing::Client>(admitd_address_);

  std::vector<std::string> shim = {
      options_.shim,   "--admitd",          admitd_address_,      "--cluster",
      "bench",         "--kubeconfig",      tmp_ + "/kubeconfig", "--leader-election-namespace",
      kLeaseNamespace, "--identity",        "shim-bench",         "--health-listen",
      "127.0.0.1:0",   "--webhook-listen=", "--log-level",        "info"};
  shim.insert(shim.end(), options_.shim_args.begin(), options_.shim_args.end());
  {
    absl::MutexLock lock(&children_mu_);
    shim_ = Child::Spawn("admitd-shim", shim, tmp_ + "/shim.log");
  }
  // "leading" is logged once the lease is held and every cache has synced.
  const std::string shim_log = shim_ ? shim_->WaitForLog("msg=leading", start_deadline) : "";
  if (shim_log.empty()) {
    stopped_at_ =
        absl::StrCat("admitd-shim did not start leading: ", shim_ ? shim_->Log() : "spawn failed");
    return false;
  }
  shim_metrics_url_ = absl::StrCat("http://", FieldAfter(shim_log, "health="), "/metrics");
  return true;
}

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

bool Bench::ProcessesAlive(std::string* dead) {
  absl::MutexLock lock(&children_mu_);
  for (Child* c : {apiserver_.get(), admitd_.get(), shim_.get()}) {
    if (c != nullptr && !c->Running()) {
      *dead = absl::StrCat(c->name(), " exited; its log ends:\n",
                           c->Log().substr(c->Log().size() > 3000 ? c->Log().size() - 3000 : 0));
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
    if (!ProcessesAlive(&dead)) {
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

CpuSample Bench::Cpu() const {
  CpuSample s;
  s.shim = CpuSeconds(shim_->pid());
  s.apiserver = CpuSeconds(apiserver_->pid());
  s.admitd = CpuSeconds(admitd_->pid());
  s.bench = OwnCpuSeconds();
  return s;
}

bool Bench::RunJobs() {
  absl::StatusOr<shim::KubeConfig> config = shim::KubeConfig::FromKubeconfig(tmp_ + "/kubeconfig");
  if (!config.ok()) {
    stopped_at_ = config.status().ToString();
    return false;
  }
  shim::KubeClient kube(*config);
  Timeline& t = jobs_;
  shim::Informer informer(kube, absl::StrCat("/apis/batch/v1/namespaces/", kJobNamespace, "/jobs"),
                          [&t](const std::string& type, const nlohmann::json& job) {
                            if (type != "ADDED" && type != "MODIFIED") return;
                            const nlohmann::json spec = job.value("spec", nlohmann::json::object());
                            if (spec.value("suspend", false)) return;
                            const std::string name =
                                job.value("metadata", nlohmann::json::object()).value("name", "");
                            t.Mark(t.done, IndexOf(name, "job-"), absl::Now(), &t.n_done);
                          });
  if (absl::Status s = informer.List(); !s.ok()) {
    stopped_at_ = absl::StrCat("list Jobs: ", s.ToString());
    return false;
  }
  std::thread informer_thread([&] { informer.Run(); });
  // Where the time goes inside: when each Job's Workload appeared in admitd and was admitted.
  Watcher workloads(client_->channel, kJobNamespace,
                    [&t](const v1::WatchEvent& ev, absl::Time received) {
                      const v1::Workload& wl = ev.workload();
                      if (wl.metadata().owner_references_size() == 0) return;
                      const int i = IndexOf(wl.metadata().owner_references(0).name(), "job-");
                      t.Mark(t.in_admitd, i, received, &t.n_in_admitd);
                      if (testing::IsConditionTrue(wl, "Admitted")) {
                        t.Mark(t.admitted, i, received, &t.n_admitted);
                      }
                    });
  bool ok = workloads.Start(absl::Seconds(10));
  if (!ok) stopped_at_ = absl::StrCat("admitd Watch: ", workloads.error());

  if (ok) {
    cpu_before_ = Cpu();
    rss_before_kib_[0] = CurrentRssKib(shim_->pid());
    rss_before_kib_[1] = CurrentRssKib(apiserver_->pid());
    rss_before_kib_[2] = CurrentRssKib(admitd_->pid());
    tcp_before_ = ReadTcpCounters();
    jobs_first_sent_ = absl::Now();
    const std::string path = absl::StrCat("/apis/batch/v1/namespaces/", kJobNamespace, "/jobs");
    ForEach(options_.jobs, options_.threads, [&](int i) {
      if (absl::Now() >= deadline_ || g_signal.load() != 0) return;
      const nlohmann::json body = JobManifest(i);
      const absl::Time sent = absl::Now();
      absl::StatusOr<nlohmann::json> created = kube.Create(path, body);
      t.Record(i, sent, absl::Now(), created.ok() ? "" : created.status().ToString());
    });
    jobs_last_returned_ = absl::Now();
    int expected;
    {
      absl::MutexLock lock(&t.mu);
      expected = t.n_returned;
      if (t.n_failed > 0) {
        stopped_at_ = absl::StrCat(t.n_failed, " Job creates failed, the first: ", t.first_error);
      }
    }
    ok = stopped_at_.empty() && WaitFor(t, &t.n_done, expected, "Jobs to be unsuspended");
  }
  cpu_done_ = Cpu();
  {
    absl::MutexLock lock(&t.mu);
    jobs_last_done_ = jobs_first_sent_;
    for (absl::Time d : t.done) jobs_last_done_ = std::max(jobs_last_done_, d);
  }
  // The shim's trailing work (the events it records, the reconciles the unsuspension causes):
  // until its CPU time stops moving for a second, at most 30 s.
  const absl::Time settle_start = absl::Now();
  for (double last = cpu_done_.shim; ok;) {
    absl::SleepFor(absl::Seconds(1));
    const double now = CpuSeconds(shim_->pid());
    if (now - last < 0.02 || absl::Now() - settle_start > absl::Seconds(30) ||
        absl::Now() >= deadline_ || g_signal.load() != 0) {
      break;
    }
    last = now;
  }
  settle_s_ = absl::ToDoubleSeconds(absl::Now() - settle_start);
  cpu_settled_ = Cpu();
  hwm_kib_[0] = PeakRssKib(shim_->pid());
  hwm_kib_[1] = PeakRssKib(apiserver_->pid());
  hwm_kib_[2] = PeakRssKib(admitd_->pid());
  tcp_after_ = ReadTcpCounters();
  for (const char* name :
       {"admitd_shim_reconciles_total", "admitd_shim_reconcile_errors_total",
        "admitd_shim_workloads_submitted_total", "admitd_shim_jobs_started_total",
        "admitd_shim_events_recorded_total", "admitd_shim_events_dropped_total"}) {
    shim_counters_.emplace_back(name, ScrapeMetric(shim_metrics_url_, name));
  }

  workloads.Stop();
  informer.Stop();  // returns from the watch at its next event: a bookmark within a second
  informer_thread.join();
  return ok;
}

bool Bench::RunDirect() {
  Timeline& t = direct_;
  Watcher watcher(client_->channel, kDirectNamespace,
                  [&t](const v1::WatchEvent& ev, absl::Time received) {
                    const v1::Workload& wl = ev.workload();
                    if (testing::IsConditionTrue(wl, "Admitted")) {
                      t.Mark(t.done, IndexOf(wl.metadata().name(), "wl-"), received, &t.n_done);
                    }
                  });
  if (!watcher.Start(absl::Seconds(10))) {
    stopped_at_ = absl::StrCat("admitd Watch: ", watcher.error());
    return false;
  }
  direct_first_sent_ = absl::Now();
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
    direct_last_done_ = direct_first_sent_;
    for (absl::Time d : t.done) direct_last_done_ = std::max(direct_last_done_, d);
  }
  watcher.Stop();
  return ok;
}

std::string Row(const char* what, const Summary& s) {
  if (s.count == 0) return absl::StrFormat("%-40s %6d %10s %10s %10s\n", what, 0, "-", "-", "-");
  return absl::StrFormat("%-40s %6zu %10.1f %10.1f %10.1f\n", what, s.count, s.p50, s.p99, s.max);
}

std::string Json(const Summary& s) {
  return absl::StrFormat("{\"n\":%zu,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f}", s.count,
                         s.p50, s.p99, s.max);
}

void Bench::Report(bool ok) {
  const int n = options_.jobs;
  const Summary shim = Summarize(Spans(jobs_, jobs_.sent, jobs_.done));
  const Summary create = Summarize(Spans(jobs_, jobs_.sent, jobs_.returned));
  const Summary returned_to_done = Summarize(Spans(jobs_, jobs_.returned, jobs_.done));
  const Summary to_admitd = Summarize(Spans(jobs_, jobs_.sent, jobs_.in_admitd));
  const Summary queued = Summarize(Spans(jobs_, jobs_.in_admitd, jobs_.admitted));
  const Summary to_start = Summarize(Spans(jobs_, jobs_.admitted, jobs_.done));
  const Summary direct = Summarize(Spans(direct_, direct_.sent, direct_.done));
  const Summary submit = Summarize(Spans(direct_, direct_.sent, direct_.returned));
  const double ratio = direct.count > 0 && direct.p50 > 0 ? shim.p50 / direct.p50 : 0;
  const double jobs_s = absl::ToDoubleSeconds(jobs_last_done_ - jobs_first_sent_);
  const double creates_s = absl::ToDoubleSeconds(jobs_last_returned_ - jobs_first_sent_);
  const double direct_s = absl::ToDoubleSeconds(direct_last_done_ - direct_first_sent_);
  const double jobs_per_s = jobs_s > 0 ? static_cast<double>(shim.count) / jobs_s : 0;
  const double direct_per_s = direct_s > 0 ? static_cast<double>(direct.count) / direct_s : 0;

  std::printf("\nshim_bench: %d Jobs created at once from %d threads; %d CPUs; %s\n", n,
              options_.threads, static_cast<int>(std::thread::hardware_concurrency()),
              ok ? "complete" : "INCOMPLETE");
  if (!stopped_at_.empty()) std::printf("stopped: %s\n", stopped_at_.c_str());
  std::printf("\n%-40s %6s %10s %10s %10s\n", "latency", "n", "p50 ms", "p99 ms", "max ms");
  std::fputs(Row("Job created -> unsuspended (shim)", shim).c_str(), stdout);
  std::fputs(Row("  create call (POST, returned)", create).c_str(), stdout);
  std::fputs(Row("  create returned -> unsuspended", returned_to_done).c_str(), stdout);
  std::fputs(Row("  created -> Workload in admitd", to_admitd).c_str(), stdout);
  std::fputs(Row("  Workload in admitd -> admitted", queued).c_str(), stdout);
  std::fputs(Row("  admitted -> Job seen unsuspended", to_start).c_str(), stdout);
  std::fputs(Row("Submit -> admitted (gRPC, direct)", direct).c_str(), stdout);
  std::fputs(Row("  Submit call (returned)", submit).c_str(), stdout);
  if (ratio > 0) std::printf("shim p50 / direct p50: %.1f\n", ratio);
  std::printf(
      "\nthroughput: %zu Jobs unsuspended in %.2f s = %.1f Jobs/s (the creates took %.2f s)"
      "; direct: %zu admitted in %.2f s = %.1f Workloads/s\n",
      shim.count, jobs_s, jobs_per_s, creates_s, direct.count, direct_s, direct_per_s);

  const double per_job = shim.count > 0 ? 1000.0 / static_cast<double>(shim.count) : 0;
  auto cpu_row = [&](const char* name, double before, double done, double settled, int64_t rss_kib,
                     int64_t hwm_kib) {
    std::printf("%-26s %9.2f %9.2f %12.2f %9.2f %10s %10s\n", name, done - before,
                (done - before) * per_job, settled - before, (settled - before) * per_job,
                rss_kib > 0 ? absl::StrFormat("%.1f", rss_kib / 1024.0).c_str() : "-",
                hwm_kib > 0 ? absl::StrFormat("%.1f", hwm_kib / 1024.0).c_str() : "-");
  };
  std::printf(
      "\nJobs phase, CPU (user+sys) to the last unsuspension, and with the shim's "
      "trailing work (+%.1f s):\n",
      settle_s_);
  std::printf("%-26s %9s %9s %12s %9s %10s %10s\n", "process", "cpu s", "ms/Job", "cpu s (all)",
              "ms/Job", "RSS MiB", "peak MiB");
  const CpuSample& b = cpu_before_;
  const CpuSample& d = cpu_done_;
  const CpuSample& s = cpu_settled_;
  cpu_row("admitd-shim", b.shim, d.shim, s.shim, rss_before_kib_[0], hwm_kib_[0]);
  cpu_row("apiserver.py (python3)", b.apiserver, d.apiserver, s.apiserver, rss_before_kib_[1],
          hwm_kib_[1]);
  cpu_row("admitd", b.admitd, d.admitd, s.admitd, rss_before_kib_[2], hwm_kib_[2]);
  cpu_row("shim_bench (this process)", b.bench, d.bench, s.bench, -1, -1);
  std::printf(
      "(RSS: before the first create; peak: VmHWM after the phase. Wall time to the last "
      "unsuspension: %.2f s on %d CPUs)\n",
      jobs_s, static_cast<int>(std::thread::hardware_concurrency()));
  std::string counters;
  for (const auto& [name, value] : shim_counters_) {
    absl::StrAppendFormat(&counters, " %s=%.0f", name.substr(sizeof("admitd_shim_") - 1), value);
  }
  const double opens = static_cast<double>(tcp_after_.active_opens - tcp_before_.active_opens);
  std::printf("admitd-shim /metrics after the phase:%s\n", counters.c_str());
  std::printf(
      "TCP (whole machine) during the phase: %.0f connections opened (%.1f per Job), %lld "
      "SYNs dropped on a full listen queue\n",
      opens, opens * per_job / 1000,
      static_cast<long long>(tcp_after_.listen_overflows - tcp_before_.listen_overflows));

  auto cpu_json = [&](const CpuSample& to) {
    return absl::StrFormat("{\"shim\":%.3f,\"apiserver\":%.3f,\"admitd\":%.3f,\"bench\":%.3f}",
                           (to.shim - b.shim) * per_job, (to.apiserver - b.apiserver) * per_job,
                           (to.admitd - b.admitd) * per_job, (to.bench - b.bench) * per_job);
  };
  std::string json =
      absl::StrFormat("{\"bench\":\"shim_bench\",\"ok\":%s,\"jobs\":%d,\"threads\":%d",
                      ok ? "true" : "false", n, options_.threads);
  absl::StrAppend(&json, ",\"shim\":", Json(shim), ",\"create_call\":", Json(create),
                  ",\"returned_to_unsuspended\":", Json(returned_to_done),
                  ",\"created_to_in_admitd\":", Json(to_admitd),
                  ",\"in_admitd_to_admitted\":", Json(queued),
                  ",\"admitted_to_unsuspended\":", Json(to_start), ",\"direct\":", Json(direct));
  absl::StrAppendFormat(&json, ",\"ratio_p50\":%.2f,\"jobs_per_s\":%.2f,\"direct_per_s\":%.2f",
                        ratio, jobs_per_s, direct_per_s);
  absl::StrAppend(&json, ",\"cpu_ms_per_job\":", cpu_json(d),
                  ",\"cpu_ms_per_job_with_trailing\":", cpu_json(s));
  absl::StrAppendFormat(&json,
                        ",\"peak_rss_mib\":{\"shim\":%.1f,\"apiserver\":%.1f,\"admitd\":%.1f}",
                        hwm_kib_[0] / 1024.0, hwm_kib_[1] / 1024.0, hwm_kib_[2] / 1024.0);
  absl::StrAppendFormat(
      &json, ",\"tcp_opens\":%.0f,\"listen_overflows\":%lld", opens,
      static_cast<long long>(tcp_after_.listen_overflows - tcp_before_.listen_overflows));
  for (const auto& [name, value] : shim_counters_) {
    absl::StrAppendFormat(&json, ",\"%s\":%.0f", name, value);
  }
  std::printf("%s}\n", json.c_str());
  std::fflush(stdout);
}

void Bench::Cleanup() {
  client_.reset();
  // The shim first (it talks to both), then admitd, then the API server.
  for (std::unique_ptr<Child>* c : {&shim_, &admitd_, &apiserver_}) {
    if (*c) (*c)->Stop(absl::Seconds(10));
  }
  absl::MutexLock lock(&children_mu_);
  shim_.reset();
  admitd_.reset();
  apiserver_.reset();
  if (!tmp_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
    tmp_.clear();
  }
}

void Bench::Abandon() {
  absl::MutexLock lock(&children_mu_);
  for (Child* c : {shim_.get(), admitd_.get(), apiserver_.get()}) {
    if (c != nullptr) c->Signal(SIGKILL);
  }
  if (!tmp_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }
}

int Bench::Run() {
  bool ok = StartProcesses() && ApplyQueues();
  if (ok) {
    std::printf("started: test API server, admitd %s, admitd-shim (leading); %d Jobs...\n",
                admitd_address_.c_str(), options_.jobs);
    std::fflush(stdout);
    ok = RunJobs();
  }
  if (ok) {
    std::printf("Jobs done; %d Workloads over gRPC...\n", options_.jobs);
    std::fflush(stdout);
    ok = RunDirect();
  }
  if (shim_ && apiserver_ && admitd_) {
    Report(ok);
  } else {
    std::printf("shim_bench: INCOMPLETE\nstopped: %s\n", stopped_at_.c_str());
  }
  Cleanup();
  return ok ? 0 : 1;
}

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (size_t eq = flag.find('='); eq != std::string::npos && flag.rfind("--", 0) == 0) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return false;
    }
    bool ok = true;
    if (flag == "--jobs") {
      ok = absl::SimpleAtoi(value, &o->jobs) && o->jobs > 0;
    } else if (flag == "--threads") {
      ok = absl::SimpleAtoi(value, &o->threads) && o->threads > 0;
    } else if (flag == "--timeout") {
      ok = absl::SimpleAtod(value, &o->timeout_s) && o->timeout_s > 0;
    } else if (flag == "--admitd") {
      o->admitd = value;
    } else if (flag == "--shim") {
      o->shim = value;
    } else if (flag == "--python") {
      o->python = value;
    } else if (flag == "--apiserver-arg") {
      o->apiserver_args.push_back(value);
    } else if (flag == "--shim-arg") {
      o->shim_args.push_back(value);
    } else {
      ok = false;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace
}  // namespace admitd::bench

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  admitd::bench::Options options;
  if (!admitd::bench::Parse(argc, argv, &options)) {
    std::fputs(admitd::bench::kUsage, stderr);
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
