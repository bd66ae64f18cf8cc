// Raw throughput: N clients each doing Submit -> (Watch) admitted -> ReleaseQuota(Finished) in a
// closed loop against a queue with room for everything, next to a null-RPC (Ping) baseline
// measured against the same server in the same run, with admitd's and the generator's CPU per
// call in each (so that the share of the cores the generator takes is out of the comparison).
#ifndef ADMITD_INTEGRATION_BENCH_RAW_RUN_H_
#define ADMITD_INTEGRATION_BENCH_RAW_RUN_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "integration/bench/bench_common.h"

namespace admitd::bench {

struct RawReport {
  int clients = 0;
  double seconds = 0;
  double pings_per_second = 0;
  Summary ping_ms;
  double workloads_per_second = 0;
  Summary submit_ms;    // Submit RPC
  Summary admitted_ms;  // Submit sent -> Admitted event received
  Summary release_ms;   // ReleaseQuota RPC
  Summary cycle_ms;     // Submit sent -> ReleaseQuota answered
  int64_t errors = 0;
  int64_t refused_retried = 0;  // calls admitd refused unrun (overloaded), sent again
  int64_t violations = 0;  // a workload admitted or finished more than once
  std::string first_violation;
  int watch_reconnects = 0;
  // CPU seconds per call, of admitd (when its pid is known, else -1) and of this generator, over
  // the null-RPC phase (per Ping) and the cycle phase (per completed workload cycle).
  double server_cpu_per_ping_s = -1, server_cpu_per_cycle_s = -1;
  double client_cpu_per_ping_s = 0, client_cpu_per_cycle_s = 0;
  int64_t cycles = 0;  // workload cycles completed in the cycle phase
  int64_t pings = 0;   // null RPCs answered in the null-RPC phase
  // Batches admitd committed in the cycle phase, counted as the distinct commit revisions of the
  // watch's events (each cycle's commits all carry events of the run's namespace).
  int64_t commits = 0;
  // admitd's threads over each phase, by thread name (empty when its pid is not known).
  ThreadUses server_threads_ping, server_threads_cycle;
  bool ok() const { return errors == 0 && violations == 0 && workloads_per_second > 0; }
};

// Makes the run's channels to `address`; null: plaintext.
using ChannelFactory = std::function<std::shared_ptr<grpc::Channel>(const std::string& address)>;

// `server_pid`: admitd's process, whose CPU is sampled around each phase (-1: not sampled).
// `ping_duration`: the null-RPC phase's length when not `duration`'s (zero).
RawReport RunRaw(const std::string& address, int clients, absl::Duration duration,
                 const std::string& prefix, ChannelFactory connect = nullptr,
                 int server_pid = -1, absl::Duration ping_duration = absl::ZeroDuration());

void PrintRawReport(const RawReport& report);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_RAW_RUN_H_
