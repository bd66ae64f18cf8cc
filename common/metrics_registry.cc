#include "common/metrics_registry.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "prometheus/text_serializer.h"

namespace admitd {

const std::vector<double> kLatencyBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                             0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                             0.5,     1,      2.5,     5,      10};
const std::vector<double> kWaitTimeBuckets = {0.01, 0.05, 0.1,  0.25, 0.5,  1,    2.5,
                                              5,    10,   20,   40,   80,   160,  320,
                                              640,  1280, 2560, 5120, 10240};
const std::vector<double> kExecutionTimeBuckets = {1,   2.5,  5,    10,   20,    40,
                                                   80,  160,  320,  640,  1280,  2560,
                                                   5120, 10240, 20480, 40960};

namespace {

prometheus::Labels ToLabels(const MetricLabels& labels) {
  return prometheus::Labels(labels.begin(), labels.end());
}

// Collectors' families are matched on their labels in any order.
bool SameLabels(const prometheus::ClientMetric& m, const MetricLabels& labels) {
  if (m.label.size() != labels.size()) return false;
  for (const auto& wanted : labels) {
    if (std::none_of(m.label.begin(), m.label.end(),
                     [&wanted](const prometheus::ClientMetric::Label& l) {
                       return l.name == wanted.first && l.value == wanted.second;
                     })) {
      return false;
    }
  }
  return true;
}

double SampleValue(const prometheus::MetricFamily& f, const prometheus::ClientMetric& m) {
  switch (f.type) {
    case prometheus::MetricType::Counter: return m.counter.value;
    case prometheus::MetricType::Gauge: return m.gauge.value;
    case prometheus::MetricType::Histogram: return static_cast<double>(m.histogram.sample_count);
    default: return m.untyped.value;
  }
}

}  // namespace

MetricsRegistry::MetricsRegistry() : registry_(std::make_shared<prometheus::Registry>()) {}
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Entry& MetricsRegistry::FamilyFor(const std::string& name,
                                                   const std::string& help,
                                                   prometheus::MetricType type,
                                                   const std::vector<double>* buckets) {
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second.type != type) {
      std::cerr << "metric " << name << " used with two types\n";
      std::abort();
    }
    return it->second;
  }
  void* family = nullptr;
  switch (type) {
    case prometheus::MetricType::Counter:
      family = &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
      break;
    case prometheus::MetricType::Gauge:
      family = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
      break;
    default:
      family = &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
      buckets_[name] = *buckets;
      break;
  }
  return families_.emplace(name, Entry{type, family}).first->second;
}

prometheus::Counter& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                              const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  Entry& e = FamilyFor(name, help, prometheus::MetricType::Counter, nullptr);
  return static_cast<prometheus::Family<prometheus::Counter>*>(e.family)->Add(ToLabels(labels));
}

prometheus::Gauge& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                          const MetricLabels& labels) {
  absl::MutexLock lock(&mu_);
  Entry& e = FamilyFor(name, help, prometheus::MetricType::Gauge, nullptr);
  return static_cast<prometheus::Family<prometheus::Gauge>*>(e.family)->Add(ToLabels(labels));
}

prometheus::Histogram& MetricsRegistry::Histogram(const std::string& name,
                                                  const std::string& help,
                                                  const MetricLabels& labels,
                                                  const std::vector<double>& buckets) {
  absl::MutexLock lock(&mu_);
  Entry& e = FamilyFor(name, help, prometheus::MetricType::Histogram, &buckets);
  return static_cast<prometheus::Family<prometheus::Histogram>*>(e.family)->Add(
      ToLabels(labels), buckets_[name]);
}

double MetricsRegistry::Value(const std::string& name, const MetricLabels& labels) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = families_.find(name);
    if (it != families_.end()) {
      const prometheus::Labels l = ToLabels(labels);
      switch (it->second.type) {
        case prometheus::MetricType::Counter: {
          auto* f = static_cast<prometheus::Family<prometheus::Counter>*>(it->second.family);
          return f->Has(l) ? f->Add(l).Value() : 0;
        }
        case prometheus::MetricType::Gauge: {
          auto* f = static_cast<prometheus::Family<prometheus::Gauge>*>(it->second.family);
          return f->Has(l) ? f->Add(l).Value() : 0;
        }
        default: {
          auto* f = static_cast<prometheus::Family<prometheus::Histogram>*>(it->second.family);
          if (!f->Has(l)) return 0;
          return static_cast<double>(
              f->Add(l, buckets_.at(name)).Collect().histogram.sample_count);
        }
      }
    }
  }
  std::vector<Collector> collectors;
  {
    absl::MutexLock lock(&mu_);
    collectors = collectors_;
  }
  absl::MutexLock render(&render_mu_);
  for (const Collector& c : collectors) {
    for (const prometheus::MetricFamily& f : c()) {
      if (f.name != name) continue;
      for (const prometheus::ClientMetric& m : f.metric) {
        if (SameLabels(m, labels)) return SampleValue(f, m);
      }
    }
  }
  return 0;
}

void MetricsRegistry::AddCollector(Collector collector) {
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() const {
  absl::MutexLock render(&render_mu_);
  std::vector<Collector> collectors;
  {
    absl::MutexLock lock(&mu_);
    collectors = collectors_;
  }
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (const Collector& c : collectors) {
    for (prometheus::MetricFamily& f : c()) {
      if (!f.metric.empty()) families.push_back(std::move(f));  // no series, no family
    }
  }
  std::sort(families.begin(), families.end(),
            [](const prometheus::MetricFamily& a, const prometheus::MetricFamily& b) {
              return a.name < b.name;
            });
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

prometheus::MetricFamily MetricFamilyOf(const std::string& name, const std::string& help,
                                        prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void AddSample(prometheus::MetricFamily* family, const MetricLabels& labels, double value) {
  prometheus::ClientMetric m;
  for (const auto& [name, v] : labels) m.label.push_back({name, v});
  switch (family->type) {
    case prometheus::MetricType::Counter: m.counter.value = value; break;
    case prometheus::MetricType::Gauge: m.gauge.value = value; break;
    default: m.untyped.value = value; break;
  }
  family->metric.push_back(std::move(m));
}

}  // namespace admitd
