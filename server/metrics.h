// Metrics: admitd's Prometheus metrics (on prometheus-cpp, see common/metrics_registry.h) and
// the HTTP endpoint that serves them with the health checks (--metrics-listen).
//
// Where Kueue has a metric, admitd exports it under Kueue's name and labels (kueue_*), so
// dashboards and alerts written for Kueue read admitd unchanged; admitd's own metrics are
// admitd_*. docs/observability.md lists them all.
//
//   Metrics m;
//   m.Add("admitd_commits_total", "Batches committed to the store.", {});
//   m.CountChanges(batch_changes);          // after the batch is durable
//   m.SetEngineSource([&] { ... });         // ClusterQueue gauges, read at each scrape
//   std::string text = m.Render();
//
// The sequencer counts what committed batches did (CountChanges), so a counter never includes a
// change that was not made durable. Label values come from bounded sets: a `cluster` label
// (named by whoever reports pods) carries a valid name for the first kMaxClusterLabelValues
// distinct clusters only, and kOtherClusterLabel for every other one.
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_SERVER_METRICS_H_
#define ADMITD_SERVER_METRICS_H_

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"
#include "common/http_endpoint.h"
#include "common/metrics_registry.h"
#include "server/engine/engine.h"

namespace admitd {

class Metrics {
 public:
  // Distinct values a `cluster` label takes at most, besides kOtherClusterLabel.
  static constexpr int kMaxClusterLabelValues = 1000;
  // The `cluster` label of series counted for clusters beyond that cap, and for names that are
  // not DNS-1123 subdomains (at most 253 characters).
  static constexpr char kOtherClusterLabel[] = "_other";

  // What the gauges read from the engine at each scrape: every ClusterQueue with its status
  // (as QueueService.List answers it) and the number of objects of each kind.
  struct EngineState {
    std::vector<v1::ClusterQueue> cluster_queues;
    std::vector<std::pair<std::string, int64_t>> object_counts;
    std::vector<engine::NodeShare> weighted_shares;  // empty while fair sharing is off
    // Empty while admission fair sharing is off.
    std::vector<engine::LocalQueueUsage> local_queue_usages;
  };
  // Reads that state; nullopt when it cannot now (the gauges then keep their last values).
  using EngineSource = std::function<std::optional<EngineState>()>;

  Metrics();

  // The registry, for code that keeps references to its series.
  MetricsRegistry& registry() { return registry_; }

  // Adds `value` to a counter / sets a gauge / observes into a histogram (created on first
  // use). A `cluster` label's value is bounded as the file comment says.
  void Add(const std::string& name, const std::string& help, const MetricLabels& labels,
           double value = 1);
  void Set(const std::string& name, const std::string& help, const MetricLabels& labels,
           double value);
  void Observe(const std::string& name, const std::string& help, const MetricLabels& labels,
               const std::vector<double>& buckets, double value);
  // The value of one series (0 when absent; a histogram's observation count); for tests.
  double Value(const std::string& name, const MetricLabels& labels) const;
  // Prometheus text exposition format 0.0.4, families sorted by name.
  std::string Render() const;

  // Counts the workload Changes of one committed batch under Kueue's names: reservations and
  // admissions with their wait times, evictions, preemptions, finishes, replaced slices; plus
  // admitd_workload_changes_total and the pod gate counters.
  void CountChanges(const std::vector<engine::Change>& changes);

  // One scheduling cycle that tried at least one head (Kueue's admission attempt): `admitted`
  // when it reserved quota for any workload.
  void CountAdmissionAttempt(bool admitted, absl::Duration duration);
  // The cycle's preemption skips per ClusterQueue (kueue_admission_cycle_preemption_skips, set
  // for the queues that had some, as Kueue does) and its recomputed assignments
  // (kueue_preemption_target_recomputations_total{cluster_queue, result}).
  void CountCyclePreemptions(const engine::CycleStats& cycle);
  // Both for one scheduling cycle that took `duration`, as admitd counts every cycle it runs
  // (automatic or RunSchedulingCycles): an attempt only when the cycle tried a head.
  void CountCycle(const engine::CycleStats& cycle, absl::Duration duration);

  // The ClusterQueue gauges (kueue_pending_workloads, kueue_reserving_active_workloads,
  // kueue_admitted_active_workloads, kueue_cluster_queue_status and the resource gauges) and
  // admitd_engine_objects{kind} come from `source`, called at each Render.
  void SetEngineSource(EngineSource source);

 private:
  MetricLabels Bounded(const MetricLabels& labels);
  // The value a `cluster` label gets for `cluster`.
  std::string BoundedClusterLabel(const std::string& cluster);
  std::vector<prometheus::MetricFamily> CollectEngineState();

  // The series CountChanges adds to for one ClusterQueue, each looked up in the registry on its
  // first use only (a lookup builds the name, help and labels: most of a commit's metrics cost).
  struct QueueSeries {
    prometheus::Counter* reserved = nullptr;
    prometheus::Histogram* reserved_wait = nullptr;
    prometheus::Counter* admitted = nullptr;
    prometheus::Histogram* admission_wait = nullptr;
    prometheus::Histogram* checks_wait = nullptr;
    prometheus::Counter* finished = nullptr;
    prometheus::Histogram* execution = nullptr;
    prometheus::Histogram* ready_wait = nullptr;
    prometheus::Histogram* admitted_until_ready = nullptr;
  };
  prometheus::Counter& ChangeCounter(const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(counts_mu_);
  // kueue_admission_attempts_total and its duration for one result, looked up on first use.
  struct AttemptSeries {
    prometheus::Counter* attempts = nullptr;
    prometheus::Histogram* duration = nullptr;
  };

  MetricsRegistry registry_;

  absl::Mutex mu_;
  // Cluster names with their own label value; never more than kMaxClusterLabelValues.
  std::set<std::string> cluster_labels_ ABSL_GUARDED_BY(mu_);
  EngineSource engine_source_ ABSL_GUARDED_BY(mu_);
  // What the source last answered.
  EngineState engine_state_ ABSL_GUARDED_BY(mu_);

  // One CountChanges at a time; the series it looked up (the registry never drops a series).
  absl::Mutex counts_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::flat_hash_map<std::string, QueueSeries> queue_series_ ABSL_GUARDED_BY(counts_mu_);
  absl::flat_hash_map<std::string, prometheus::Counter*> change_counters_
      ABSL_GUARDED_BY(counts_mu_);
  AttemptSeries attempt_series_[2] ABSL_GUARDED_BY(counts_mu_);  // inadmissible, success
};

// Serves `metrics` on `address` ("host:port"; port 0 picks one): GET /metrics (Render()),
// GET /healthz ("ok" while the process serves HTTP at all) and GET /readyz ("ok" while `ready()`
// is OK, 503 with its message otherwise). `metrics` must outlive the endpoint. Errors: INVALID_ARGUMENT for an
// address that is not host:port, UNAVAILABLE when it cannot be bound.
absl::StatusOr<std::unique_ptr<HttpEndpoint>> StartMetricsEndpoint(
    const std::string& address, const Metrics* metrics, std::function<absl::Status()> ready,
    HttpEndpointOptions options = {});

}  // namespace admitd

#endif  // ADMITD_SERVER_METRICS_H_
