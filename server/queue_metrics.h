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
// Thread safety: a pure function.
#ifndef ADMITD_SERVER_QUEUE_METRICS_H_
#define ADMITD_SERVER_QUEUE_METRICS_H_

#include <vector>

#include "admitd/v1/objects.pb.h"
#include "prometheus/metric_family.h"

namespace admitd {

std::vector<prometheus::MetricFamily> ClusterQueueMetricFamilies(
    const std::vector<v1::ClusterQueue>& cluster_queues);

}  // namespace admitd

#endif  // ADMITD_SERVER_QUEUE_METRICS_H_
