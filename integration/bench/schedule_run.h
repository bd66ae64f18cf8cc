// One run of a generator config against a server: creates the queues, submits every workload on
// its schedule, "runs" each admitted workload for its runtime, completes evictions, and checks
// quota and lifecycle invariants at every Watch event.
#ifndef ADMITD_INTEGRATION_BENCH_SCHEDULE_RUN_H_
#define ADMITD_INTEGRATION_BENCH_SCHEDULE_RUN_H_

#include <string>

#include "absl/time/time.h"
#include "integration/bench/bench_config.h"
#include "integration/bench/schedule_ledger.h"

namespace admitd::bench {

// `timeout` bounds the whole run after setup.
RunReport RunSchedule(const std::string& address, const Plan& plan, double scale,
                      absl::Duration timeout);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SCHEDULE_RUN_H_
