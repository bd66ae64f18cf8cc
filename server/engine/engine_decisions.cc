// engine_decisions: a fixed number of Submit-and-admit decisions (engine_bench's
// BM_SubmitAndAdmit without the timing loop), for instruction counts under
// `valgrind --tool=callgrind`, which are repeatable where timings are not.
//
//   build/server/engine/engine_decisions 4000
//
// scripts/callgrind_decisions.sh runs it twice with different counts and divides the difference,
// so the set-up and start-up costs drop out.
#include <cstdio>
#include <cstdlib>

#include "server/engine/engine_bench_fixture.h"

int main(int argc, char** argv) {
  using namespace admitd::engine;
  const long decisions = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1000;
  if (decisions <= 0) {
    std::fprintf(stderr, "usage: engine_decisions N (N > 0)\n");
    return 2;
  }
  constexpr int kQueues = 100;
  // Never destroyed: destroying the engine at exit frees every admitted workload, a cost that
  // grows with N but belongs to no decision (a workload's memory goes when it finishes or is
  // deleted), so it would not drop out of the difference between two runs.
  Engine& engine = *new Engine();
  (void)engine.FinishRestore(0);
  bench::SetUpQueues(engine, kQueues, "100000000");
  for (long i = 0; i < decisions; ++i) bench::SubmitAndAdmit(engine, i, kQueues);
  engine.TakeChanges();
  std::printf("%ld decisions\n", decisions);
  return 0;
}
