// admitd-crashloop: runs the real admitd binary under mixed concurrent load and kills it with
// SIGKILL at a random moment, round after round, checking after every restart that nothing
// acknowledged was lost and that quota usage adds up (see checker.h, docs/testing.md).
//
//   admitd-crashloop [--rounds 10] [--seed S] [--seconds-per-round 2 | --ops-per-round N]
//                    [--threads 6] [--admitd PATH] [--data-dir DIR] [--keep]
//
// Exits 1 when any check failed, 2 on a bad flag.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "integration/crashloop/checker.h"
#include "integration/crashloop/ledger.h"
#include "integration/crashloop/load.h"
#include "integration/crashloop/round.h"
#include "integration/fixtures.h"

#ifndef ADMITD_BINARY
#define ADMITD_BINARY "admitd"
#endif

namespace admitd::crashloop {
namespace {

constexpr char kUsage[] =
    "usage: admitd-crashloop [--rounds N] [--seed S] [--seconds-per-round S | --ops-per-round N]\n"
    "                        [--threads N] [--admitd PATH] [--admitd-arg ARG]... [--data-dir DIR]\n"
    "                        [--keep]\n"
    "  --rounds N             load-and-SIGKILL rounds (default 10); a restart and a check follow "
    "each\n"
    "  --seed S               seeds the kill moments and the clients' choices (default: the "
    "clock)\n"
    "  --seconds-per-round S  kill at a uniformly random moment within S seconds of load (default "
    "2)\n"
    "  --ops-per-round N      kill once a random number (1..N) of writes were acknowledged "
    "instead\n"
    "  --threads N            client threads (default 6)\n"
    "  --admitd PATH          the admitd binary (default: the one built with this tool)\n"
    "  --admitd-arg ARG       an extra argument for admitd (repeatable)\n"
    "  --data-dir DIR         admitd's data dir (default: a temporary one, removed when all "
    "passed)\n"
    "  --keep                 keep the temporary data dir and admitd's logs\n";

constexpr int kMaxPrinted = 20;  // violations printed per check

struct Options {
  int rounds = 10;
  uint64_t seed = 0;
  bool seed_given = false;
  double seconds_per_round = 2;
  int64_t ops_per_round = 0;
  int threads = 6;
  std::string admitd = ADMITD_BINARY;
  std::vector<std::string> admitd_args;
  std::string data_dir;
  bool keep = false;
};

struct Totals {
  OpCounts acked;
  int64_t reads = 0, cut_off = 0, starts = 0, kills = 0, restarts = 0, checks = 0, violations = 0;
  Resolution resolution;
  absl::Duration recovery_sum, recovery_max;
};

void Report(const std::vector<std::string>& violations, Totals* totals) {
  for (size_t i = 0; i < violations.size() && i < kMaxPrinted; ++i) {
    std::printf("  VIOLATION: %s\n", violations[i].c_str());
  }
  if (violations.size() > kMaxPrinted) {
    std::printf("  ... and %zu more violations\n", violations.size() - kMaxPrinted);
  }
  totals->violations += static_cast<int64_t>(violations.size());
}

// Starts admitd on the data dir; prints how long recovery took.
std::unique_ptr<testing::Process> StartServer(const Options& options, const std::string& data_dir,
                                              Totals* totals) {
  const absl::Time start = absl::Now();
  auto process = testing::Process::Start(options.admitd, data_dir, options.admitd_args);
  if (!process.ok()) {
    Report({absl::StrCat("admitd did not start: ", process.status().message())}, totals);
    return nullptr;
  }
  const absl::Duration took = absl::Now() - start;
  ++totals->starts;
  totals->recovery_sum += took;
  totals->recovery_max = std::max(totals->recovery_max, took);
  return *std::move(process);
}

// The three checks after a restart, with the round's resolution of cut-off writes.
void Check(testing::Client& client, std::vector<WorkerLedger>& ledgers, Totals* totals,
           const std::string& label, absl::Duration recovery) {
  RoundCheck check = CheckServer(client, ledgers);
  ++totals->checks;
  if (!check.read.ok()) {
    std::printf("%s: cannot read the server's state\n", label.c_str());
    Report({std::string(check.read.message())}, totals);
    return;
  }
  totals->resolution.applied += check.resolution.applied;
  totals->resolution.not_applied += check.resolution.not_applied;
  std::printf(
      "%s: recovered in %.2f s; %zu workloads (%d holding quota) at revision %llu; "
      "cut-off writes applied %lld, not applied %lld; %s\n",
      label.c_str(), absl::ToDoubleSeconds(recovery), check.workloads, check.holding,
      static_cast<unsigned long long>(check.revision),
      static_cast<long long>(check.resolution.applied),
      static_cast<long long>(check.resolution.not_applied),
      check.violations.empty() ? "OK" : absl::StrCat(check.violations.size(), " VIOLATIONS").c_str());
  Report(check.violations, totals);
}

// One round of load on a running server, ended by SIGKILL.
void RunRound(const Options& options, int round, std::mt19937_64& rng, testing::Process& process,
              std::vector<WorkerLedger>& ledgers, Totals* totals) {
  RoundLoad load =
      RunLoadAndKill(process.address(), ledgers,
                     {.seconds = options.seconds_per_round, .ops = options.ops_per_round}, rng,
                     [&] { return process.Kill(SIGKILL); });
  ++totals->kills;
  std::vector<std::string> violations = std::move(load.refusals);
  if (!WIFSIGNALED(load.kill_status) || WTERMSIG(load.kill_status) != SIGKILL) {
    violations.push_back(absl::StrCat("admitd ended on its own before the kill (wait status ",
                                      load.kill_status, "):\n", process.Log()));
  }
  totals->acked.Add(load.acked);
  totals->reads += load.reads;
  totals->cut_off += load.cut_off;
  std::printf(
      "round %d/%d: SIGKILL %s; acknowledged %lld writes (%s), %lld reads; %lld writes "
      "cut off\n",
      round, options.rounds, load.moment.c_str(), static_cast<long long>(load.acked.Total()),
      load.acked.ToString().c_str(), static_cast<long long>(load.reads),
      static_cast<long long>(load.cut_off));
  Report(violations, totals);
  std::fflush(stdout);
}

bool ParseFlags(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    bool ok = true;
    if (flag == "--keep") {
      options->keep = true;
      continue;
    }
    if (!value(&v)) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return false;
    }
    if (flag == "--rounds") {
      ok = absl::SimpleAtoi(v, &options->rounds) && options->rounds > 0;
    } else if (flag == "--seed") {
      ok = absl::SimpleAtoi(v, &options->seed);
      options->seed_given = true;
    } else if (flag == "--seconds-per-round") {
      ok = absl::SimpleAtod(v, &options->seconds_per_round) && options->seconds_per_round > 0;
    } else if (flag == "--ops-per-round") {
      ok = absl::SimpleAtoi(v, &options->ops_per_round) && options->ops_per_round > 0;
    } else if (flag == "--threads") {
      ok = absl::SimpleAtoi(v, &options->threads) && options->threads > 0 && options->threads <= 64;
    } else if (flag == "--admitd") {
      options->admitd = v;
    } else if (flag == "--admitd-arg") {
      options->admitd_args.push_back(v);
    } else if (flag == "--data-dir") {
      options->data_dir = v;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad %s %s\n", flag.c_str(), v.c_str());
      return false;
    }
  }
  return true;
}

int Main(int argc, char** argv) {
  Options options;
  if (!ParseFlags(argc, argv, &options)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (!options.seed_given) options.seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  std::string root, data_dir = options.data_dir;
  if (data_dir.empty()) {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/admitd-crashloop-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    root = pattern;
    data_dir = root + "/data";
  }
  const absl::Time began = absl::Now();
  std::mt19937_64 rng(options.seed);
  // Names unique to this run, so a kept data dir can be run again.
  const std::string run =
      absl::StrFormat("r%05x", (rng() ^ static_cast<uint64_t>(getpid())) & 0xfffff);
  std::vector<WorkerLedger> ledgers;
  for (int w = 0; w < options.threads; ++w) ledgers.push_back(NewWorkerLedger(w, run));
  std::printf(
      "admitd-crashloop: %d rounds, %d client threads, seed %llu, kill %s, admitd %s, "
      "data dir %s\n",
      options.rounds, options.threads, static_cast<unsigned long long>(options.seed),
      options.ops_per_round > 0
          ? absl::StrCat("within ", options.ops_per_round, " acknowledged writes").c_str()
          : absl::StrFormat("within %g s of load", options.seconds_per_round).c_str(),
      options.admitd.c_str(), data_dir.c_str());
  std::fflush(stdout);

  Totals totals;
  for (int round = 1; round <= options.rounds + 1; ++round) {
    const absl::Time start = absl::Now();
    std::unique_ptr<testing::Process> process = StartServer(options, data_dir, &totals);
    if (process == nullptr) break;
    testing::Client client(process->address());
    if (round > 1) {
      ++totals.restarts;
      Check(client, ledgers, &totals, absl::StrCat("restart ", round - 1), absl::Now() - start);
    }
    if (round == options.rounds + 1) {
      // The last restart only checks; then a clean stop must close the store and exit 0.
      const int wstatus = process->Kill(SIGTERM);
      if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        Report({absl::StrCat("SIGTERM: admitd exited with wait status ", wstatus)}, &totals);
      }
      break;
    }
    if (absl::Status s = ApplyQueues(client); !s.ok()) {
      Report({absl::StrCat("applying the queues: ", s.message())}, &totals);
      break;
    }
    RunRound(options, round, rng, *process, ledgers, &totals);
  }

  const double wall = absl::ToDoubleSeconds(absl::Now() - began);
  std::printf(
      "summary: %d rounds, %lld kills (SIGKILL), %lld restarts, start to serving mean "
      "%.2f s, max %.2f s; %lld checks\n",
      options.rounds, static_cast<long long>(totals.kills), static_cast<long long>(totals.restarts),
      totals.starts > 0 ? absl::ToDoubleSeconds(totals.recovery_sum) / totals.starts : 0.0,
      absl::ToDoubleSeconds(totals.recovery_max), static_cast<long long>(totals.checks));
  std::printf("acknowledged writes: %lld (%s); reads %lld\n",
              static_cast<long long>(totals.acked.Total()), totals.acked.ToString().c_str(),
              static_cast<long long>(totals.reads));
  std::printf("writes cut off by kills: %lld (applied %lld, not applied %lld)\n",
              static_cast<long long>(totals.cut_off),
              static_cast<long long>(totals.resolution.applied),
              static_cast<long long>(totals.resolution.not_applied));
  std::printf("violations: %lld\n", static_cast<long long>(totals.violations));
  std::printf("wall time: %.1f s\n", wall);
  if (!root.empty()) {
    if (options.keep || totals.violations > 0) {
      std::printf("data dir and admitd logs kept in %s\n", root.c_str());
    } else {
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
    }
  }
  return totals.violations > 0 ? 1 : 0;
}

}  // namespace
}  // namespace admitd::crashloop

int main(int argc, char** argv) { return admitd::crashloop::Main(argc, argv); }
