// Metrics: counters and gauges in Prometheus' text exposition format, and the HTTP endpoint
// that serves them with the health checks (--metrics-listen).
//
//   Metrics m;
//   m.Add("admitd_admitted_workloads_total", "Workloads admitted.", {{"cluster_queue", "a"}});
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
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/engine.h"
#include "common/http_endpoint.h"

namespace admitd {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  // Distinct values a `cluster` label takes at most, besides kOtherClusterLabel.
  static constexpr int kMaxClusterLabelValues = 1000;
  // The `cluster` label of series counted for clusters beyond that cap, and for names that are
  // not DNS-1123 subdomains (at most 253 characters).
  static constexpr char kOtherClusterLabel[] = "_other";

  // Adds `value` to a counter (created at 0 on first use). A `cluster` label's value is bounded as
  // the file comment says.
  void Add(const std::string& name, const std::string& help, const MetricLabels& labels,
           double value = 1);
  // Sets a gauge.
  void Set(const std::string& name, const std::string& help, const MetricLabels& labels,
           double value);
  // The value of one series (0 when absent); for tests.
  double Value(const std::string& name, const MetricLabels& labels) const;
  // Prometheus text exposition format 0.0.4, families and series sorted.
  std::string Render() const;

  // Counts the workload Changes of one committed batch (admissions, evictions, preemptions,
  // finishes, slice lifecycle) into Kueue-named counters with the admitd_ prefix.
  void CountChanges(const std::vector<engine::Change>& changes);

  // Replaces kueue_pending_workloads{cluster_queue,status=active|inadmissible} with `counts`
  // (a ClusterQueue no longer listed loses its series). The name is Kueue's own, unprefixed, so
  // dashboards and alerts written for Kueue read it unchanged.
  void SetPendingWorkloads(const std::vector<engine::PendingCount>& counts);

 private:
  struct Family {
    std::string help;
    std::string type;  // counter | gauge
    std::map<MetricLabels, double> series;
  };
  void Update(const std::string& name, const std::string& help, const char* type,
              const MetricLabels& labels, double value, bool add);

  // The value a `cluster` label gets for `cluster`.
  std::string BoundedClusterLabel(const std::string& cluster) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
  // Cluster names with their own label value; never more than kMaxClusterLabelValues.
  std::set<std::string> cluster_labels_ ABSL_GUARDED_BY(mu_);
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
