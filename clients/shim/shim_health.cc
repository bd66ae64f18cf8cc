// admitd-shim's operational endpoint (Shim's half in shim.h): /healthz, /readyz with one line per
// informer and the link to admitd, and the /metrics families of the reconcilers, the pod sync,
// the Workload mirror, the namespace sync and the event recorder.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/shim/shim.h"

namespace admitd::shim {

HttpReply Shim::Healthz() const {
  const std::string admitd = admitd_->UnreachableReason();
  return HttpReply{200, "text/plain",
                   absl::StrCat("[+]ping ok\n",
                                admitd.empty() ? "[+]admitd ok\n" : "[-]admitd " + admitd + "\n",
                                "healthz check passed\n")};
}

HttpReply Shim::Readyz() const {
  const std::string admitd = admitd_->UnreachableReason();
  const bool jobs = jobs_->lists() > 0, pods = pods_->lists() > 0, link = admitd_->Synced();
  const bool ready = Synced();
  std::string body = absl::StrCat(
      jobs ? "[+]informer-jobs synced\n" : "[-]informer-jobs not synced\n",
      pods ? "[+]informer-pods synced\n" : "[-]informer-pods not synced\n",
      namespaces_->lists() > 0 ? "[+]informer-namespaces synced\n"
                               : "[-]informer-namespaces not synced\n",
      !managed_pods_                ? ""
      : managed_pods_->lists() > 0 ? "[+]informer-managed-pods synced\n"
                                   : "[-]informer-managed-pods not synced\n",
      !rayclusters_                  ? ""
      : rayclusters_->lists() > 0    ? "[+]informer-rayclusters synced\n"
      : rayclusters_->missing()      ? "[+]informer-rayclusters: rayclusters.ray.io not installed\n"
                                     : "[-]informer-rayclusters not synced\n",
      !ray_pods_                    ? ""
      : ray_pods_->lists() > 0      ? "[+]informer-ray-pods synced\n"
                                    : "[-]informer-ray-pods not synced\n",
      link ? "[+]admitd synced\n" : "[-]admitd not synced\n",
      admitd.empty() ? "[+]admitd reachable\n" : "[-]admitd " + admitd + "\n",
      leading_.load() ? "[+]leader\n" : "[+]follower\n",
      ready ? "readyz check passed\n" : "readyz check failed\n");
  return HttpReply{ready ? 200 : 503, "text/plain", std::move(body)};
}

std::vector<prometheus::MetricFamily> Shim::CollectCounters() const {
  const JobReconcilerCounters& c = reconciler_->counters();
  std::vector<prometheus::MetricFamily> out;
  auto gauge = [&](const char* name, const char* help, double v) {
    out.push_back(MetricFamilyOf(name, help, prometheus::MetricType::Gauge));
    AddSample(&out.back(), {}, v);
  };
  auto counter = [&](const char* name, const char* help, int64_t v) {
    out.push_back(MetricFamilyOf(name, help, prometheus::MetricType::Counter));
    AddSample(&out.back(), {}, static_cast<double>(v));
  };
  gauge("admitd_shim_admitd_reachable", "1 while admitd answers, 0 while it cannot be reached.",
        admitd_->Reachable() ? 1 : 0);
  gauge("admitd_shim_leader", "1 while this replica leads (reconciles).", leading_.load() ? 1 : 0);
  gauge("admitd_shim_synced", "1 once the Kubernetes and admitd caches have synced.",
        Synced() ? 1 : 0);
  gauge("admitd_shim_workqueue_depth", "Jobs waiting to be reconciled.",
        static_cast<double>(queue_.Len()));
  gauge("admitd_shim_jobs_cached", "Jobs in the informer's cache.",
        static_cast<double>(jobs_->Size()));
  counter("admitd_shim_reconciles_total", "Job reconciles run.", c.reconciles.load());
  counter("admitd_shim_reconcile_errors_total", "Job reconciles that failed and were retried.",
          reconcile_errors_.load());
  // Workload-level counters add up both kinds' reconciles.
  const RayClusterReconcilerCounters* r = ray_reconciler_ ? &ray_reconciler_->counters() : nullptr;
  auto both = [&](const std::atomic<int64_t>& job,
                  std::atomic<int64_t> RayClusterReconcilerCounters::*ray) {
    return job.load() + (r != nullptr ? (r->*ray).load() : 0);
  };
  counter("admitd_shim_workloads_submitted_total", "Workloads created in admitd.",
          both(c.submits, &RayClusterReconcilerCounters::submits));
  counter("admitd_shim_jobs_started_total", "Jobs unsuspended on admission.", c.starts.load());
  counter("admitd_shim_jobs_stopped_total", "Jobs suspended (eviction, no admission).",
          c.stops.load());
  counter("admitd_shim_quota_releases_total", "ReleaseQuota calls (finished, stopped, reclaimable).",
          both(c.releases, &RayClusterReconcilerCounters::releases));
  counter("admitd_shim_workloads_deleted_total", "Workloads deleted in admitd.",
          both(c.deletes, &RayClusterReconcilerCounters::deletes));
  counter("admitd_shim_resizes_total", "Resize calls for elastic Jobs and RayClusters.",
          both(c.resizes, &RayClusterReconcilerCounters::resizes));
  counter("admitd_shim_pods_ungated_total", "Elastic Job and RayCluster pods ungated.",
          both(c.ungated, &RayClusterReconcilerCounters::ungated));
  counter("admitd_shim_multikueue_status_mirrored_total",
          "Manager Jobs whose status was set from their worker's Job.", c.mirrored.load());
  counter("admitd_shim_multikueue_status_reported_total",
          "Worker Job statuses reported to admitd for the manager.", c.reported.load());
  if (multikueue_worker_) {
    counter("admitd_shim_multikueue_jobs_created_total",
            "Jobs created in this worker cluster for winning MultiKueue copies.",
            multikueue_worker_->created());
    counter("admitd_shim_multikueue_jobs_withdrawn_total",
            "Worker Jobs deleted because the manager withdrew their copy.", c.withdrawn.load());
    counter("admitd_shim_multikueue_copy_reconcile_errors_total",
            "MultiKueue copy reconciles that failed and were retried.",
            copy_reconcile_errors_.load());
  }
  if (r != nullptr) {
    gauge("admitd_shim_raycluster_workqueue_depth", "RayClusters waiting to be reconciled.",
          static_cast<double>(ray_queue_.Len()));
    gauge("admitd_shim_rayclusters_cached", "RayClusters in the informer's cache.",
          static_cast<double>(rayclusters_->Size()));
    counter("admitd_shim_raycluster_reconciles_total", "RayCluster reconciles run.",
            r->reconciles.load());
    counter("admitd_shim_raycluster_reconcile_errors_total",
            "RayCluster reconciles that failed and were retried.", ray_reconcile_errors_.load());
    counter("admitd_shim_rayclusters_started_total", "RayClusters unsuspended on admission.",
            r->starts.load());
    counter("admitd_shim_rayclusters_stopped_total",
            "RayClusters suspended (eviction, no admission).", r->stops.load());
  }
  counter("admitd_shim_admitd_lists_total", "Full lists of admitd's Workloads (start, lost watch).",
          admitd_->lists());
  if (pod_sync_) {
    const PodSyncCounters& p = pod_sync_->counters();
    counter("admitd_shim_pod_reports_total", "ReportPods calls.", p.reports.load());
    counter("admitd_shim_pods_reported_total", "Pods reported (changed or deleted).",
            p.reported_pods.load());
    counter("admitd_shim_pod_report_errors_total", "ReportPods calls that failed.",
            p.report_errors.load());
    counter("admitd_shim_pods_ungated_by_directive_total", "Pods ungated on admitd's directive.",
            p.ungated.load());
    counter("admitd_shim_pods_deleted_total", "Pods deleted on admitd's directive.",
            p.deleted.load());
    counter("admitd_shim_pod_finalizers_removed_total", "Pod finalizers removed.",
            p.finalizers_removed.load());
    counter("admitd_shim_pod_directive_errors_total", "Directives that could not be applied yet.",
            p.directive_errors.load());
  }
  if (mirror_) {
    counter("admitd_shim_workload_mirror_writes_total",
            "Writes of mirrored Workload objects (create, update, status, delete).",
            mirror_->writes());
  }
  counter("admitd_shim_namespaces_applied_total", "Namespaces (labels) applied to admitd.",
          namespace_sync_->applied());
  counter("admitd_shim_namespaces_deleted_total", "Namespaces deleted in admitd.",
          namespace_sync_->deleted());
  counter("admitd_shim_events_recorded_total", "Kubernetes Events written.", events_->recorded());
  counter("admitd_shim_events_dropped_total", "Kubernetes Events that could not be written.",
          events_->dropped());
  return out;
}

}  // namespace admitd::shim
