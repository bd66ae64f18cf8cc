#include "server/ha/ha_status.h"

#include <tuple>
#include <vector>

#include "absl/time/clock.h"
#include "prometheus/metric_family.h"

namespace admitd::ha {

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
    const MetricLabels domain = {{"domain", domain_}};
    std::vector<prometheus::MetricFamily> families;
    prometheus::MetricFamily role = MetricFamilyOf(
        "admitd_ha_role", "1 for this replica's role in its HA domain, 0 for the other.",
        MetricType::Gauge);
    AddSample(&role, {{"domain", domain_}, {"role", "leader"}}, leading_ ? 1 : 0);
    AddSample(&role, {{"domain", domain_}, {"role", "follower"}}, leading_ ? 0 : 1);
    families.push_back(std::move(role));
    uint64_t applied = applied_.load();
    {
      absl::MutexLock lock(&mu_);
      if (revision_now_) applied = revision_now_();
    }
    const std::tuple<const char*, const char*, double> gauges[] = {
        {"admitd_ha_term", "The term of the leader this replica knows of (0: none yet).",
         static_cast<double>(term_.load())},
        {"admitd_ha_applied_revision",
         "The last revision of the replicated log in this replica's store.",
         static_cast<double>(applied)},
        {"admitd_ha_replication_lag_seconds",
         "0 on the leader; on a follower, seconds since it last read the log to its end.",
         LagSeconds(absl::Now())}};
    for (const auto& [name, help, value] : gauges) {
      prometheus::MetricFamily f = MetricFamilyOf(name, help, MetricType::Gauge);
      AddSample(&f, domain, value);
      families.push_back(std::move(f));
    }
    prometheus::MetricFamily failovers = MetricFamilyOf(
        "admitd_ha_failovers_total", "Times this replica took the leadership over.",
        MetricType::Counter);
    AddSample(&failovers, domain, static_cast<double>(failovers_.load()));
    families.push_back(std::move(failovers));
    return families;
  });
}

}  // namespace admitd::ha
