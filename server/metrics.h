// Metrics: counters and gauges in Prometheus' text exposition format, and the HTTP endpoint
// that serves them (--metrics-listen).
//
//   Metrics m;
//   m.Add("admitd_admitted_workloads_total", "Workloads admitted.", {{"cluster_queue", "a"}});
//   std::string text = m.Render();
//
// The sequencer counts what committed batches did (CountChanges), so a counter never includes a
// change that was not made durable.
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_SERVER_METRICS_H_
#define ADMITD_SERVER_METRICS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/engine.h"

namespace admitd {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  // Adds `value` to a counter (created at 0 on first use).
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

 private:
  struct Family {
    std::string help;
    std::string type;  // counter | gauge
    std::map<MetricLabels, double> series;
  };
  void Update(const std::string& name, const std::string& help, const char* type,
              const MetricLabels& labels, double value, bool add);

  mutable absl::Mutex mu_;
  std::map<std::string, Family> families_ ABSL_GUARDED_BY(mu_);
};

// A minimal HTTP/1.1 server for GET /metrics, GET /healthz (the process is up) and GET /readyz
// (200 while `ready` is OK, 503 with its message otherwise), one request per connection.
class MetricsServer {
 public:
  // Listens on "host:port" (port 0 picks one). `metrics` must outlive the server; `ready` is
  // called from the server's thread (null: always ready).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address, const Metrics* metrics,
      std::function<absl::Status()> ready = nullptr);
  ~MetricsServer();  // stops and joins
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void Serve();

  const Metrics* metrics_ = nullptr;
  std::function<absl::Status()> ready_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_METRICS_H_
