// One round of the kill tools (admitd-crashloop, admitd-hafailover): the load until a chosen
// moment, the kill, and the checks on the server that serves afterwards.
//
//   RoundLoad load = RunLoadAndKill(address, ledgers, {.seconds = 2}, rng,
//                                   [&] { return process.Kill(SIGKILL); });
//   ... restart, or find the new leader ...
//   RoundCheck check = CheckServer(client, ledgers);
//
// Thread safety: one thread drives a round; RunLoadAndKill starts one worker thread per ledger
// and joins them before it returns.
#ifndef ADMITD_INTEGRATION_CRASHLOOP_ROUND_H_
#define ADMITD_INTEGRATION_CRASHLOOP_ROUND_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "integration/crashloop/checker.h"
#include "integration/crashloop/ledger.h"
#include "integration/fixtures.h"

namespace admitd::crashloop {

// When to kill: once a random number (1..ops) of writes were acknowledged when ops > 0, else at
// a uniformly random moment within `seconds` of load.
struct KillMoment {
  double seconds = 2;
  int64_t ops = 0;
};

// What a round's load did.
struct RoundLoad {
  OpCounts acked;
  int64_t reads = 0;
  int64_t cut_off = 0;                // writes whose answer never came
  std::vector<std::string> refusals;  // valid writes the server refused
  std::string moment;                 // "at 1.234 s", "after 40 acknowledged writes (target 52)"
  int kill_status = 0;                // what `kill` returned (a wait status)
};

// Runs a worker per ledger against `address`, calls `kill` at the chosen moment, stops the
// workers (they also stop by themselves once the server is gone) and adds up their figures.
RoundLoad RunLoadAndKill(const std::string& address, std::vector<WorkerLedger>& ledgers,
                         const KillMoment& when, std::mt19937_64& rng,
                         const std::function<int()>& kill);

// The three checks of checker.h on the server's state, resolving the writes cut off by the
// kill in the ledgers.
struct RoundCheck {
  absl::Status read;  // reading the state; the rest is meaningful when ok
  std::vector<std::string> violations;
  Resolution resolution;
  size_t workloads = 0;
  int holding = 0;  // workloads holding quota
  uint64_t revision = 0;
};
RoundCheck CheckServer(testing::Client& client, std::vector<WorkerLedger>& ledgers);

}  // namespace admitd::crashloop

#endif  // ADMITD_INTEGRATION_CRASHLOOP_ROUND_H_
