// shim_bench's report: what a run measured (the objects' and the direct Workloads' timelines, the
// processes' CPU time, memory and the machine's TCP counters, the shim's counters), printed as
// tables (the latencies over all objects, then per kind) and, last, as one JSON line.
//
//   ShimBenchFigures f{.ok = ok, .kinds = kinds, .objects = &objects, .direct = &direct, ...};
//   PrintShimBenchReport(f);
//
// Thread safety: the timelines are read under their mutexes; call it once the phases are over.
#ifndef ADMITD_INTEGRATION_BENCH_SHIM_BENCH_REPORT_H_
#define ADMITD_INTEGRATION_BENCH_SHIM_BENCH_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "integration/bench/bench_process.h"
#include "integration/bench/bench_timeline.h"
#include "integration/bench/shim_bench_kinds.h"

namespace admitd::bench {

// CPU seconds of each process at one moment.
struct CpuSample {
  double shim = 0, apiserver = 0, admitd = 0, bench = 0;
};

struct ShimBenchFigures {
  bool ok = false;
  std::string stopped_at;  // why the run stopped early, or ""
  int threads = 0;
  // Object i is of kind kinds[i % kinds.size()].
  std::vector<const BenchKind*> kinds;
  // The objects (sent, returned, Workload in admitd, admitted, running) and the direct Workloads
  // (sent, returned, admitted).
  Timeline* objects = nullptr;
  Timeline* direct = nullptr;
  // When the first pod of each Deployment or StatefulSet was seen (`done`), or nullptr.
  Timeline* pods = nullptr;
  absl::Time first_sent, last_returned, last_done;
  absl::Time direct_first_sent, direct_last_done;
  // Before the first create, at the last running object, and once the shim went quiet.
  CpuSample cpu_before, cpu_done, cpu_settled;
  double settle_s = 0;
  // shim, apiserver, admitd: RSS before the first create, peak after the phase.
  int64_t rss_before_kib[3] = {-1, -1, -1};
  int64_t hwm_kib[3] = {-1, -1, -1};
  TcpCounters tcp_before, tcp_after;
  // The shim's counters after the objects phase (its /metrics), by metric name.
  std::vector<std::pair<std::string, double>> shim_counters;
};

// Prints the tables and the JSON line to stdout.
void PrintShimBenchReport(const ShimBenchFigures& f);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SHIM_BENCH_REPORT_H_
