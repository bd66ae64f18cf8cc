// engine_bench: the admission engine alone (no gRPC, no disk).
//
//   build/server/engine/engine_bench
//
// BM_SubmitAndAdmit: Submit plus the scheduling cycles that admit it, per workload, over 100
// ClusterQueues (10 cohorts' worth of names; cohorts are not modelled yet) with room for all.
// BM_SubmitThenDrain: 10,000 workloads submitted over 100 ClusterQueues, then drained by cycles.
// BM_CycleWithPending: the cost of one cycle when N workloads are pending and none fits: it
// grows with the ClusterQueues that have work, not with N.
// BM_CycleWithEquivalentPending: the same with N identical workloads: the first failure sets
// the rest of its queue aside (§5.4), so later cycles have nothing to try;
// BM_FirstCycleWithEquivalentPending times that first cycle alone.
// BM_ApplyClusterQueue / BM_CreateClusterQueues: queue objects among N others.
// BM_WaitingPreemptorCycle: a cycle whose one head is a preemptor waiting for its victims,
// searching again over N candidates in its cohort.
// BM_FairSharingCycles: the cost of fair sharing per scheduling cycle: the same 10,000 pending
// workloads over 100 ClusterQueues of one cohort, half of them borrowing, drained by cycles
// once with the classical order and once with fair sharing's tournament; counters give the
// microseconds per cycle of each and their ratio.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/engine/engine.h"
#include "server/engine/engine_bench_fixture.h"

namespace admitd::engine {
namespace {

using bench::kT0;
using bench::MakeSubmit;
using bench::SetUpQueues;

void BM_SubmitAndAdmit(benchmark::State& state) {
  Engine engine;
  (void)engine.FinishRestore(0);
  constexpr int kQueues = 100;
  SetUpQueues(engine, kQueues, "100000000");
  int64_t i = 0;
  for (auto _ : state) bench::SubmitAndAdmit(engine, i++, kQueues);
  state.counters["decisions/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SubmitAndAdmit);

// 10,000 workloads submitted over 100 ClusterQueues, then cycles until all
// are admitted (100 cycles of 100 heads). Timed: the submits and the cycles; not timed: building
// the queues and dropping the engine.
void BM_SubmitThenDrain(benchmark::State& state) {
  constexpr int kQueues = 100;
  const int64_t workloads = state.range(0);
  int64_t cycles = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<Engine>();
    (void)engine->FinishRestore(0);
    SetUpQueues(*engine, kQueues, "100000000");
    state.ResumeTiming();
    for (int64_t i = 0; i < workloads; ++i) (void)engine->Submit(MakeSubmit(i, kQueues), kT0);
    int admitted = 0;
    CycleStats s;
    do {
      s = engine->RunCycle(kT0);
      admitted += s.admitted;
      ++cycles;
    } while (s.more);
    benchmark::DoNotOptimize(engine->TakeChanges());
    state.PauseTiming();
    if (admitted != workloads) state.SkipWithError("not every workload was admitted");
    engine.reset();
    state.ResumeTiming();
  }
  state.counters["decisions/s"] = benchmark::Counter(
      static_cast<double>(workloads), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["cycles"] =
      benchmark::Counter(static_cast<double>(cycles), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_SubmitThenDrain)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_CycleWithPending(benchmark::State& state) {
  Engine engine;
  (void)engine.FinishRestore(0);
  constexpr int kQueues = 100;
  SetUpQueues(engine, kQueues, "0");  // nothing fits
  for (int64_t i = 0; i < state.range(0); ++i) {
    // Distinct priorities: no two workloads are equivalent, so none is set aside with another
    // (§5.4) and every cycle has a head in every queue.
    v1::SubmitRequest req = MakeSubmit(i, kQueues);
    req.mutable_workload()->mutable_spec()->set_priority(static_cast<int32_t>(i));
    (void)engine.Submit(req, kT0);
  }
  engine.TakeChanges();
  engine.RunCycle(kT0);  // warm-up: the allocator settles after the setup's frees
  engine.TakeChanges();
  for (auto _ : state) {
    // Each cycle tries one head per ClusterQueue; none fits, so each is set aside and the next
    // cycle has fresh heads. Cost per cycle: ~100 heads, whatever the pending count.
    engine.RunCycle(kT0);
    state.PauseTiming();
    engine.TakeChanges();
    state.ResumeTiming();
  }
  state.counters["pending"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_CycleWithPending)->Arg(10000)->Arg(100000)->Iterations(50)->Unit(benchmark::kMicrosecond);

void BM_CycleWithEquivalentPending(benchmark::State& state) {
  Engine engine;
  (void)engine.FinishRestore(0);
  constexpr int kQueues = 100;
  SetUpQueues(engine, kQueues, "0");
  for (int64_t i = 0; i < state.range(0); ++i) (void)engine.Submit(MakeSubmit(i, kQueues), kT0);
  engine.TakeChanges();
  for (auto _ : state) {
    engine.RunCycle(kT0);
    state.PauseTiming();
    engine.TakeChanges();
    state.ResumeTiming();
  }
  state.counters["pending"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_CycleWithEquivalentPending)->Arg(100000)->Iterations(50)->Unit(benchmark::kMicrosecond);

// The first of those cycles alone: 100 heads fail, and each failure sets the rest of its shape
// aside (§5.4) in one step, however many workloads share it. Timed: that cycle; not timed:
// building the engine and its workloads for each iteration.
void BM_FirstCycleWithEquivalentPending(benchmark::State& state) {
  constexpr int kQueues = 100;
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<Engine>();
    (void)engine->FinishRestore(0);
    SetUpQueues(*engine, kQueues, "0");
    for (int64_t i = 0; i < state.range(0); ++i) (void)engine->Submit(MakeSubmit(i, kQueues), kT0);
    engine->TakeChanges();
    state.ResumeTiming();
    const CycleStats stats = engine->RunCycle(kT0);
    state.PauseTiming();
    if (stats.heads != kQueues) state.SkipWithError("every queue should give a head");
    if (engine->RunCycle(kT0).heads != 0) state.SkipWithError("equivalents should be set aside");
    engine.reset();
    state.ResumeTiming();
  }
  state.counters["pending"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_FirstCycleWithEquivalentPending)
    ->Arg(100000)
    ->Iterations(5)
    ->Unit(benchmark::kMicrosecond);

// Apply of one ClusterQueue (its nominal quota changed) among N others, 100 per cohort (fewer
// when N < 100): the cost should not depend on N.
void BM_ApplyClusterQueue(benchmark::State& state) {
  const int queues = static_cast<int>(state.range(0));
  const int cohorts = std::max(1, queues / 100);
  Engine engine;
  (void)engine.FinishRestore(0);
  SetUpQueues(engine, queues, "10", cohorts);
  int64_t i = 0;
  for (auto _ : state) {
    v1::ApplyRequest cq;
    auto* c = cq.mutable_object()->mutable_cluster_queue();
    const int q = static_cast<int>(i % queues);
    c->mutable_metadata()->set_name(absl::StrCat("cq-", q));
    c->mutable_spec()->set_cohort_name(absl::StrCat("cohort-", q % cohorts));
    c->mutable_spec()->mutable_namespace_selector();
    auto* g = c->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    auto* fq = g->add_flavors();
    fq->set_name("default");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota((i / queues) % 2 == 0 ? "20" : "10");
    ++i;
    benchmark::DoNotOptimize(engine.Apply(cq, kT0));
    if (i % 256 == 0) engine.TakeChanges();
  }
  state.counters["queues"] = static_cast<double>(queues);
}
BENCHMARK(BM_ApplyClusterQueue)->Arg(10)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

// Creating N ClusterQueues (100 per cohort) and their LocalQueues from nothing (a fresh
// installation's set-up): the time per ClusterQueue should stay flat as N grows.
void BM_CreateClusterQueues(benchmark::State& state) {
  const int queues = static_cast<int>(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    auto engine = std::make_unique<Engine>();
    (void)engine->FinishRestore(0);
    state.ResumeTiming();
    SetUpQueues(*engine, queues, "10", std::max(1, queues / 100));
    state.PauseTiming();
    engine.reset();
    state.ResumeTiming();
  }
  state.counters["queues/s"] = benchmark::Counter(
      static_cast<double>(queues), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CreateClusterQueues)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

// A preemptor waiting for its victims, tried again in a cycle: one cohort of 100 ClusterQueues;
// cq-0 lends its whole nominal quota to the 99 others, whose N one-cpu workloads fill the
// cohort, then asks for it back. The first cycle evicts the victims it chose; each timed cycle
// searches again over the N candidates while the victims still hold their quota (in a server,
// every batch until they are released).
void BM_WaitingPreemptorCycle(benchmark::State& state) {
  constexpr int kQueues = 100;
  const int64_t n = state.range(0);
  const int64_t nominal = n / kQueues;
  Engine engine;
  (void)engine.FinishRestore(0);
  SetUpQueues(engine, kQueues, absl::StrCat(nominal), /*cohorts=*/1);
  v1::ApplyRequest reclaiming;
  auto* c = reclaiming.mutable_object()->mutable_cluster_queue();
  c->mutable_metadata()->set_name("cq-0");
  c->mutable_spec()->set_cohort_name("cohort-0");
  c->mutable_spec()->mutable_namespace_selector();
  c->mutable_spec()->mutable_preemption()->set_reclaim_within_cohort("Any");
  auto* g = c->mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  auto* fq = g->add_flavors();
  fq->set_name("default");
  fq->add_resources()->set_name("cpu");
  fq->mutable_resources(0)->set_nominal_quota(absl::StrCat(nominal));
  (void)engine.Apply(reclaiming, kT0);
  for (int64_t i = 0; i < n; ++i) {
    v1::SubmitRequest req = MakeSubmit(i, kQueues - 1);
    req.mutable_workload()->mutable_spec()->set_queue_name(absl::StrCat("lq-", 1 + i % (kQueues - 1)));
    (void)engine.Submit(req, kT0);
  }
  while (engine.RunCycle(kT0).more) {
  }
  v1::SubmitRequest preemptor = MakeSubmit(n, kQueues);
  preemptor.mutable_workload()->mutable_spec()->set_queue_name("lq-0");
  (*preemptor.mutable_workload()->mutable_spec()->mutable_pod_sets(0)->mutable_template_()
        ->mutable_spec()->mutable_containers(0)->mutable_resources()->mutable_requests())["cpu"] =
      absl::StrCat(nominal);
  (void)engine.Submit(preemptor, kT0);
  engine.RunCycle(kT0);  // evicts the victims
  engine.TakeChanges();
  int64_t heads = 0;
  for (auto _ : state) {
    heads += engine.RunCycle(kT0).heads;
    state.PauseTiming();
    engine.TakeChanges();
    state.ResumeTiming();
  }
  if (heads != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("the preemptor should be tried in every cycle");
  }
  state.counters["candidates"] = static_cast<double>(n);
}
BENCHMARK(BM_WaitingPreemptorCycle)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

// One cohort of 100 ClusterQueues: cq-0..cq-49 with 160 cpu each, cq-50..cq-99 with none, so
// that half of them borrow; 100 one-cpu workloads pending in each (10,000, 8,000 of which fit).
// Returns the microseconds the cycles took and counts them.
double DrainFairSharingCohort(bool fair_sharing, int64_t* cycles) {
  constexpr int kQueues = 100;
  EngineOptions options;
  options.fair_sharing = fair_sharing;
  options.record_events = false;
  Engine engine(options);
  (void)engine.FinishRestore(0);
  SetUpQueues(engine, kQueues, "", /*cohorts=*/1,
              [](int q) { return std::string(q < kQueues / 2 ? "160" : "0"); });
  for (int64_t i = 0; i < 10000; ++i) (void)engine.Submit(MakeSubmit(i, kQueues), kT0);
  engine.TakeChanges();
  const absl::Time start = absl::Now();
  int admitted = 0;
  CycleStats s;
  do {
    s = engine.RunCycle(kT0);
    admitted += s.admitted;
    ++*cycles;
  } while (s.more);
  const double us = absl::ToDoubleMicroseconds(absl::Now() - start);
  benchmark::DoNotOptimize(engine.TakeChanges());
  if (admitted != 8000) std::abort();  // both orders admit what fits
  return us;
}

void BM_FairSharingCycles(benchmark::State& state) {
  double classical_us = 0, fair_us = 0;
  int64_t classical_cycles = 0, fair_cycles = 0;
  for (auto _ : state) {
    classical_us += DrainFairSharingCohort(false, &classical_cycles);
    fair_us += DrainFairSharingCohort(true, &fair_cycles);
  }
  const double classical = classical_us / static_cast<double>(classical_cycles);
  const double fair = fair_us / static_cast<double>(fair_cycles);
  state.counters["classical_us/cycle"] = classical;
  state.counters["fair_us/cycle"] = fair;
  state.counters["fair/classical"] = fair / classical;
  state.counters["cycles"] = static_cast<double>(fair_cycles) / state.iterations();
}
BENCHMARK(BM_FairSharingCycles)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace admitd::engine

BENCHMARK_MAIN();
