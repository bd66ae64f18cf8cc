// admitd-hafailover: a real 3-member etcd and three real admitd replicas; round after round,
// mixed concurrent load on the leader (admitd-crashloop's workers), SIGKILL of the leader at a
// random moment, and the time until another replica acknowledges a write. After each failover
// the killed replica comes back as a follower and the new leader's state is checked: every
// acknowledged write present, usage the exact sum of the workloads holding quota, no elastic job
// admitted twice (integration/crashloop/checker.h). Prints the failover time's p50 and max.
//
//   admitd-hafailover [--rounds 10] [--workloads 100000] [--lease-ttl 2s] [--seconds-per-round 2]
//                     [--threads 4] [--seed S] [--admitd PATH] [--keep]
//
// Exits 1 when any check failed or a round found no new leader, 2 on a bad flag.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/connection.h"
#include "integration/crashloop/ledger.h"
#include "integration/crashloop/load.h"
#include "integration/crashloop/round.h"
#include "integration/fixtures.h"
#include "integration/ha/etcd_cluster.h"
#include "integration/ha/replica_group.h"

#ifndef ADMITD_BINARY
#define ADMITD_BINARY "admitd"
#endif

namespace admitd::hafailover {
namespace {

using crashloop::WorkerLedger;

constexpr char kUsage[] =
    "usage: admitd-hafailover [--rounds N] [--workloads N] [--lease-ttl D] [--seconds-per-round S]\n"
    "                         [--threads N] [--seed S] [--admitd PATH] [--keep]\n"
    "  --rounds N             leader kills (default 10)\n"
    "  --workloads N          workloads stored before the first kill (default 100000)\n"
    "  --lease-ttl D          the replicas' --ha-lease-ttl (default 2s)\n"
    "  --seconds-per-round S  kill at a random moment within S seconds of load (default 2)\n"
    "  --threads N            load client threads (default 4)\n"
    "  --seed S               seeds the kill moments and the load (default: the clock)\n"
    "  --admitd PATH          the admitd binary (default: the one built with this tool)\n"
    "  --keep                 keep etcd's and the replicas' data dirs and logs\n";

constexpr int kMaxPrinted = 20;
constexpr char kBulk[] = "bulk";  // the stored workloads' namespace, LocalQueue and ClusterQueue

struct Options {
  int rounds = 10;
  int64_t workloads = 100000;
  std::string lease_ttl = "2s";
  double seconds_per_round = 2;
  int threads = 4;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string admitd = ADMITD_BINARY;
  bool keep = false;
};

int64_t violations = 0;

void Report(const std::vector<std::string>& found) {
  for (size_t i = 0; i < found.size() && i < kMaxPrinted; ++i) {
    std::printf("  VIOLATION: %s\n", found[i].c_str());
  }
  if (found.size() > kMaxPrinted) std::printf("  ... and %zu more\n", found.size() - kMaxPrinted);
  violations += static_cast<int64_t>(found.size());
}

grpc::Status Apply(testing::Client& client, const v1::ApplyRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::ApplyResponse resp;
  return client.queues->Apply(&ctx, req, &resp);
}

grpc::Status Submit(testing::Client& client, const v1::Workload& wl, absl::Duration deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  v1::SubmitRequest req;
  *req.mutable_workload() = wl;
  v1::SubmitResponse resp;
  return client.admission->Submit(&ctx, req, &resp);
}

// The queues of the load and of the stored workloads (half of which fit the quota).
absl::Status ApplyQueues(testing::Client& client, int64_t workloads) {
  if (absl::Status s = crashloop::ApplyQueues(client); !s.ok()) return s;
  const std::string cpu = absl::StrCat(std::max<int64_t>(1, workloads / 20));  // 100m each
  for (const v1::ApplyRequest& req :
       {testing::ClusterQueue(kBulk, {"fa"}, {{"cpu", cpu}}),
        testing::LocalQueue(kBulk, kBulk, kBulk), testing::LocalQueue("probe", kBulk, kBulk)}) {
    grpc::Status s = Apply(client, req);
    if (!s.ok()) return absl::InternalError(absl::StrCat("Apply: ", s.error_message()));
  }
  return absl::OkStatus();
}

// Submits `n` workloads from 32 threads; the rate.
absl::StatusOr<double> Preload(testing::Client& client, int64_t n) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::string error;
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = next++; i < n && !failed; i = next++) {
        grpc::Status s = Submit(
            client, testing::Workload(kBulk, absl::StrCat("w-", i), kBulk, 1, {{"cpu", "100m"}}),
            absl::Seconds(30));
        if (!s.ok() && s.error_code() != grpc::StatusCode::ALREADY_EXISTS && !failed.exchange(true)) {
          error = absl::StrCat("Submit w-", i, ": ", s.error_message());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (failed) return absl::InternalError(error);
  return static_cast<double>(n) / std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - start));
}

// What the new leader's log says its takeover took (log, engine, server), or "?".
std::string TakeoverFromLog(const std::string& log) {
  const size_t line = log.rfind("msg=leading");
  if (line == std::string::npos) return "?";
  const size_t took = log.find("took=", line);
  if (took == std::string::npos) return "?";
  const size_t end = log.find_first_of(" \n", took);
  return log.substr(took + 5, end == std::string::npos ? std::string::npos : end - took - 5);
}

bool ParseFlags(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--keep") {
      o->keep = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return false;
    }
    const std::string v = argv[++i];
    absl::Duration ttl;
    bool ok = true;
    if (flag == "--rounds") {
      ok = absl::SimpleAtoi(v, &o->rounds) && o->rounds > 0;
    } else if (flag == "--workloads") {
      ok = absl::SimpleAtoi(v, &o->workloads) && o->workloads >= 0;
    } else if (flag == "--lease-ttl") {
      ok = absl::ParseDuration(v, &ttl) && ttl >= absl::Seconds(1);
      o->lease_ttl = v;
    } else if (flag == "--seconds-per-round") {
      ok = absl::SimpleAtod(v, &o->seconds_per_round) && o->seconds_per_round > 0;
    } else if (flag == "--threads") {
      ok = absl::SimpleAtoi(v, &o->threads) && o->threads > 0 && o->threads <= 64;
    } else if (flag == "--seed") {
      ok = absl::SimpleAtoi(v, &o->seed);
      o->seed_given = true;
    } else if (flag == "--admitd") {
      o->admitd = v;
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
  const char* tmp = getenv("TMPDIR");
  std::string root = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/admitd-hafailover-XXXXXX");
  if (mkdtemp(root.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  absl::Duration ttl;
  (void)absl::ParseDuration(options.lease_ttl, &ttl);
  std::printf(
      "admitd-hafailover: %d rounds, %lld stored workloads, lease %s, %d load threads, seed %llu, "
      "dir %s\n",
      options.rounds, static_cast<long long>(options.workloads), options.lease_ttl.c_str(),
      options.threads, static_cast<unsigned long long>(options.seed), root.c_str());
  std::fflush(stdout);

  absl::StatusOr<std::unique_ptr<testing::EtcdCluster>> etcd =
      testing::EtcdCluster::Start(3, root + "/etcd");
  if (!etcd.ok()) {
    std::printf("cannot start etcd: %s\n", std::string(etcd.status().message()).c_str());
    return 1;
  }
  testing::ReplicaGroup group({.admitd = options.admitd,
                               .etcd = (*etcd)->endpoints(),
                               .domain = "hafailover",
                               .dir = root,
                               .lease_ttl = options.lease_ttl});
  if (absl::Status s = group.StartAll(); !s.ok()) {
    std::printf("cannot start the replicas: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  absl::StatusOr<int> leader =
      group.FindLeader(group.All(), absl::Seconds(30), testing::ReplicaGroup::ReadProbe);
  if (!leader.ok()) {
    std::printf("no leader: %s\n", std::string(leader.status().message()).c_str());
    return 1;
  }
  if (absl::Status s = ApplyQueues(group.client(*leader), options.workloads); !s.ok()) {
    std::printf("applying the queues: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  absl::StatusOr<double> rate = Preload(group.client(*leader), options.workloads);
  if (!rate.ok()) {
    std::printf("storing the workloads: %s\n", std::string(rate.status().message()).c_str());
    return 1;
  }
  std::printf("stored %lld workloads on leader r%d at %.0f Submits/s; etcd's database: %s\n",
              static_cast<long long>(options.workloads), *leader, *rate,
              (*etcd)->DbSize(0).c_str());
  std::fflush(stdout);

  std::mt19937_64 rng(options.seed);
  const std::string run = absl::StrFormat("h%05x", (rng() ^ static_cast<uint64_t>(getpid())) & 0xfffff);
  std::vector<WorkerLedger> ledgers;
  for (int w = 0; w < options.threads; ++w) ledgers.push_back(crashloop::NewWorkerLedger(w, run));
  std::vector<double> failovers;
  int64_t acked = 0;
  // One channel to every replica, following the leader (common/connection.h).
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect({.target = group.List()});
  if (!channel.ok()) {
    std::printf("cannot connect: %s\n", std::string(channel.status().message()).c_str());
    return 1;
  }
  testing::Client whole(*channel);
  for (int round = 1; round <= options.rounds; ++round) {
    const int old = *leader;
    absl::Time killed;
    crashloop::RoundLoad load = crashloop::RunLoadAndKill(
        group.process(old).address(), ledgers, {.seconds = options.seconds_per_round}, rng, [&] {
          killed = absl::Now();
          return group.Kill(old, SIGKILL);
        });
    acked += load.acked.Total();
    Report(load.refusals);
    // The first write the group acknowledges, through a client of the whole group (as shims
    // and admitctl reach it): it waits for the new leader by itself.
    grpc::Status probe = Submit(
        whole, testing::Workload("probe", absl::StrCat("probe-", round), kBulk, 1, {{"cpu", "100m"}}),
        absl::Seconds(60));
    const double took = absl::ToDoubleSeconds(absl::Now() - killed);
    if (!probe.ok()) {
      std::printf("round %d/%d: no write acknowledged within 60 s: %s\n", round, options.rounds,
                  probe.error_message().c_str());
      ++violations;
      break;
    }
    leader = group.FindLeader(group.Others(old), absl::Seconds(10), testing::ReplicaGroup::ReadProbe);
    if (!leader.ok()) {
      std::printf("round %d/%d: %s\n", round, options.rounds,
                  std::string(leader.status().message()).c_str());
      ++violations;
      break;
    }
    failovers.push_back(took);
    const std::string server_took = TakeoverFromLog(group.process(*leader).Log());
    if (absl::Status s = group.Start(old); !s.ok()) {
      Report({absl::StrCat("r", old, " did not come back as a follower: ", s.message())});
    }
    crashloop::RoundCheck check = crashloop::CheckServer(group.client(*leader), ledgers);
    if (!check.read.ok()) {
      Report({absl::StrCat("cannot read the new leader's state: ", check.read.message())});
      continue;
    }
    std::printf(
        "round %d/%d: SIGKILL of leader r%d %s (%s), %lld writes acknowledged; r%d acknowledged "
        "a write %.2f s later (its takeover: %s); %zu workloads (%d holding quota) at revision "
        "%llu; cut-off writes applied %lld, not applied %lld; %s\n",
        round, options.rounds, old, load.moment.c_str(),
        absl::FormatTime("%H:%M:%E3S", killed, absl::UTCTimeZone()).c_str(),
        static_cast<long long>(load.acked.Total()), *leader, took, server_took.c_str(),
        check.workloads, check.holding, static_cast<unsigned long long>(check.revision),
        static_cast<long long>(check.resolution.applied),
        static_cast<long long>(check.resolution.not_applied),
        check.violations.empty() ? "OK" : absl::StrCat(check.violations.size(), " VIOLATIONS").c_str());
    Report(check.violations);
    std::fflush(stdout);
  }

  std::sort(failovers.begin(), failovers.end());
  if (!failovers.empty()) {
    const double p50 = failovers[(failovers.size() - 1) / 2];
    const double goal = absl::ToDoubleSeconds(ttl) + 1;
    std::printf(
        "failover (leader SIGKILL to the first write acknowledged by the new leader), %zu rounds, "
        "%lld stored workloads: p50 %.2f s, max %.2f s; goal lease + 1 s = %.1f s: %s\n",
        failovers.size(), static_cast<long long>(options.workloads), p50, failovers.back(), goal,
        failovers.back() <= goal ? "met" : (p50 <= goal ? "met at p50, not at max" : "not met"));
  }
  std::printf("etcd's database after the run: %s\n", (*etcd)->DbSize(0).c_str());
  std::printf("acknowledged writes under load: %lld; violations: %lld\n",
              static_cast<long long>(acked), static_cast<long long>(violations));
  if (options.keep || violations > 0) {
    std::printf("data dirs and logs kept in %s\n", root.c_str());
  } else {
    group.StopAll();
    etcd->reset();
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  return violations > 0 ? 1 : 0;
}

}  // namespace
}  // namespace admitd::hafailover

int main(int argc, char** argv) { return admitd::hafailover::Main(argc, argv); }
