#include "server/metrics.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"
#include "server/engine/validation.h"
#include "server/queue_metrics.h"

namespace admitd {
namespace {

constexpr char kDeactivatedDueTo[] = "DeactivatedDueTo";

std::string ClusterQueueOf(const v1::Workload& wl) {
  if (wl.status().has_admission()) return wl.status().admission().cluster_queue();
  return "";
}

std::string ConditionReason(const v1::Workload& wl, const char* type) {
  const v1::Condition* c = engine::FindCondition(wl, type);
  return c == nullptr ? "" : c->reason();
}

std::optional<absl::Time> TransitionTime(const v1::Workload& wl, const char* type) {
  const v1::Condition* c = engine::FindCondition(wl, type);
  if (c == nullptr || !c->has_last_transition_time()) return std::nullopt;
  return absl::FromUnixSeconds(c->last_transition_time().seconds()) +
         absl::Nanoseconds(c->last_transition_time().nanos());
}

// How long a finished workload ran while admitted (Kueue's TotalExecutionTime): the time of its
// earlier admissions (status.accumulatedPastExecutionTimeSeconds) and from its last admission to
// its end. Nothing when it is not both admitted and finished.
std::optional<absl::Duration> ExecutionTime(const v1::Workload& wl) {
  if (!engine::IsConditionTrue(wl, engine::kAdmitted) ||
      !engine::IsConditionTrue(wl, engine::kFinished)) {
    return std::nullopt;
  }
  const std::optional<absl::Time> admitted = TransitionTime(wl, engine::kAdmitted);
  const std::optional<absl::Time> finished = TransitionTime(wl, engine::kFinished);
  if (!admitted || !finished) return std::nullopt;
  return absl::Seconds(wl.status().accumulated_past_execution_time_seconds()) +
         (*finished - *admitted);
}

// Since when the workload waits, as Kueue measures it: its creation, or its last requeue.
absl::Time QueuedSince(const v1::Workload& wl) {
  if (std::optional<absl::Time> requeued = TransitionTime(wl, engine::kRequeued)) return *requeued;
  const google::protobuf::Timestamp& t = wl.metadata().creation_timestamp();
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

double Seconds(absl::Time from, absl::Time to) {
  return std::max(0.0, absl::ToDoubleSeconds(to - from));
}

// The ClusterQueue at the end of the preemptor path in Kueue's Preempted message
// ("...; preemptor path: /cohort/cq; preemptee path: ...").
std::string PreemptingClusterQueue(const v1::Workload& wl) {
  const v1::Condition* c = engine::FindCondition(wl, engine::kPreempted);
  if (c == nullptr) return "";
  static constexpr char kPath[] = "preemptor path: ";
  const size_t at = c->message().find(kPath);
  if (at == std::string::npos) return "";
  const size_t start = at + sizeof(kPath) - 1;
  const std::string path = c->message().substr(start, c->message().find(';', start) - start);
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

Metrics::Metrics() {
  registry_.AddCollector([this] { return CollectEngineState(); });
}

std::string Metrics::BoundedClusterLabel(const std::string& cluster) {
  // Whoever calls ReportPods names the cluster; the name is checked here again rather than
  // trusted, so no caller can grow the label set beyond the cap or put junk in it.
  absl::MutexLock lock(&mu_);
  if (cluster_labels_.count(cluster) > 0) return cluster;
  if (static_cast<int>(cluster_labels_.size()) >= kMaxClusterLabelValues ||
      !engine::IsDnsSubdomain(cluster)) {
    return kOtherClusterLabel;
  }
  cluster_labels_.insert(cluster);
  return cluster;
}

MetricLabels Metrics::Bounded(const MetricLabels& labels) {
  MetricLabels out = labels;
  for (auto& [label, value] : out) {
    if (label == "cluster") value = BoundedClusterLabel(value);
  }
  return out;
}

void Metrics::Add(const std::string& name, const std::string& help, const MetricLabels& labels,
                  double value) {
  registry_.Add(name, help, Bounded(labels), value);
}

void Metrics::Set(const std::string& name, const std::string& help, const MetricLabels& labels,
                  double value) {
  registry_.Set(name, help, Bounded(labels), value);
}

void Metrics::Observe(const std::string& name, const std::string& help,
                      const MetricLabels& labels, const std::vector<double>& buckets,
                      double value) {
  registry_.Observe(name, help, Bounded(labels), buckets, value);
}

double Metrics::Value(const std::string& name, const MetricLabels& labels) const {
  return registry_.Value(name, labels);
}

std::string Metrics::Render() const { return registry_.Render(); }

void Metrics::SetEngineSource(EngineSource source) {
  absl::MutexLock lock(&mu_);
  engine_source_ = std::move(source);
}

std::vector<prometheus::MetricFamily> Metrics::CollectEngineState() {
  EngineSource source;
  {
    absl::MutexLock lock(&mu_);
    source = engine_source_;
  }
  std::optional<EngineState> now;
  if (source) now = source();
  absl::MutexLock lock(&mu_);
  if (now) engine_state_ = *std::move(now);
  std::vector<prometheus::MetricFamily> out =
      ClusterQueueMetricFamilies(engine_state_.cluster_queues);
  for (prometheus::MetricFamily& f : WeightedShareMetricFamilies(engine_state_.weighted_shares)) {
    out.push_back(std::move(f));
  }
  if (!engine_state_.local_queue_usages.empty()) {
    prometheus::MetricFamily usage = MetricFamilyOf(
        "kueue_local_queue_admission_fair_sharing_usage",
        "The LocalQueue's usage as admission fair sharing orders by it: its weighted, decayed "
        "admitted usage and pending entry penalties, divided by its weight.",
        prometheus::MetricType::Gauge);
    for (const engine::LocalQueueUsage& u : engine_state_.local_queue_usages) {
      AddSample(&usage,
                {{"name", u.name}, {"namespace", u.namespace_}, {"cluster_queue", u.cluster_queue}},
                u.usage);
    }
    out.push_back(std::move(usage));
  }
  prometheus::MetricFamily objects = MetricFamilyOf(
      "admitd_engine_objects", "Objects the engine holds, per kind.", prometheus::MetricType::Gauge);
  for (const auto& [kind, count] : engine_state_.object_counts) {
    AddSample(&objects, {{"kind", kind}}, static_cast<double>(count));
  }
  out.push_back(std::move(objects));
  return out;
}

void Metrics::CountAdmissionAttempt(bool admitted, absl::Duration duration) {
  absl::MutexLock lock(&counts_mu_);
  AttemptSeries& series = attempt_series_[admitted ? 1 : 0];
  if (series.attempts == nullptr) {
    const MetricLabels labels = {{"result", admitted ? "success" : "inadmissible"}};
    series.attempts = &registry_.Counter(
        "kueue_admission_attempts_total",
        "Scheduling cycles that tried to admit workloads, by result.", labels);
    series.duration = &registry_.Histogram("kueue_admission_attempt_duration_seconds",
                                           "The duration of a scheduling cycle, by result.",
                                           labels, kLatencyBuckets);
  }
  series.attempts->Increment();
  series.duration->Observe(absl::ToDoubleSeconds(duration));
}

void Metrics::CountCycle(const engine::CycleStats& cycle, absl::Duration duration) {
  if (cycle.heads == 0) return;
  CountAdmissionAttempt(cycle.admitted > 0, duration);
  CountCyclePreemptions(cycle);
}

void Metrics::CountCyclePreemptions(const engine::CycleStats& cycle) {
  for (const auto& [cq, count] : cycle.preemption_skips) {
    registry_.Set("kueue_admission_cycle_preemption_skips",
                  "Workloads of the ClusterQueue with preemption targets that were skipped in the "
                  "last cycle that had any, because another workload of the cycle needed the "
                  "same quota.",
                  {{"cluster_queue", cq}}, count);
  }
  for (const auto& [cq, result] : cycle.recomputations) {
    registry_.Add("kueue_preemption_target_recomputations_total",
                  "Assignments computed again because their preemption targets overlapped "
                  "those of another workload of the cycle, by result: new_targets (other "
                  "targets preempted), deferred_fit (fits once the cycle's preemptions "
                  "complete), skipped (neither).",
                  {{"cluster_queue", cq}, {"result", result}});
  }
}

prometheus::Counter& Metrics::ChangeCounter(const std::string& reason) {
  prometheus::Counter*& counter = change_counters_[reason];
  if (counter == nullptr) {
    counter = &registry_.Counter("admitd_workload_changes_total",
                                 "Workload changes committed, by what happened.",
                                 {{"reason", reason}});
  }
  return *counter;
}

void Metrics::CountChanges(const std::vector<engine::Change>& changes) {
  absl::MutexLock lock(&counts_mu_);
  std::set<std::string> reservations_counted;
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
    ChangeCounter(c.reason).Increment();
    QueueSeries& series = queue_series_[cq];
    auto counter = [&](prometheus::Counter*& slot, const char* name, const char* help) {
      if (slot == nullptr) slot = &registry_.Counter(name, help, {{"cluster_queue", cq}});
      return slot;
    };
    auto histogram = [&](prometheus::Histogram*& slot, const char* name, const char* help,
                         const std::vector<double>& buckets = kWaitTimeBuckets) {
      if (slot == nullptr) slot = &registry_.Histogram(name, help, {{"cluster_queue", cq}}, buckets);
      return slot;
    };
    if (c.reason == "QuotaReserved" || c.reason == "Admitted") {
      // A workload admitted without admission checks reserves and is admitted in one change
      // (both conditions then moved at the same time); one whose check turned Ready in the
      // same batch has both changes: its reservation counts once.
      const std::optional<absl::Time> reserved = TransitionTime(wl, engine::kQuotaReserved);
      const std::optional<absl::Time> admitted = TransitionTime(wl, engine::kAdmitted);
      const bool reserved_now =
          reserved && (c.reason == "QuotaReserved" || (admitted && *admitted == *reserved));
      if (reserved_now && reservations_counted.insert(c.key).second) {
        counter(series.reserved, "kueue_quota_reserved_workloads_total",
                "Workloads that got a quota reservation, per ClusterQueue.")
            ->Increment();
        histogram(series.reserved_wait, "kueue_quota_reserved_wait_time_seconds",
                  "Time from a workload's creation or last requeue to its quota reservation, "
                  "per ClusterQueue.")
            ->Observe(Seconds(QueuedSince(wl), *reserved));
      }
    }
    if (c.reason == "Admitted") {
      counter(series.admitted, "kueue_admitted_workloads_total",
              "Workloads admitted, per ClusterQueue.")
          ->Increment();
      if (const std::optional<absl::Time> admitted = TransitionTime(wl, engine::kAdmitted)) {
        histogram(series.admission_wait, "kueue_admission_wait_time_seconds",
                  "Time from a workload's creation or last requeue to its admission, per "
                  "ClusterQueue.")
            ->Observe(Seconds(QueuedSince(wl), *admitted));
        if (const std::optional<absl::Time> reserved =
                TransitionTime(wl, engine::kQuotaReserved)) {
          histogram(series.checks_wait, "kueue_admission_checks_wait_time_seconds",
                    "Time from a workload's quota reservation to its admission, per "
                    "ClusterQueue.")
              ->Observe(Seconds(*reserved, *admitted));
        }
      }
    } else if (c.reason == "PodsReady") {
      // waitForPodsReady (§21.2): the first readiness after an admission.
      const std::optional<absl::Time> ready = TransitionTime(wl, engine::kPodsReady);
      const std::optional<absl::Time> admitted = TransitionTime(wl, engine::kAdmitted);
      if (ready) {
        histogram(series.ready_wait, "kueue_ready_wait_time_seconds",
                  "Time from a workload's creation or last requeue until its pods were ready, "
                  "per ClusterQueue.")
            ->Observe(Seconds(QueuedSince(wl), *ready));
        if (admitted) {
          histogram(series.admitted_until_ready, "kueue_admitted_until_ready_wait_time_seconds",
                    "Time from a workload's admission until its pods were ready, per "
                    "ClusterQueue.")
              ->Observe(Seconds(*admitted, *ready));
        }
      }
    } else if (c.reason == "Evicted") {
      std::string reason = ConditionReason(wl, engine::kEvicted), cause;
      if (absl::StartsWith(reason, kDeactivatedDueTo)) {
        cause = reason.substr(sizeof(kDeactivatedDueTo) - 1);
        reason = "Deactivated";
      } else if (reason == engine::kReasonPodsReadyTimeout) {
        // The timeout's cause is the PodsReady reason it ran out in (WaitForStart or
        // WaitForRecovery).
        cause = ConditionReason(wl, engine::kPodsReady);
      }
      if (engine::IsConditionTrue(wl, engine::kPodsReady)) {
        const std::optional<absl::Time> ready = TransitionTime(wl, engine::kPodsReady);
        const std::optional<absl::Time> evicted = TransitionTime(wl, engine::kEvicted);
        if (ready && evicted) {
          registry_
              .Histogram("kueue_pods_ready_to_evicted_time_seconds",
                         "Time from a workload's pods being ready until its eviction, per "
                         "ClusterQueue, reason and underlying cause.",
                         {{"cluster_queue", cq}, {"reason", reason}, {"underlying_cause", cause}},
                         kWaitTimeBuckets)
              .Observe(Seconds(*ready, *evicted));
        }
      }
      registry_.Add("kueue_evicted_workloads_total",
                    "Workloads evicted, per ClusterQueue, reason and underlying cause.",
                    {{"cluster_queue", cq}, {"reason", reason}, {"underlying_cause", cause}});
      // Once per workload, reason and cause: when the workload's scheduling stats count this
      // eviction as its first of that kind (Kueue's evicted_workloads_once_total).
      for (const v1::WorkloadSchedulingStatsEviction& e :
           wl.status().scheduling_stats().evictions()) {
        if (e.reason() == reason && e.underlying_cause() == cause && e.count() == 1) {
          registry_.Add("kueue_evicted_workloads_once_total",
                        "Workloads evicted for the first time with a reason and underlying "
                        "cause, per ClusterQueue.",
                        {{"cluster_queue", cq}, {"reason", reason}, {"underlying_cause", cause}});
        }
      }
      const std::string preempted = ConditionReason(wl, engine::kPreempted);
      if (!preempted.empty() && engine::IsConditionTrue(wl, engine::kPreempted)) {
        registry_.Add("kueue_preempted_workloads_total",
                      "Workloads preempted, per preempting ClusterQueue and preemption reason.",
                      {{"preempting_cluster_queue", PreemptingClusterQueue(wl)},
                       {"reason", preempted}});
      }
    } else if (c.reason == "Finished") {
      counter(series.finished, "kueue_finished_workloads_total",
              "Workloads finished, per ClusterQueue.")
          ->Increment();
      if (const std::optional<absl::Duration> ran = ExecutionTime(wl)) {
        histogram(series.execution, "kueue_execution_time_seconds",
                  "How long a finished workload ran while admitted, over all its admissions, "
                  "per ClusterQueue.",
                  kExecutionTimeBuckets)
            ->Observe(absl::ToDoubleSeconds(*ran));
      }
    } else if (c.reason == "SliceCreated") {
      registry_.Add(
          "admitd_workload_slices_created_total", "Workload slices created by a scale-up (KEP-77).",
          {{"local_queue", absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name())}});
    } else if (c.reason == engine::kReasonWorkloadSliceReplaced) {
      registry_.Add("kueue_replaced_workload_slices_total",
                    "Workload slices finished because a newer slice of the job was admitted.",
                    {{"cluster_queue", cq}});
    } else if (c.reason == "Resized") {
      registry_.Add("admitd_resized_workloads_total",
                    "Workloads whose pod counts changed in place.", {{"cluster_queue", cq}});
    }
  }
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> StartMetricsEndpoint(const std::string& address,
                                                                   const Metrics* metrics,
                                                                   std::function<absl::Status()> ready,
                                                                   HttpEndpointOptions options) {
  HttpEndpoint::Routes routes;
  routes["/metrics"] = [metrics] {
    return HttpReply{200, kPrometheusTextType, metrics->Render()};
  };
  routes["/healthz"] = [] { return HttpReply{200, kPrometheusTextType, "ok\n"}; };
  routes["/readyz"] = [ready = std::move(ready)] {
    const absl::Status status = ready();
    return status.ok() ? HttpReply{200, kPrometheusTextType, "ok\n"}
                       : HttpReply{503, kPrometheusTextType, absl::StrCat(status.message(), "\n")};
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
