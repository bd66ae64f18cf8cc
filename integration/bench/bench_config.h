// The generator config of admitd-bench, in the shape of Kueue's scheduler performance runner
// (test/performance/scheduler): cohort sets × ClusterQueue sets, each ClusterQueue with its own
// LocalQueue and workload sets created at a fixed interval. Expand() turns it into the concrete
// objects and the arrival schedule of one run.
#ifndef ADMITD_INTEGRATION_BENCH_BENCH_CONFIG_H_
#define ADMITD_INTEGRATION_BENCH_BENCH_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace admitd::bench {

struct WorkloadTemplate {
  std::string class_name;
  int64_t runtime_ms = 0;
  int32_t priority = 0;
  int64_t request_milli = 0;  // CPU per pod
  int32_t pod_count = 1;
};

// `count` rounds; each round creates every template in turn, each after `creation_interval_ms`.
struct WorkloadsSet {
  int count = 0;
  int64_t creation_interval_ms = 0;
  std::vector<WorkloadTemplate> workloads;
};

struct QueuesSet {
  std::string class_name;
  int count = 0;
  int64_t nominal_milli = 0;
  std::optional<int64_t> borrowing_limit_milli;  // unset: unlimited
  std::string reclaim_within_cohort;             // Never | LowerPriority | Any
  std::string within_cluster_queue;              // Never | LowerPriority | LowerOrNewerEqualPriority
  std::vector<WorkloadsSet> workloads_sets;
};

struct CohortSet {
  std::string class_name;
  int count = 0;
  std::vector<QueuesSet> queues_sets;
};

struct Config {
  std::string flavor = "rf";
  std::vector<CohortSet> cohorts;
};

absl::StatusOr<Config> ParseConfig(const std::string& yaml);
absl::StatusOr<Config> LoadConfig(const std::string& path);

// "20" -> 20000, "500m" -> 500, "1.5" -> 1500.
absl::StatusOr<int64_t> ParseMilli(const std::string& quantity);
// 20000 -> "20", 500 -> "500m".
std::string FormatMilli(int64_t milli);

struct PlannedClusterQueue {
  std::string name;  // also its namespace and its LocalQueue's name
  std::string cohort;
  std::string class_name;
  int64_t nominal_milli = 0;
  std::optional<int64_t> borrowing_limit_milli;
  std::string reclaim_within_cohort;
  std::string within_cluster_queue;
};

struct PlannedWorkload {
  std::string name;
  std::string class_name;
  int cluster_queue = 0;  // index into Plan::cluster_queues
  int64_t request_milli = 0;  // per pod
  int32_t pod_count = 1;
  int32_t priority = 0;
  int64_t arrival_ms = 0;  // after the start of the run, unscaled
  int64_t runtime_ms = 0;  // unscaled
  int64_t total_milli() const { return request_milli * pod_count; }
};

struct Plan {
  std::string flavor;
  std::vector<std::string> cohorts;
  std::vector<PlannedClusterQueue> cluster_queues;
  std::vector<PlannedWorkload> workloads;  // sorted by arrival
  // Unscaled lower bounds on the wall time, in ms: all CPU·time over all nominal quota, and the
  // last arrival plus its runtime.
  double work_bound_ms = 0;
  double arrival_bound_ms = 0;
  double lower_bound_ms() const { return std::max(work_bound_ms, arrival_bound_ms); }
};

// `prefix` is prepended to every cohort and ClusterQueue name, so that repeated runs against
// one server do not share objects.
Plan Expand(const Config& config, const std::string& prefix);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_BENCH_CONFIG_H_
