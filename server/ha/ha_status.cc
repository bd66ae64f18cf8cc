#include "server/ha/ha_status.h"

#include <vector>

#include "absl/time/clock.h"
#include "prometheus/metric_family.h"

namespace admitd::ha {
namespace {

prometheus::MetricFamily Family(const std::string& name, const std::string& help,
                                prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  return family;
}

prometheus::ClientMetric Value(double value, std::vector<prometheus::ClientMetric::Label> labels,
                               prometheus::MetricType type) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return m;
}

}  // namespace

void HaStatus::Applied(uint64_t revision, absl::Time now) {
  applied_.store(revision);
  caught_up_unix_nanos_.store(absl::ToUnixNanos(now));
}

void HaStatus::Leading(int64_t term, uint64_t revision, std::function<uint64_t()> revision_now) {
  {
    absl::MutexLock lock(&mu_);
    revision_now_ = std::move(revision_now);
  }
  term_.store(term);
  applied_.store(revision);
  failovers_.fetch_add(1);
  leading_.store(true);
}

double HaStatus::LagSeconds(absl::Time now) const {
  const int64_t caught_up = caught_up_unix_nanos_.load();
  if (leading_.load() || caught_up == 0) return 0;
  return absl::ToDoubleSeconds(now - absl::FromUnixNanos(caught_up));
}

void HaStatus::AddTo(MetricsRegistry& registry) const {
  registry.AddCollector([this] {
    using prometheus::MetricType;
    const prometheus::ClientMetric::Label domain{"domain", domain_};
    std::vector<prometheus::MetricFamily> families;
    prometheus::MetricFamily role =
        Family("admitd_ha_role", "1 for this replica's role in its HA domain, 0 for the other.",
               MetricType::Gauge);
    role.metric.push_back(Value(leading_ ? 1 : 0, {domain, {"role", "leader"}}, MetricType::Gauge));
    role.metric.push_back(
        Value(leading_ ? 0 : 1, {domain, {"role", "follower"}}, MetricType::Gauge));
    families.push_back(std::move(role));
    const std::pair<const char*, const char*> gauges[] = {
        {"admitd_ha_term", "The term of the leader this replica knows of (0: none yet)."},
        {"admitd_ha_applied_revision", "The last revision of the replicated log in this "
                                       "replica's store."},
        {"admitd_ha_replication_lag_seconds",
         "0 on the leader; on a follower, seconds since it last read the log to its end."}};
    uint64_t applied = applied_.load();
    {
      absl::MutexLock lock(&mu_);
      if (revision_now_) applied = revision_now_();
    }
    const double values[] = {static_cast<double>(term_.load()), static_cast<double>(applied),
                             LagSeconds(absl::Now())};
    for (int i = 0; i < 3; ++i) {
      prometheus::MetricFamily f = Family(gauges[i].first, gauges[i].second, MetricType::Gauge);
      f.metric.push_back(Value(values[i], {domain}, MetricType::Gauge));
      families.push_back(std::move(f));
    }
    prometheus::MetricFamily failovers = Family(
        "admitd_ha_failovers_total", "Times this replica took the leadership over.",
        MetricType::Counter);
    failovers.metric.push_back(
        Value(static_cast<double>(failovers_.load()), {domain}, MetricType::Counter));
    families.push_back(std::move(failovers));
    return families;
  });
}

}  // namespace admitd::ha
