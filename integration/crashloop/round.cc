#include "integration/crashloop/round.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "integration/crashloop/load.h"

namespace admitd::crashloop {

RoundLoad RunLoadAndKill(const std::string& address, std::vector<WorkerLedger>& ledgers,
                         const KillMoment& when, std::mt19937_64& rng,
                         const std::function<int()>& kill) {
  for (WorkerLedger& l : ledgers) {
    l.acked = OpCounts();
    l.reads = l.cut_off = 0;
    l.refusals.clear();
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acked{0};
  std::atomic<int> running{static_cast<int>(ledgers.size())};
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (size_t w = 0; w < ledgers.size(); ++w) {
    const uint64_t seed = rng();
    threads.emplace_back([&, w, seed] {
      RunWorker(address, seed, &ledgers[w], &stop, &acked);
      running.fetch_sub(1);
    });
  }
  RoundLoad load;
  if (when.ops > 0) {
    const int64_t target = 1 + static_cast<int64_t>(rng() % when.ops);
    const absl::Time give_up = start + absl::Seconds(120);
    while (acked.load() < target && running.load() > 0 && absl::Now() < give_up) {
      absl::SleepFor(absl::Microseconds(200));
    }
    load.moment = absl::StrCat("after ", acked.load(), " acknowledged writes (target ", target, ")");
  } else {
    const double fraction = std::uniform_real_distribution<double>(0, 1)(rng);
    const absl::Time at = start + absl::Seconds(when.seconds * fraction);
    while (absl::Now() < at && running.load() > 0) {
      absl::SleepFor(std::min(absl::Milliseconds(5), at - absl::Now()));
    }
    load.moment = absl::StrFormat("at %.3f s", absl::ToDoubleSeconds(absl::Now() - start));
  }
  load.kill_status = kill();
  stop = true;
  for (std::thread& t : threads) t.join();
  for (const WorkerLedger& l : ledgers) {
    load.acked.Add(l.acked);
    load.reads += l.reads;
    load.cut_off += l.cut_off;
    for (const std::string& r : l.refusals) load.refusals.push_back("refused: " + r);
  }
  return load;
}

RoundCheck CheckServer(testing::Client& client, std::vector<WorkerLedger>& ledgers) {
  std::vector<std::string> clusters;
  for (const WorkerLedger& l : ledgers) clusters.push_back(l.cluster);
  RoundCheck check;
  absl::StatusOr<ServerState> state = ReadServerState(client, clusters, absl::Seconds(30));
  if (!state.ok()) {
    check.read = state.status();
    return check;
  }
  check.violations = CheckQuota(*state);
  for (std::string& v : CheckSlices(*state)) check.violations.push_back(std::move(v));
  for (WorkerLedger& ledger : ledgers) {
    for (std::string& v : CheckLedger(*state, &ledger, &check.resolution)) {
      check.violations.push_back(std::move(v));
    }
  }
  check.workloads = state->workloads.size();
  for (const auto& [key, wl] : state->workloads) check.holding += testing::HoldsQuota(wl) ? 1 : 0;
  check.revision = state->revision;
  return check;
}

}  // namespace admitd::crashloop
