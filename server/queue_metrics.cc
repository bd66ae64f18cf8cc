#include "server/queue_metrics.h"

#include <cmath>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics_registry.h"
#include "server/engine/conditions.h"
#include "server/engine/quantity.h"

namespace admitd {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

// A quantity in base units (cores for CPU); 0 for one that does not parse (never stored).
double BaseUnits(const std::string& resource, const std::string& text) {
  absl::StatusOr<int64_t> v = engine::ParseQuantity(resource, text);
  if (!v.ok()) return 0;
  return resource == "cpu" ? static_cast<double>(*v) / 1000 : static_cast<double>(*v);
}

MetricLabels ResourceLabels(const v1::ClusterQueue& cq, const std::string& flavor,
                            const std::string& resource) {
  return {{"cohort", cq.spec().cohort_name()},
          {"cluster_queue", cq.metadata().name()},
          {"flavor", flavor},
          {"resource", resource}};
}

void AddUsage(const v1::ClusterQueue& cq,
              const google::protobuf::RepeatedPtrField<v1::FlavorUsage>& usage,
              MetricFamily* family) {
  for (const v1::FlavorUsage& f : usage) {
    for (const v1::ResourceUsage& r : f.resources()) {
      AddSample(family, ResourceLabels(cq, f.name(), r.name()), BaseUnits(r.name(), r.total()));
    }
  }
}

}  // namespace

std::vector<MetricFamily> ClusterQueueMetricFamilies(
    const std::vector<v1::ClusterQueue>& cluster_queues) {
  MetricFamily pending = MetricFamilyOf(
      "kueue_pending_workloads",
      "Pending workloads per ClusterQueue: active (waiting for an attempt) or inadmissible.",
      MetricType::Gauge);
  MetricFamily reserving = MetricFamilyOf(
      "kueue_reserving_active_workloads",
      "Workloads holding a quota reservation (admitted or not), per ClusterQueue.",
      MetricType::Gauge);
  MetricFamily admitted =
      MetricFamilyOf("kueue_admitted_active_workloads",
                     "Admitted workloads that are active (not finished), per ClusterQueue.",
                     MetricType::Gauge);
  MetricFamily status = MetricFamilyOf(
      "kueue_cluster_queue_status",
      "The ClusterQueue's status: 1 for the current one of pending, active, terminating.",
      MetricType::Gauge);
  MetricFamily nominal = MetricFamilyOf("kueue_cluster_queue_nominal_quota",
                                        "The ClusterQueue's nominal quota per flavor and resource.",
                                        MetricType::Gauge);
  MetricFamily borrowing =
      MetricFamilyOf("kueue_cluster_queue_borrowing_limit",
                     "The ClusterQueue's borrowing limit per flavor and resource, where set.",
                     MetricType::Gauge);
  MetricFamily lending =
      MetricFamilyOf("kueue_cluster_queue_lending_limit",
                     "The ClusterQueue's lending limit per flavor and resource, where set.",
                     MetricType::Gauge);
  MetricFamily reservation = MetricFamilyOf(
      "kueue_cluster_queue_resource_reservation",
      "Quota reserved by the ClusterQueue's workloads, per flavor and resource.",
      MetricType::Gauge);
  MetricFamily usage = MetricFamilyOf(
      "kueue_cluster_queue_resource_usage",
      "Quota used by the ClusterQueue's admitted workloads, per flavor and resource.",
      MetricType::Gauge);
  for (const v1::ClusterQueue& cq : cluster_queues) {
    const std::string& name = cq.metadata().name();
    const v1::ClusterQueueStatus& s = cq.status();
    AddSample(&pending, {{"cluster_queue", name}, {"status", "active"}},
              s.pending_active_workloads());
    AddSample(&pending, {{"cluster_queue", name}, {"status", "inadmissible"}},
              s.pending_inadmissible_workloads());
    AddSample(&reserving, {{"cluster_queue", name}}, s.reserving_workloads());
    AddSample(&admitted, {{"cluster_queue", name}}, s.admitted_workloads());
    bool active = false;
    for (const v1::Condition& c : s.conditions()) {
      if (c.type() == "Active") active = c.status() == "True";
    }
    for (const char* st : {"pending", "active", "terminating"}) {
      AddSample(&status, {{"cluster_queue", name}, {"status", st}},
                std::string(st) == (active ? "active" : "pending") ? 1 : 0);
    }
    for (const v1::ResourceGroup& g : cq.spec().resource_groups()) {
      for (const v1::FlavorQuotas& f : g.flavors()) {
        for (const v1::ResourceQuota& r : f.resources()) {
          const MetricLabels labels = ResourceLabels(cq, f.name(), r.name());
          AddSample(&nominal, labels, BaseUnits(r.name(), r.nominal_quota()));
          if (r.has_borrowing_limit()) {
            AddSample(&borrowing, labels, BaseUnits(r.name(), r.borrowing_limit()));
          }
          if (r.has_lending_limit()) {
            AddSample(&lending, labels, BaseUnits(r.name(), r.lending_limit()));
          }
        }
      }
    }
    AddUsage(cq, s.flavors_reservation(), &reservation);
    AddUsage(cq, s.flavors_usage(), &usage);
  }
  std::vector<MetricFamily> out;
  for (MetricFamily* f : {&pending, &reserving, &admitted, &status, &nominal, &borrowing,
                          &lending, &reservation, &usage}) {
    out.push_back(std::move(*f));
  }
  return out;
}

std::vector<MetricFamily> WeightedShareMetricFamilies(
    const std::vector<engine::NodeShare>& shares) {
  if (shares.empty()) return {};
  MetricFamily cq_share = MetricFamilyOf(
      "kueue_cluster_queue_weighted_share",
      "The ClusterQueue's dominant resource share: the largest ratio of its usage above nominal "
      "quota to what the cohort can lend, over its resources, divided by its weight. 0: within "
      "nominal quota; NaN: weight 0 and borrowing.",
      MetricType::Gauge);
  MetricFamily cohort_share = MetricFamilyOf(
      "kueue_cohort_weighted_share",
      "The Cohort's dominant resource share: the largest ratio of its usage above its subtree's "
      "quota to what its parent can lend, over its resources, divided by its weight. 0: within "
      "its quota.",
      MetricType::Gauge);
  for (const engine::NodeShare& s : shares) {
    if (s.cohort) {
      AddSample(&cohort_share, {{"cohort", s.name}}, s.precise);
    } else {
      AddSample(&cq_share, {{"cluster_queue", s.name}, {"cohort", s.parent_cohort}},
                std::isinf(s.precise) ? std::nan("") : s.precise);
    }
  }
  std::vector<MetricFamily> out;
  out.push_back(std::move(cq_share));
  out.push_back(std::move(cohort_share));
  return out;
}

}  // namespace admitd
