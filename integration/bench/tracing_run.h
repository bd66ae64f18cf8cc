// The cost of tracing, measured: the raw run (null RPCs and Submit -> admitted -> Finished
// cycles) against three admitd processes started in turn: tracing off, on at 10 % sampling and
// on at 100 %, both exporting over OTLP/gRPC to a collector in this process that counts what it
// receives. Each figure is printed next to the tracing-off one of the same run.
#ifndef ADMITD_INTEGRATION_BENCH_TRACING_RUN_H_
#define ADMITD_INTEGRATION_BENCH_TRACING_RUN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace admitd::bench {

// 0 when every run completed without errors or violations.
int RunTracingComparison(const std::string& admitd_binary,
                         const std::vector<std::string>& admitd_args, int clients,
                         absl::Duration duration);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_TRACING_RUN_H_
