// admitd-bench --simulate: the schedule of a generator config run through the admission engine
// alone, in virtual time. No gRPC, no store, no threads and no latency: the same queues, the
// same arrivals, each admitted workload finished its runtime after the admission and each
// evicted one released at once, with the engine driven the way the server's sequencer drives
// it. Its wall time is what the schedule costs with Kueue's scheduling decisions but an
// infinitely fast server: the real run's wall divided by it is admitd's own overhead.
#ifndef ADMITD_INTEGRATION_BENCH_SIMULATE_RUN_H_
#define ADMITD_INTEGRATION_BENCH_SIMULATE_RUN_H_

#include "integration/bench/bench_config.h"
#include "integration/bench/schedule_ledger.h"

namespace admitd::bench {

// Runs `plan` at time scale `scale` (arrivals and runtimes divided by it, as a real run does).
// The report has `simulated` set: its wall time is virtual, `cpu_ms` is the process CPU time
// the simulation took, and `events` counts the workload changes read. Deterministic: the same
// plan and scale give the same report but for cpu_ms.
// With `fair_sharing`, the engine runs Kueue's fair sharing (admitd-bench --fair-sharing).
RunReport SimulateSchedule(const Plan& plan, double scale, bool fair_sharing = false);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SIMULATE_RUN_H_
