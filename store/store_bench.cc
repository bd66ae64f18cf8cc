// Commit throughput of the RocksDB store: batches of 1 and 64 small writes (each with its event),
// with fsync on and off. With sync on, one commit costs one fsync whatever the batch size, which
// is why the sequencer groups commands into batches.
//
//   store_bench [--benchmark_filter=...]      # databases under $ADMITD_BENCH_DIR, else /tmp
//
// Reports commits/s and writes/s (objects written per second) as rate counters.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "store/store.h"

namespace admitd::store {
namespace {

std::string BenchDir(const benchmark::State& state) {
  const char* root = std::getenv("ADMITD_BENCH_DIR");
  return absl::StrCat(root != nullptr ? root : "/tmp", "/admitd_store_bench_", getpid(), "_",
                      state.range(0), "_", state.range(1));
}

// Args: {writes per batch, sync (0 or 1)}.
void BM_Commit(benchmark::State& state) {
  const size_t writes = static_cast<size_t>(state.range(0));
  const std::string path = BenchDir(state);
  std::filesystem::remove_all(path);
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Open({.path = path, .sync = state.range(1) != 0});
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return;
  }

  // A workload-sized value (a serialized Workload is a few hundred bytes).
  const std::string value(300, 'w');
  const std::string event(400, 'e');
  Batch batch;
  for (size_t i = 0; i < writes; ++i) {
    batch.writes.push_back(
        {v1::OBJECT_KIND_WORKLOAD, absl::StrCat("team-", i % 8, "/job-", i), value});
    batch.events.push_back({0, event});
  }
  uint64_t revision = 0;
  for (auto _ : state) {
    for (LoggedEvent& e : batch.events) e.revision = ++revision;
    batch.revision = revision;
    absl::Status status = (*store)->Commit(batch);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
  }
  state.counters["commits/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["writes/s"] = benchmark::Counter(static_cast<double>(state.iterations() * writes),
                                                  benchmark::Counter::kIsRate);
  (*store)->Close().IgnoreError();
  std::filesystem::remove_all(path);
}

BENCHMARK(BM_Commit)
    ->ArgNames({"writes", "sync"})
    ->ArgsProduct({{1, 64}, {1, 0}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace admitd::store

BENCHMARK_MAIN();
