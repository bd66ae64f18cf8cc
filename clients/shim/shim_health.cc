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
  const bool link = admitd_->Synced();
  const bool ready = Synced();
  std::string body;
  for (const auto& c : controllers_) {
    const IntegrationInfo& info = c->integration->info();
    // The Job's pod informer keeps the name it has always had.
    const std::string pods = info.name == "batch/job" ? "pods" : info.short_name + "-pods";
    const std::string group = info.api_version.substr(0, info.api_version.find('/'));
    absl::StrAppend(&body, c->objects->lists() > 0
                               ? absl::StrCat("[+]informer-", info.resource, " synced\n")
                           : c->objects->missing() && info.custom_resource
                               ? absl::StrCat("[+]informer-", info.resource, ": ", info.resource,
                                              ".", group, " not installed\n")
                               : absl::StrCat("[-]informer-", info.resource, " not synced\n"));
    if (c->pods) {
      absl::StrAppend(&body, c->pods->lists() > 0
                                 ? absl::StrCat("[+]informer-", pods, " synced\n")
                                 : absl::StrCat("[-]informer-", pods, " not synced\n"));
    }
    if (c->children) {
      // A kind's children: informer-<kind>-<their resource> (informer-rayjob-rayclusters).
      const std::string children = absl::StrCat(
          info.short_name, "-", info.children_path.substr(info.children_path.rfind('/') + 1));
      absl::StrAppend(&body, c->children->lists() > 0 || c->children->missing()
                                 ? absl::StrCat("[+]informer-", children, " synced\n")
                                 : absl::StrCat("[-]informer-", children, " not synced\n"));
    }
  }
  absl::StrAppend(&body,
      namespaces_->lists() > 0 ? "[+]informer-namespaces synced\n"
                               : "[-]informer-namespaces not synced\n",
      !managed_pods_                ? ""
      : managed_pods_->lists() > 0 ? "[+]informer-managed-pods synced\n"
                                   : "[-]informer-managed-pods not synced\n",
      link ? "[+]admitd synced\n" : "[-]admitd not synced\n",
      admitd.empty() ? "[+]admitd reachable\n" : "[-]admitd " + admitd + "\n",
      leading_.load() ? "[+]leader\n" : "[+]follower\n",
      ready ? "readyz check passed\n" : "readyz check failed\n");
  return HttpReply{ready ? 200 : 503, "text/plain", std::move(body)};
}

std::vector<prometheus::MetricFamily> Shim::CollectCounters() const {
  const ReconcilerCounters& c = jobs_->reconciler->counters();
  std::vector<prometheus::MetricFamily> out;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    out.push_back(MetricFamilyOf(name, help, prometheus::MetricType::Gauge));
    AddSample(&out.back(), {}, v);
  };
  auto counter = [&](const std::string& name, const std::string& help, int64_t v) {
    out.push_back(MetricFamilyOf(name, help, prometheus::MetricType::Counter));
    AddSample(&out.back(), {}, static_cast<double>(v));
  };
  // Workload-level counters add up every kind's reconciles.
  auto sum = [&](std::atomic<int64_t> ReconcilerCounters::*field) {
    int64_t n = 0;
    for (const auto& k : controllers_) {
      if (k->reconciler) n += (k->reconciler->counters().*field).load();
    }
    return n;
  };
  gauge("admitd_shim_admitd_reachable", "1 while admitd answers, 0 while it cannot be reached.",
        admitd_->Reachable() ? 1 : 0);
  gauge("admitd_shim_leader", "1 while this replica leads (reconciles).", leading_.load() ? 1 : 0);
  gauge("admitd_shim_synced", "1 once the Kubernetes and admitd caches have synced.",
        Synced() ? 1 : 0);
  gauge("admitd_shim_workqueue_depth", "Jobs waiting to be reconciled.",
        static_cast<double>(jobs_->queue.Len()));
  gauge("admitd_shim_jobs_cached", "Jobs in the informer's cache.",
        static_cast<double>(jobs_->objects->Size()));
  counter("admitd_shim_reconciles_total", "Job reconciles run.", c.reconciles.load());
  counter("admitd_shim_reconcile_errors_total", "Job reconciles that failed and were retried.",
          jobs_->errors.load());
  counter("admitd_shim_workloads_submitted_total", "Workloads created in admitd.",
          sum(&ReconcilerCounters::submits));
  counter("admitd_shim_jobs_started_total", "Jobs unsuspended on admission.", c.starts.load());
  counter("admitd_shim_jobs_stopped_total", "Jobs suspended (eviction, no admission).",
          c.stops.load());
  counter("admitd_shim_quota_releases_total", "ReleaseQuota calls (finished, stopped, reclaimable).",
          sum(&ReconcilerCounters::releases));
  counter("admitd_shim_workloads_deleted_total", "Workloads deleted in admitd.",
          sum(&ReconcilerCounters::deletes));
  counter("admitd_shim_resizes_total", "Resize calls for elastic jobs of every kind.",
          sum(&ReconcilerCounters::resizes));
  counter("admitd_shim_pods_ungated_total", "Elastic jobs' pods ungated, of every kind.",
          sum(&ReconcilerCounters::ungated));
  counter("admitd_shim_multikueue_status_mirrored_total",
          "Manager jobs whose status was set from their worker's.",
          sum(&ReconcilerCounters::mirrored));
  counter("admitd_shim_multikueue_status_reported_total",
          "Worker job statuses reported to admitd for the manager.",
          sum(&ReconcilerCounters::reported));
  if (pod_multikueue_) {
    counter("admitd_shim_multikueue_pods_handed_over_total",
            "Pod Workloads whose pods' manifests were handed to admitd for a worker.",
            pod_multikueue_->handed_over());
    counter("admitd_shim_multikueue_pod_status_mirrored_total",
            "Manager pods whose status was set from their worker copy's.",
            pod_multikueue_->mirrored());
    counter("admitd_shim_multikueue_pod_reconcile_errors_total",
            "MultiKueue pod Workload reconciles that failed and were retried.",
            pod_multikueue_errors_.load());
  }
  if (multikueue_worker_) {
    counter("admitd_shim_multikueue_jobs_created_total",
            "Jobs (and pods) created in this worker cluster for winning MultiKueue copies.",
            multikueue_worker_->created());
    counter("admitd_shim_multikueue_jobs_withdrawn_total",
            "Worker jobs deleted because the manager withdrew their copy.",
            sum(&ReconcilerCounters::withdrawn));
    counter("admitd_shim_multikueue_copy_reconcile_errors_total",
            "MultiKueue copy reconciles that failed and were retried.",
            copy_reconcile_errors_.load());
  }
  // The other kinds: the same figures under the kind's names.
  for (const auto& k : controllers_) {
    if (k.get() == jobs_) continue;
    const IntegrationInfo& info = k->integration->info();
    const std::string kind = info.short_name, plural = info.resource, name = info.kind + "s";
    gauge(absl::StrCat("admitd_shim_", kind, "_workqueue_depth"),
          absl::StrCat(name, " waiting to be reconciled."), static_cast<double>(k->queue.Len()));
    gauge(absl::StrCat("admitd_shim_", plural, "_cached"),
          absl::StrCat(name, " in the informer's cache."),
          static_cast<double>(k->objects->Size()));
    counter(absl::StrCat("admitd_shim_", kind, "_reconcile_errors_total"),
            absl::StrCat(info.kind, " reconciles that failed and were retried."),
            k->errors.load());
    if (k->pod_parent) {
      counter(absl::StrCat("admitd_shim_", kind, "_pods_labelled_total"),
              absl::StrCat("Pods of ", name, " given their pod group's labels."),
              k->pod_parent->patched());
    }
    if (!k->reconciler) continue;
    const ReconcilerCounters& r = k->reconciler->counters();
    counter(absl::StrCat("admitd_shim_", kind, "_reconciles_total"),
            absl::StrCat(info.kind, " reconciles run."), r.reconciles.load());
    counter(absl::StrCat("admitd_shim_", plural, "_started_total"),
            absl::StrCat(name, " unsuspended on admission."), r.starts.load());
    counter(absl::StrCat("admitd_shim_", plural, "_stopped_total"),
            absl::StrCat(name, " suspended (eviction, no admission)."), r.stops.load());
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
