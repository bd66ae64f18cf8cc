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
// the rest of its queue aside (§5.4), so later cycles have nothing to try.
#include <benchmark/benchmark.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "server/engine/engine.h"

namespace admitd::engine {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

void SetUpQueues(Engine& engine, int queues, const std::string& cpu) {
  v1::ApplyRequest flavor;
  flavor.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name("default");
  (void)engine.Apply(flavor, kT0);
  for (int q = 0; q < queues; ++q) {
    v1::ApplyRequest cq;
    auto* c = cq.mutable_object()->mutable_cluster_queue();
    c->mutable_metadata()->set_name(absl::StrCat("cq-", q));
    c->mutable_spec()->set_cohort_name(absl::StrCat("cohort-", q % 10));
    c->mutable_spec()->mutable_namespace_selector();
    auto* g = c->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    auto* fq = g->add_flavors();
    fq->set_name("default");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota(cpu);
    (void)engine.Apply(cq, kT0);
    v1::ApplyRequest lq;
    auto* l = lq.mutable_object()->mutable_local_queue();
    l->mutable_metadata()->set_namespace_("ns");
    l->mutable_metadata()->set_name(absl::StrCat("lq-", q));
    l->mutable_spec()->set_cluster_queue(absl::StrCat("cq-", q));
    (void)engine.Apply(lq, kT0);
  }
  engine.TakeChanges();
}

v1::SubmitRequest MakeSubmit(int64_t i, int queues) {
  v1::SubmitRequest req;
  auto* wl = req.mutable_workload();
  wl->mutable_metadata()->set_namespace_("ns");
  wl->mutable_metadata()->set_name(absl::StrCat("w-", i));
  wl->mutable_spec()->set_queue_name(absl::StrCat("lq-", i % queues));
  auto* ps = wl->mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(1);
  auto* c = ps->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "1";
  return req;
}

void BM_SubmitAndAdmit(benchmark::State& state) {
  Engine engine;
  (void)engine.FinishRestore(0);
  constexpr int kQueues = 100;
  SetUpQueues(engine, kQueues, "100000000");
  int64_t i = 0;
  for (auto _ : state) {
    (void)engine.Submit(MakeSubmit(i++, kQueues), kT0);
    CycleStats s;
    do {
      s = engine.RunCycle(kT0);
    } while (s.more);
    if (i % 256 == 0) engine.TakeChanges();
  }
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

}  // namespace
}  // namespace admitd::engine

BENCHMARK_MAIN();
