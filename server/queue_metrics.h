// ClusterQueue gauges under Kueue's names, made from ClusterQueue objects with their status
// (as QueueService.List answers them) when /metrics is scraped, so no batch pays for them.
//
//   std::vector<prometheus::MetricFamily> f = ClusterQueueMetricFamilies(cluster_queues);
//
// Families: kueue_pending_workloads{cluster_queue,status=active|inadmissible},
// kueue_reserving_active_workloads{cluster_queue}, kueue_admitted_active_workloads{cluster_queue},
// kueue_cluster_queue_status{cluster_queue,status=pending|active|terminating} (1 for the current
// status, 0 for the others), and per {cohort,cluster_queue,flavor,resource}:
// kueue_cluster_queue_nominal_quota, kueue_cluster_queue_borrowing_limit and
// kueue_cluster_queue_lending_limit (only where the spec sets one),
// kueue_cluster_queue_resource_reservation (quota-reserved workloads) and
// kueue_cluster_queue_resource_usage (admitted workloads). Quantities are in Kubernetes' base
// units as Kueue reports them: CPU in cores, memory in bytes.
//
// While fair sharing is on, WeightedShareMetricFamilies gives
// kueue_cluster_queue_weighted_share{cluster_queue,cohort} (NaN for a weight-0 queue that
// borrows) and kueue_cohort_weighted_share{cohort} (+Inf for such a cohort, as Kueue reports it).
//
// Thread safety: a pure function.
#ifndef ADMITD_SERVER_QUEUE_METRICS_H_
#define ADMITD_SERVER_QUEUE_METRICS_H_

#include <vector>

#include "admitd/v1/objects.pb.h"
#include "server/engine/engine.h"
#include "prometheus/metric_family.h"

namespace admitd {

std::vector<prometheus::MetricFamily> ClusterQueueMetricFamilies(
    const std::vector<v1::ClusterQueue>& cluster_queues);

// Nothing when `shares` is empty (fair sharing off).
std::vector<prometheus::MetricFamily> WeightedShareMetricFamilies(
    const std::vector<engine::NodeShare>& shares);

}  // namespace admitd

#endif  // ADMITD_SERVER_QUEUE_METRICS_H_
