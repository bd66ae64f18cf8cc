// One run of a generator config against a server: creates the queues, submits every workload on
// its schedule, "runs" each admitted workload for its runtime, completes evictions, and checks
// quota and lifecycle invariants at every Watch event.
#ifndef ADMITD_INTEGRATION_BENCH_SCHEDULE_RUN_H_
#define ADMITD_INTEGRATION_BENCH_SCHEDULE_RUN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "integration/bench/bench_common.h"
#include "integration/bench/bench_config.h"

namespace admitd::bench {

struct ClassReport {
  std::string name;
  int count = 0;
  int admissions = 0;
  int evictions = 0;
  Summary time_to_admission_ms;
};

struct CqClassReport {
  std::string name;
  int cluster_queues = 0;
  double usage_percent = 0;
  int64_t peak_milli = 0;  // highest usage of one ClusterQueue of the class
};

struct RunReport {
  int workloads = 0;
  int finished = 0;
  double scale = 1;
  double wall_ms = 0;
  double work_bound_ms = 0;     // scaled
  double arrival_bound_ms = 0;  // scaled
  double lower_bound_ms() const { return std::max(work_bound_ms, arrival_bound_ms); }
  double ratio() const { return lower_bound_ms() > 0 ? wall_ms / lower_bound_ms() : 0; }
  double setup_ms = 0;
  std::vector<CqClassReport> cq_classes;
  std::vector<ClassReport> classes;
  Summary submit_rpc_ms;
  Summary release_rpc_ms;
  int64_t rpc_errors = 0;
  int watch_reconnects = 0;
  int64_t events = 0;
  int64_t quota_checks = 0;  // commits at whose end the quota invariants were checked
  int64_t violation_count = 0;
  std::vector<std::string> violations;  // the first few
  bool ok() const { return violation_count == 0 && finished == workloads && rpc_errors == 0; }
};

// `timeout` bounds the whole run after setup.
RunReport RunSchedule(const std::string& address, const Plan& plan, double scale,
                      absl::Duration timeout);

void PrintRunReport(const RunReport& report);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SCHEDULE_RUN_H_
