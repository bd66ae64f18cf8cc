// admitd-bench: Kueue's scheduler performance runner, end to end against admitd.
//
//   admitd-bench --config integration/bench/configs/baseline.yaml [--time-scale F] [--no-simulate]
//   admitd-bench --config ... --simulate [--time-scale F]   the engine alone, in virtual time
//   admitd-bench --config ... --find-scale [--time-scale START] [--max-scale M]
//   admitd-bench --config ... --fair-sharing [...]  the same with Kueue's fair sharing on
//   admitd-bench --raw N [--seconds D]
//   admitd-bench --raw N --security [--seconds D]   plaintext, TLS, mTLS and tokens compared
//   admitd-bench --raw N --tracing [--seconds D]    tracing off, at 10 % and at 100 % compared
//   admitd-bench --raw N --ha [--seconds D]         one admitd, then an HA group on etcd, compared
//   admitd-bench --raw N --ha-only [--seconds D]    the HA group alone, and etcd's size after it
//
// Without --server it starts the admitd binary on a temporary data dir (fsync on) and reports
// its peak memory. A run of a config first simulates the same schedule through the engine in
// this process (before admitd starts), and reports the real wall time against the simulated one
// too. Exits non-zero when an invariant was violated or a workload never finished.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "integration/bench/bench_config.h"
#include "integration/bench/raw_run.h"
#include "integration/bench/schedule_run.h"
#include "integration/bench/ha_run.h"
#include "integration/bench/security_run.h"
#include "integration/bench/simulate_run.h"
#include "integration/bench/tracing_run.h"
#include "integration/fixtures.h"

#ifndef ADMITD_BINARY
#define ADMITD_BINARY "admitd"
#endif

namespace admitd::bench {
namespace {

constexpr char kUsage[] =
    "usage: admitd-bench --config FILE [--time-scale F] [--no-simulate]\n"
    "       admitd-bench --config FILE --simulate [--time-scale F]\n"
    "       admitd-bench --config FILE [--time-scale F] --find-scale [--max-scale M]\n"
    "       admitd-bench --raw N [--seconds D] [--security | --tracing | --ha | --ha-only]\n"
    "  --simulate           run the schedule through the admission engine alone, in virtual\n"
    "                       time (no server, no latency), and print that report only\n"
    "  --no-simulate        skip the simulation a run of a config starts with (its simulated\n"
    "                       wall time is printed next to the real one)\n"
    "  --fair-sharing       run a config with Kueue's fair sharing on (the started admitd gets\n"
    "                       a config file with a fairSharing section; the simulation too)\n"
    "  --security           the raw run against plaintext, TLS, mTLS + policy and\n"
    "                       TLS + service-account token + policy servers, compared\n"
    "  --tracing            the raw run with tracing off, at 10 % and at 100 % sampling\n"
    "                       (OTLP/gRPC to a counting collector in this process), compared\n"
    "  --ha                 the raw run against one admitd, then against the leader of three\n"
    "                       replicas over a 3-member etcd started here, compared\n"
    "  --ha-only            the HA group alone (its null-RPC phase 5 s at most), then the\n"
    "                       size of etcd's database: after 1,000,000 cycles, --seconds 700\n"
    "  --server HOST:PORT   use a running admitd instead of starting one\n"
    "  --admitd PATH        the admitd binary to start (default: the one built with this)\n"
    "  --admitd-arg ARG     an extra argument for the started admitd (repeatable)\n"
    "  --timeout SECONDS    give up on a run after this long (default 60 + 50 x lower bound)\n"
    "ADMITD_BENCH_TRACE=1 prints every watch event the run follows to stderr.\n";

struct Options {
  std::string config;
  std::string server;
  std::string admitd = ADMITD_BINARY;
  std::vector<std::string> admitd_args;
  double scale = 1;
  bool find_scale = false;
  bool simulate = false;
  bool no_simulate = false;
  double max_scale = 4096;
  int raw = 0;
  bool security = false;
  bool tracing = false;
  bool ha = false;
  bool ha_only = false;
  bool fair_sharing = false;
  double seconds = 5;
  double timeout_s = 0;
};

// A server for one run: either the one given, or a fresh admitd on a temporary data dir.
class Target {
 public:
  static std::unique_ptr<Target> Open(const Options& options) {
    auto target = std::make_unique<Target>();
    if (!options.server.empty()) {
      target->address_ = options.server;
      return target;
    }
    char dir[] = "/tmp/admitd-bench-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      std::fprintf(stderr, "mkdtemp failed\n");
      return nullptr;
    }
    target->data_dir_ = dir;
    auto process = testing::Process::Start(options.admitd, target->data_dir_ + "/data",
                                           options.admitd_args);
    if (!process.ok()) {
      std::fprintf(stderr, "cannot start %s: %s\n", options.admitd.c_str(),
                   std::string(process.status().message()).c_str());
      std::filesystem::remove_all(target->data_dir_);
      return nullptr;
    }
    target->process_ = std::move(*process);
    target->address_ = target->process_->address();
    return target;
  }

  ~Target() {
    if (process_) process_->Kill(SIGTERM);
    process_.reset();
    if (!data_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(data_dir_, ec);
    }
  }

  const std::string& address() const { return address_; }
  // admitd's process id when it was started here, else -1.
  int pid() const { return process_ ? process_->pid() : -1; }

  // `simulation_cpu_s`: CPU this process spent on a simulation before the run, not counted.
  void PrintMemory(double simulation_cpu_s = 0) const {
    if (!process_) {
      std::printf("admitd peak RSS              (not measured: --server given)\n");
      return;
    }
    const int64_t kib = PeakRssKib(process_->pid());
    std::printf("admitd peak RSS (VmHWM)     %10.1f MiB\n", static_cast<double>(kib) / 1024);
    std::printf("CPU used: admitd %.1f s, admitd-bench %.1f s (both on this machine)\n",
                CpuSeconds(process_->pid()), OwnCpuSeconds() - simulation_cpu_s);
  }

 private:
  std::string address_;
  std::string data_dir_;
  std::unique_ptr<testing::Process> process_;
};

std::string RunPrefix() {
  // Distinct object names per run, so runs against one long-lived server do not collide.
  static int run = 0;
  return absl::StrFormat("b%x-%d-", static_cast<unsigned>(getpid()) & 0xffff, run++);
}

absl::Duration Timeout(const Options& options, const Plan& plan, double scale) {
  if (options.timeout_s > 0) return absl::Seconds(options.timeout_s);
  return absl::Seconds(60) + absl::Milliseconds(50 * plan.lower_bound_ms() / scale);
}

// The schedule through the engine alone, in virtual time, in this process.
RunReport Simulate(const Config& config, double scale, bool fair_sharing) {
  return SimulateSchedule(Expand(config, ""), scale, fair_sharing);
}

// Writes admitd's config file for --fair-sharing and returns its path (empty on failure): the v1beta2
// spelling of Kueue's fairSharing section, with both strategies.
std::string WriteFairSharingConfig() {
  char path[] = "/tmp/admitd-bench-fair-sharing-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  const std::string text =
      "fairSharing:\n  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n";
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok ? path : "";
}

// `admitd_pid`: the admitd the run started (its CPU against the simulation's), or -1.
void PrintAgainstSimulation(const RunReport& real, const RunReport& simulated, int admitd_pid) {
  std::printf("\nsimulated wall              %10.2f s   (the engine alone in virtual time, %.2f s "
              "of CPU)\n",
              simulated.wall_ms / 1000, simulated.cpu_ms / 1000);
  if (admitd_pid > 0 && simulated.cpu_ms > 0) {
    // What admitd spent beyond the engine's own work on the same schedule, and on which threads.
    const ThreadUses threads = ThreadUseByName(admitd_pid);
    std::vector<std::pair<double, std::string>> by_cpu;
    double all = 0;
    for (const auto& [name, use] : threads) {
      all += use.cpu_s;
      by_cpu.emplace_back(use.cpu_s, name);
    }
    std::sort(by_cpu.rbegin(), by_cpu.rend());
    std::string parts;
    for (const auto& [cpu, name] : by_cpu) {
      if (cpu < 0.05) break;
      absl::StrAppendFormat(&parts, "%s%s %.1f", parts.empty() ? "" : ", ", name, cpu);
    }
    std::printf("admitd CPU / simulation CPU %10.2f   (%.1f s: %s)\n",
                all / (simulated.cpu_ms / 1000), all, parts.c_str());
  }
  std::printf("wall / simulated wall       %10.3f\n",
              simulated.wall_ms > 0 ? real.wall_ms / simulated.wall_ms : 0);
  std::printf("wall / lower bound          %10.3f   (simulated: %.3f)\n", real.ratio(),
              simulated.ratio());
  for (const std::string& v : simulated.violations) {
    std::printf("VIOLATION (simulated): %s\n", v.c_str());
  }
  std::printf("simulation invariants: %s\n", simulated.ok() ? "OK" : "FAILED");
}

// One scheduled run; returns its report (and prints it when `print`, followed by how it compares
// with `simulated` when given).
RunReport RunOnce(const Options& options, const Config& config, double scale, bool print,
                  const RunReport* simulated = nullptr) {
  std::unique_ptr<Target> target = Target::Open(options);
  if (!target) {
    RunReport failed;
    failed.violation_count = 1;
    failed.violations.push_back("no server");
    return failed;
  }
  const std::string prefix = options.server.empty() ? "" : RunPrefix();
  const Plan plan = Expand(config, prefix);
  if (print) {
    std::printf("admitd-bench: %s, %zu cohorts, %zu ClusterQueues, %zu workloads, time scale %g, "
                "server %s%s%s\n",
                options.config.c_str(), plan.cohorts.size(), plan.cluster_queues.size(),
                plan.workloads.size(), scale, target->address().c_str(),
                options.server.empty() ? " (started here, fsync on)" : "",
                options.fair_sharing ? ", fair sharing on" : "");
    std::fflush(stdout);
  }
  RunReport report = RunSchedule(target->address(), plan, scale, Timeout(options, plan, scale));
  if (print) {
    PrintRunReport(report);
    target->PrintMemory(simulated != nullptr ? simulated->cpu_ms / 1000 : 0);
    if (simulated != nullptr) PrintAgainstSimulation(report, *simulated, target->pid());
    std::fflush(stdout);
  }
  return report;
}

int SimulateMode(const Options& options, const Config& config) {
  const Plan plan = Expand(config, "");
  std::printf("admitd-bench: %s, %zu cohorts, %zu ClusterQueues, %zu workloads, time scale %g, "
              "simulated (the engine alone, virtual time)%s\n",
              options.config.c_str(), plan.cohorts.size(), plan.cluster_queues.size(),
              plan.workloads.size(), options.scale, options.fair_sharing ? ", fair sharing on" : "");
  std::fflush(stdout);
  const RunReport report = SimulateSchedule(plan, options.scale, options.fair_sharing);
  PrintRunReport(report);
  return report.ok() ? 0 : 1;
}

// Doubles the time scale from --time-scale on. Prints the largest scale at which the wall time
// stays within 1.15x of the lower bound, and, since the lower bound ignores what priorities and
// preemption cost even on an infinitely fast server, also the largest at which the ratio stays
// within 1.15x of the ratio at the first scale tried: where admitd itself starts to fall behind.
int FindScale(const Options& options, const Config& config) {
  constexpr double kTrack = 1.15;
  double best = 0, best_relative = 0, first_ratio = 0;
  bool any_failed = false;
  std::printf("%10s %10s %12s %8s %s\n", "scale", "wall s", "lower bnd s", "ratio", "invariants");
  for (double scale = options.scale; scale <= options.max_scale; scale *= 2) {
    RunReport r = RunOnce(options, config, scale, false);
    std::printf("%10g %10.3f %12.3f %8.3f %s\n", scale, r.wall_ms / 1000, r.lower_bound_ms() / 1000,
                r.ratio(), r.ok() ? "OK" : "FAILED");
    for (const std::string& v : r.violations) std::printf("VIOLATION: %s\n", v.c_str());
    std::fflush(stdout);
    if (!r.ok()) {
      any_failed = true;
      break;
    }
    if (first_ratio == 0) first_ratio = r.ratio();
    if (r.ratio() <= kTrack && best == scale / 2) best = scale;
    if (r.ratio() <= kTrack && scale == options.scale) best = scale;
    if (r.ratio() > kTrack * first_ratio) break;
    best_relative = scale;
  }
  if (best > 0) {
    std::printf("largest time scale with wall time within %.2fx of the lower bound: %g\n", kTrack,
                best);
  } else {
    std::printf("wall time exceeded %.2fx of the lower bound at every scale tried\n", kTrack);
  }
  if (best_relative > 0) {
    std::printf("largest time scale with wall / lower bound within %.2fx of its value at scale "
                "%g (%.3f): %g\n",
                kTrack, options.scale, first_ratio, best_relative);
  }
  return any_failed ? 1 : 0;
}

int RawMode(const Options& options) {
  std::unique_ptr<Target> target = Target::Open(options);
  if (!target) return 1;
  std::printf("admitd-bench raw: server %s%s\n", target->address().c_str(),
              options.server.empty() ? " (started here, fsync on)" : "");
  std::fflush(stdout);
  RawReport report = RunRaw(target->address(), options.raw, absl::Seconds(options.seconds),
                            options.server.empty() ? "" : RunPrefix(), nullptr, target->pid());
  PrintRawReport(report);
  target->PrintMemory();
  return report.ok() ? 0 : 1;
}

int Main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n%s", flag.c_str(), kUsage);
        exit(2);
      }
      return argv[++i];
    };
    auto number = [&](double* out) {
      const std::string v = value();
      if (!absl::SimpleAtod(v, out) || *out <= 0) {
        std::fprintf(stderr, "bad %s %s\n", flag.c_str(), v.c_str());
        exit(2);
      }
    };
    if (flag == "--config") {
      options.config = value();
    } else if (flag == "--server") {
      options.server = value();
    } else if (flag == "--admitd") {
      options.admitd = value();
    } else if (flag == "--admitd-arg") {
      options.admitd_args.push_back(value());
    } else if (flag == "--time-scale") {
      number(&options.scale);
    } else if (flag == "--simulate") {
      options.simulate = true;
    } else if (flag == "--no-simulate") {
      options.no_simulate = true;
    } else if (flag == "--find-scale") {
      options.find_scale = true;
    } else if (flag == "--max-scale") {
      number(&options.max_scale);
    } else if (flag == "--security") {
      options.security = true;
    } else if (flag == "--tracing") {
      options.tracing = true;
    } else if (flag == "--fair-sharing") {
      options.fair_sharing = true;
    } else if (flag == "--ha") {
      options.ha = true;
    } else if (flag == "--ha-only") {
      options.ha = true;
      options.ha_only = true;
    } else if (flag == "--raw") {
      double n = 0;
      number(&n);
      options.raw = static_cast<int>(n);
    } else if (flag == "--seconds") {
      number(&options.seconds);
    } else if (flag == "--timeout") {
      number(&options.timeout_s);
    } else {
      std::fprintf(stderr, "unknown flag %s\n%s", flag.c_str(), kUsage);
      return 2;
    }
  }
  std::string fair_sharing_config;
  if (options.fair_sharing) {
    fair_sharing_config = WriteFairSharingConfig();
    if (fair_sharing_config.empty()) {
      std::fprintf(stderr, "cannot write the fair sharing config file\n");
      return 2;
    }
    options.admitd_args.push_back("--config");
    options.admitd_args.push_back(fair_sharing_config);
  }
  struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
      if (!path.empty()) unlink(path.c_str());
    }
  } remove_config{fair_sharing_config};
  if (options.raw > 0 && options.tracing) {
    return RunTracingComparison(options.admitd, options.admitd_args, options.raw,
                                absl::Seconds(options.seconds));
  }
  if (options.raw > 0 && options.ha) {
    return RunHaComparison(options.admitd, options.admitd_args, options.raw,
                           absl::Seconds(options.seconds), options.ha_only);
  }
  if (options.raw > 0 && options.security) {
    return RunSecurityComparison(options.admitd, options.admitd_args, options.raw,
                                 absl::Seconds(options.seconds));
  }
  if (options.raw > 0) return RawMode(options);
  if (options.config.empty()) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  auto config = LoadConfig(options.config);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  if (options.simulate) return SimulateMode(options, *config);
  if (options.find_scale) return FindScale(options, *config);
  if (options.no_simulate) {
    RunReport report = RunOnce(options, *config, options.scale, true);
    return report.ok() ? 0 : 1;
  }
  // Before admitd starts, so that the two do not compete for the CPU.
  const RunReport simulated = Simulate(*config, options.scale, options.fair_sharing);
  RunReport report = RunOnce(options, *config, options.scale, true, &simulated);
  return report.ok() && simulated.ok() ? 0 : 1;
}

}  // namespace
}  // namespace admitd::bench

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  // Debian's Abseil is built without NDEBUG, so every Mutex lock would otherwise feed the
  // deadlock detector's lock graph: a cost on the generator's side of every call, in both the
  // null-RPC phase and the measured ones alike.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return admitd::bench::Main(argc, argv);
}
