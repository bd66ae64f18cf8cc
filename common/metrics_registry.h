// MetricsRegistry: Prometheus metrics of one process (admitd, admitd-shim) on prometheus-cpp,
// looked up by name, and their text exposition for a /metrics endpoint.
//
// Metrics are created on first use with their help text: counters, gauges and histograms, each
// series named by its labels. A hot path keeps the reference that Counter(), Gauge() or
// Histogram() returns (valid as long as the registry) instead of looking it up per event.
// State that is cheaper to read when scraped than to keep up to date (queue gauges, counters
// kept in atomics elsewhere) comes from collectors, run at each Render().
//
//   MetricsRegistry m;
//   m.Add("admitd_commits_total", "Batches committed.", {});
//   prometheus::Histogram& h = m.Histogram("admitd_commit_seconds", "...", {}, kLatencyBuckets);
//   h.Observe(0.002);
//   m.AddCollector([] { return std::vector<prometheus::MetricFamily>{...}; });
//   std::string text = m.Render();
//
// Thread safety: every method may be called from any thread. Collectors run on the thread
// that calls Render(), one Render at a time.
#ifndef ADMITD_COMMON_METRICS_REGISTRY_H_
#define ADMITD_COMMON_METRICS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace admitd {

// Label names and values of one series, in the order given (the exposition sorts them).
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// The content type of the text exposition format that Render() produces.
inline constexpr char kPrometheusTextType[] = "text/plain; version=0.0.4; charset=utf-8";

// Bucket boundaries (seconds) shared by the latency histograms of both processes.
// Request-sized work: 50 µs to 10 s.
extern const std::vector<double> kLatencyBuckets;
// Wait times of workloads, 10 ms to about 3 hours: Kueue's wait-time buckets (1 s, then 2.5 s
// doubling up to 10,240 s) with sub-second ones in front.
extern const std::vector<double> kWaitTimeBuckets;
// How long admitted workloads ran, 1 s to about 11 hours: Kueue's execution-time buckets (1 s,
// then 2.5 s doubling, 16 in all).
extern const std::vector<double> kExecutionTimeBuckets;

class MetricsRegistry {
 public:
  // Builds families for collectors.
  using Collector = std::function<std::vector<prometheus::MetricFamily>()>;

  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The series `labels` of metric `name`, created (at 0) on first use with `help`. A name used
  // before with another type is a programming error (checked, aborts).
  prometheus::Counter& Counter(const std::string& name, const std::string& help,
                               const MetricLabels& labels);
  prometheus::Gauge& Gauge(const std::string& name, const std::string& help,
                           const MetricLabels& labels);
  // `buckets` are the upper bounds, ascending; the first use of `name` fixes them.
  prometheus::Histogram& Histogram(const std::string& name, const std::string& help,
                                   const MetricLabels& labels, const std::vector<double>& buckets);

  // Shorthands: counter += value; gauge = value; one histogram observation.
  void Add(const std::string& name, const std::string& help, const MetricLabels& labels,
           double value = 1) {
    Counter(name, help, labels).Increment(value);
  }
  void Set(const std::string& name, const std::string& help, const MetricLabels& labels,
           double value) {
    Gauge(name, help, labels).Set(value);
  }
  void Observe(const std::string& name, const std::string& help, const MetricLabels& labels,
               const std::vector<double>& buckets, double value) {
    Histogram(name, help, labels, buckets).Observe(value);
  }

  // The value of a counter or gauge series, or a histogram series' observation count; for a
  // family that a collector makes, the collectors run to answer. 0 when absent. For tests.
  double Value(const std::string& name, const MetricLabels& labels) const;

  // Runs `collector` at each Render() and adds what it returns.
  void AddCollector(Collector collector);

  // Every family (the registry's and the collectors'), sorted by name, in Prometheus' text
  // exposition format 0.0.4.
  std::string Render() const;

 private:
  struct Entry {
    prometheus::MetricType type;
    void* family;  // prometheus::Family<T>*, T as `type` says; owned by registry_
  };
  Entry& FamilyFor(const std::string& name, const std::string& help, prometheus::MetricType type,
                   const std::vector<double>* buckets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<prometheus::Registry> registry_;

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> families_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<double>> buckets_ ABSL_GUARDED_BY(mu_);
  std::vector<Collector> collectors_ ABSL_GUARDED_BY(mu_);

  // One Render (one run of the collectors) at a time.
  mutable absl::Mutex render_mu_ ABSL_ACQUIRED_BEFORE(mu_);
};

// Builders for collectors: a family, and one series of it.
prometheus::MetricFamily MetricFamilyOf(const std::string& name, const std::string& help,
                                        prometheus::MetricType type);
void AddSample(prometheus::MetricFamily* family, const MetricLabels& labels, double value);

}  // namespace admitd

#endif  // ADMITD_COMMON_METRICS_REGISTRY_H_
