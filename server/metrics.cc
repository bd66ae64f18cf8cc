#include "server/metrics.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"
#include "server/engine/validation.h"

namespace admitd {
namespace {

// The exposition format's content type; /healthz has always answered with it too.
constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string FormatValue(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v)))
    return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

std::string ClusterQueueOf(const v1::Workload& wl) {
  if (wl.status().has_admission()) return wl.status().admission().cluster_queue();
  return "";
}

std::string ConditionReason(const v1::Workload& wl, const char* type) {
  const v1::Condition* c = engine::FindCondition(wl, type);
  return c == nullptr ? "" : c->reason();
}

}  // namespace

void Metrics::Update(const std::string& name, const std::string& help, const char* type,
                     const MetricLabels& labels, double value, bool add) {
  absl::MutexLock lock(&mu_);
  Family& f = families_[name];
  if (f.type.empty()) {
    f.help = help;
    f.type = type;
  }
  double* v;
  if (std::none_of(labels.begin(), labels.end(),
                   [](const auto& l) { return l.first == "cluster"; })) {
    v = &f.series[labels];
  } else {
    MetricLabels bounded = labels;
    for (auto& [label, label_value] : bounded) {
      if (label == "cluster") label_value = BoundedClusterLabel(label_value);
    }
    v = &f.series[bounded];
  }
  *v = add ? *v + value : value;
}

std::string Metrics::BoundedClusterLabel(const std::string& cluster) {
  // Whoever calls ReportPods names the cluster; the name is checked here again rather than
  // trusted, so no caller can grow the label set beyond the cap or put junk in it.
  if (cluster_labels_.count(cluster) > 0) return cluster;
  if (static_cast<int>(cluster_labels_.size()) >= kMaxClusterLabelValues ||
      !engine::IsDnsSubdomain(cluster)) {
    return kOtherClusterLabel;
  }
  cluster_labels_.insert(cluster);
  return cluster;
}

void Metrics::Add(const std::string& name, const std::string& help, const MetricLabels& labels,
                  double value) {
  Update(name, help, "counter", labels, value, true);
}

void Metrics::Set(const std::string& name, const std::string& help, const MetricLabels& labels,
                  double value) {
  Update(name, help, "gauge", labels, value, false);
}

double Metrics::Value(const std::string& name, const MetricLabels& labels) const {
  absl::MutexLock lock(&mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.series.find(labels);
  return s == f->second.series.end() ? 0 : s->second;
}

std::string Metrics::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    absl::StrAppend(&out, "# HELP ", name, " ", f.help, "\n# TYPE ", name, " ", f.type, "\n");
    for (const auto& [labels, value] : f.series) {
      out += name;
      if (!labels.empty()) {
        out += "{";
        for (size_t i = 0; i < labels.size(); ++i) {
          absl::StrAppend(&out, i ? "," : "", labels[i].first, "=\"", Escape(labels[i].second),
                          "\"");
        }
        out += "}";
      }
      absl::StrAppend(&out, " ", FormatValue(value), "\n");
    }
  }
  return out;
}

void Metrics::SetPendingWorkloads(const std::vector<engine::PendingCount>& counts) {
  absl::MutexLock lock(&mu_);
  Family& f = families_["kueue_pending_workloads"];
  f.help = "Pending workloads per ClusterQueue: active (waiting for an attempt) or inadmissible.";
  f.type = "gauge";
  f.series.clear();
  for (const engine::PendingCount& c : counts) {
    f.series[{{"cluster_queue", c.cluster_queue}, {"status", "active"}}] = c.active;
    f.series[{{"cluster_queue", c.cluster_queue}, {"status", "inadmissible"}}] = c.inadmissible;
  }
}

void Metrics::CountChanges(const std::vector<engine::Change>& changes) {
  for (const engine::Change& c : changes) {
    if (c.kind == v1::OBJECT_KIND_POD && c.pod) {
      if (c.reason == "PodGated") {
        Add("admitd_pods_gated_total", "Pods first reported with the admission gate.",
            {{"cluster", c.pod->cluster()}});
      } else if (c.reason == "PodUngated") {
        Add("admitd_pods_ungated_total", "Pods reported with the admission gate removed.",
            {{"cluster", c.pod->cluster()}});
      }
      continue;
    }
    if (c.kind != v1::OBJECT_KIND_WORKLOAD || !c.workload) continue;
    const v1::Workload& wl = *c.workload;
    const std::string cq = ClusterQueueOf(wl);
    Add("admitd_workload_changes_total", "Workload changes committed, by what happened.",
        {{"reason", c.reason}});
    if (c.reason == "Admitted") {
      Add("admitd_admitted_workloads_total", "Workloads admitted.", {{"cluster_queue", cq}});
    } else if (c.reason == "QuotaReserved") {
      Add("admitd_quota_reserved_workloads_total", "Workloads that got a quota reservation.",
          {{"cluster_queue", cq}});
    } else if (c.reason == "Evicted") {
      Add("admitd_evicted_workloads_total", "Workloads evicted, by eviction reason.",
          {{"cluster_queue", cq}, {"reason", ConditionReason(wl, engine::kEvicted)}});
      const std::string preempted = ConditionReason(wl, engine::kPreempted);
      if (!preempted.empty() && engine::IsConditionTrue(wl, engine::kPreempted)) {
        Add("admitd_preempted_workloads_total", "Workloads preempted, by preemption reason.",
            {{"cluster_queue", cq}, {"reason", preempted}});
      }
    } else if (c.reason == "Finished") {
      Add("admitd_finished_workloads_total", "Workloads finished, by reason.",
          {{"reason", ConditionReason(wl, engine::kFinished)}});
    } else if (c.reason == "SliceCreated") {
      Add("admitd_workload_slices_created_total", "Workload slices created by a scale-up (KEP-77).",
          {{"local_queue", absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name())}});
    } else if (c.reason == engine::kReasonWorkloadSliceReplaced) {
      Add("admitd_replaced_workload_slices_total",
          "Workload slices finished because a newer slice of the job was admitted.",
          {{"cluster_queue", cq}});
    } else if (c.reason == "Resized") {
      Add("admitd_resized_workloads_total", "Workloads whose pod counts changed in place.",
          {{"cluster_queue", cq}});
    }
  }
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> StartMetricsEndpoint(const std::string& address,
                                                                   const Metrics* metrics,
                                                                   std::function<absl::Status()> ready,
                                                                   HttpEndpointOptions options) {
  HttpEndpoint::Routes routes;
  routes["/metrics"] = [metrics] { return HttpReply{200, kExpositionType, metrics->Render()}; };
  routes["/healthz"] = [] { return HttpReply{200, kExpositionType, "ok\n"}; };
  routes["/readyz"] = [ready = std::move(ready)] {
    const absl::Status status = ready();
    return status.ok() ? HttpReply{200, kExpositionType, "ok\n"}
                       : HttpReply{503, kExpositionType, absl::StrCat(status.message(), "\n")};
  };
  absl::StatusOr<std::unique_ptr<HttpEndpoint>> endpoint =
      HttpEndpoint::Start(address, std::move(routes), options);
  if (!endpoint.ok()) {
    return absl::Status(endpoint.status().code(),
                        absl::StrCat("--metrics-listen: ", endpoint.status().message()));
  }
  return endpoint;
}

}  // namespace admitd
