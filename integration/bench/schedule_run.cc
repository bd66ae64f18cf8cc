#include "integration/bench/schedule_run.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "integration/fixtures.h"

namespace admitd::bench {
namespace {

constexpr size_t kMaxViolationsKept = 20;

struct WorkloadRun {
  enum Phase : uint8_t { kNew, kPending, kHeld, kDone };
  Phase phase = kNew;
  bool evicted = false;    // the current admission was evicted
  bool finishing = false;  // Finished was sent for the current admission
  uint32_t generation = 0;  // admissions so far; a finish timer names the one it belongs to
  int admissions = 0;
  int evictions = 0;
  int requeues = 0;
  int finishes = 0;
  absl::Time submitted;
  absl::Time admitted;
  int64_t stamp = 0;  // QuotaReserved transition time of the current admission, ns
  double time_to_admission_ms = -1;  // of the last admission, as Kueue's recorder counts it
};

class ScheduleRun {
 public:
  ScheduleRun(const std::string& address, const Plan& plan, double scale)
      : client_(address), plan_(plan), scale_(scale), runs_(plan.workloads.size()) {
    cohort_index_.reserve(plan.cohorts.size());
    for (size_t i = 0; i < plan.cohorts.size(); ++i) cohort_index_[plan.cohorts[i]] = i;
    cq_used_.assign(plan.cluster_queues.size(), 0);
    cq_cpu_ms_.assign(plan.cluster_queues.size(), 0);
    cq_peak_.assign(plan.cluster_queues.size(), 0);
    cohort_used_.assign(plan.cohorts.size(), 0);
    cohort_limit_.assign(plan.cohorts.size(), 0);
    for (const PlannedClusterQueue& cq : plan.cluster_queues) {
      cq_cohort_.push_back(static_cast<int>(cohort_index_.at(cq.cohort)));
      cq_limit_.push_back(cq.borrowing_limit_milli
                              ? cq.nominal_milli + *cq.borrowing_limit_milli
                              : std::numeric_limits<int64_t>::max());
      cohort_limit_[cq_cohort_.back()] += cq.nominal_milli;
    }
    index_.reserve(plan.workloads.size());
    for (size_t i = 0; i < plan.workloads.size(); ++i) {
      const PlannedWorkload& wl = plan.workloads[i];
      index_[absl::StrCat(plan.cluster_queues[wl.cluster_queue].name, "/", wl.name)] =
          static_cast<int>(i);
    }
  }

  RunReport Run(absl::Duration timeout) {
    RunReport report;
    report.workloads = static_cast<int>(plan_.workloads.size());
    report.scale = scale_;
    report.work_bound_ms = plan_.work_bound_ms / scale_;
    report.arrival_bound_ms = plan_.arrival_bound_ms / scale_;

    const absl::Time setup_start = absl::Now();
    if (!Setup()) {
      report.violation_count = static_cast<int64_t>(violations_.size());
      report.violations = violations_;
      return report;
    }
    report.setup_ms = absl::ToDoubleMilliseconds(absl::Now() - setup_start);

    Watcher watcher(client_.channel, "",
                    [this](const v1::WatchEvent& ev, absl::Time at) { OnEvent(ev, at); });
    if (!watcher.Start(absl::Seconds(30))) {
      Violation(absl::StrCat("watch did not start: ", watcher.error()));
      report.violation_count = 1;
      report.violations = violations_;
      return report;
    }

    {
      Timer timer;
      timer_ = &timer;
      start_ = absl::Now();
      call_deadline_ = start_ + timeout + absl::Seconds(10);
      for (size_t i = 0; i < plan_.workloads.size(); ++i) {
        const absl::Time at =
            start_ + absl::Milliseconds(static_cast<double>(plan_.workloads[i].arrival_ms) / scale_);
        timer.At(at, [this, i] { Submit(static_cast<int>(i)); });
      }
      {
        absl::MutexLock lock(&mu_);
        mu_.AwaitWithDeadline(absl::Condition(
                                  +[](ScheduleRun* r) {
                                    return r->finished_ == r->plan_.workloads.size();
                                  },
                                  this),
                              start_ + timeout);
      }
      timer.Stop();
      // Every call ends by call_deadline_; callbacks touch this object, so wait for all of them.
      while (!in_flight_.WaitZero(absl::Seconds(60))) {
        std::fprintf(stderr, "admitd-bench: still waiting for calls in flight\n");
      }
      // Let the last events of in-flight calls arrive before the watch stops.
      absl::SleepFor(absl::Milliseconds(50));
      watcher.Stop();
      absl::MutexLock lock(&mu_);
      timer_ = nullptr;
      CheckQuota();
    }

    absl::MutexLock lock(&mu_);
    report.finished = static_cast<int>(finished_);
    report.wall_ms = absl::ToDoubleMilliseconds(last_finish_ - start_);
    if (finished_ < plan_.workloads.size()) {
      report.wall_ms = absl::ToDoubleMilliseconds(absl::Now() - start_);
      Violation(absl::StrCat("only ", finished_, " of ", plan_.workloads.size(),
                             " workloads finished within ", absl::FormatDuration(timeout)));
    }
    report.watch_reconnects = watcher.reconnects();
    report.events = events_;
    report.quota_checks = checks_;
    report.rpc_errors = rpc_errors_;
    if (!watcher.error().empty()) Violation(watcher.error());

    // Lifecycle invariants over the whole run.
    std::map<std::string, ClassReport> classes;
    std::map<std::string, std::vector<double>> admission_times;
    for (size_t i = 0; i < runs_.size(); ++i) {
      const WorkloadRun& r = runs_[i];
      const PlannedWorkload& wl = plan_.workloads[i];
      if (r.phase == WorkloadRun::kDone && (r.admissions != r.requeues + 1 || r.finishes != 1)) {
        Violation(absl::StrCat(wl.name, " in ", plan_.cluster_queues[wl.cluster_queue].name,
                               ": admitted ", r.admissions, " times, requeued ", r.requeues,
                               " times, finished ", r.finishes, " times"));
      }
      ClassReport& c = classes[wl.class_name];
      c.name = wl.class_name;
      c.count++;
      c.admissions += r.admissions;
      c.evictions += r.evictions;
      if (r.time_to_admission_ms >= 0) admission_times[wl.class_name].push_back(r.time_to_admission_ms);
    }
    for (auto& [name, c] : classes) {
      c.time_to_admission_ms = Summarize(std::move(admission_times[name]));
      report.classes.push_back(c);
    }

    std::map<std::string, CqClassReport> cq_classes;
    std::map<std::string, double> cq_class_cpu_ms, cq_class_nominal;
    for (size_t i = 0; i < plan_.cluster_queues.size(); ++i) {
      const PlannedClusterQueue& cq = plan_.cluster_queues[i];
      CqClassReport& c = cq_classes[cq.class_name];
      c.name = cq.class_name;
      c.cluster_queues++;
      c.peak_milli = std::max(c.peak_milli, cq_peak_[i]);
      cq_class_cpu_ms[cq.class_name] += cq_cpu_ms_[i];
      cq_class_nominal[cq.class_name] += static_cast<double>(cq.nominal_milli);
    }
    for (auto& [name, c] : cq_classes) {
      const double denominator = cq_class_nominal[name] * report.wall_ms;
      c.usage_percent = denominator > 0 ? 100.0 * cq_class_cpu_ms[name] / denominator : 0;
      report.cq_classes.push_back(c);
    }
    report.submit_rpc_ms = Summarize(std::move(submit_ms_));
    report.release_rpc_ms = Summarize(std::move(release_ms_));
    report.violation_count = violation_count_;
    report.violations = violations_;
    return report;
  }

 private:
  bool Apply(const v1::ApplyRequest& req, const std::string& what) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::ApplyResponse resp;
    grpc::Status status = client_.queues->Apply(&ctx, req, &resp);
    if (!status.ok()) {
      absl::MutexLock lock(&mu_);
      Violation(absl::StrCat("Apply ", what, ": ", status.error_message()));
      return false;
    }
    return true;
  }

  bool Setup() {
    if (!Apply(testing::Flavor(plan_.flavor), "ResourceFlavor")) return false;
    for (const std::string& cohort : plan_.cohorts) {
      v1::ApplyRequest req;
      req.mutable_object()->mutable_cohort()->mutable_metadata()->set_name(cohort);
      if (!Apply(req, "Cohort " + cohort)) return false;
    }
    for (const PlannedClusterQueue& cq : plan_.cluster_queues) {
      v1::ApplyRequest req = testing::ClusterQueue(
          cq.name, {plan_.flavor}, {{"cpu", FormatMilli(cq.nominal_milli)}});
      v1::ClusterQueueSpec* spec = req.mutable_object()->mutable_cluster_queue()->mutable_spec();
      spec->set_cohort_name(cq.cohort);
      if (cq.borrowing_limit_milli) {
        spec->mutable_resource_groups(0)->mutable_flavors(0)->mutable_resources(0)->set_borrowing_limit(
            FormatMilli(*cq.borrowing_limit_milli));
      }
      spec->mutable_preemption()->set_reclaim_within_cohort(cq.reclaim_within_cohort);
      spec->mutable_preemption()->set_within_cluster_queue(cq.within_cluster_queue);
      if (!Apply(req, "ClusterQueue " + cq.name)) return false;
      if (!Apply(testing::LocalQueue(cq.name, cq.name, cq.name), "LocalQueue " + cq.name)) {
        return false;
      }
    }
    return true;
  }

  // Called with mu_ held (or before threads start).
  void Violation(std::string what) {
    ++violation_count_;
    if (violations_.size() < kMaxViolationsKept) violations_.push_back(std::move(what));
  }

  void Submit(int i) {
    const PlannedWorkload& wl = plan_.workloads[i];
    const std::string& ns = plan_.cluster_queues[wl.cluster_queue].name;
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload(ns, wl.name, ns, wl.pod_count,
                                                {{"cpu", FormatMilli(wl.request_milli)}},
                                                wl.priority);
    const absl::Time sent = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      runs_[i].phase = WorkloadRun::kPending;
      runs_[i].submitted = sent;
    }
    in_flight_.Add();
    AsyncCall<v1::SubmitRequest, v1::SubmitResponse>(
        std::move(req), call_deadline_,
        [this](grpc::ClientContext* c, const v1::SubmitRequest* q, v1::SubmitResponse* r,
               std::function<void(grpc::Status)> cb) {
          client_.admission->async()->Submit(c, q, r, std::move(cb));
        },
        [this, i, sent](const grpc::Status& status, const v1::SubmitResponse&) {
          const double ms = absl::ToDoubleMilliseconds(absl::Now() - sent);
          {
            absl::MutexLock lock(&mu_);
            submit_ms_.push_back(ms);
            if (!status.ok()) {
              ++rpc_errors_;
              Violation(absl::StrCat("Submit ", plan_.workloads[i].name, ": ",
                                     status.error_message()));
            }
          }
          in_flight_.Done();
        });
  }

  void Release(int i, bool finished) {
    const PlannedWorkload& wl = plan_.workloads[i];
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(plan_.cluster_queues[wl.cluster_queue].name);
    req.set_name(wl.name);
    if (finished) {
      req.mutable_finished()->set_succeeded(true);
      req.mutable_finished()->set_message("Finished by admitd-bench");
    } else {
      req.mutable_stopped();
    }
    const absl::Time sent = absl::Now();
    in_flight_.Add();
    AsyncCall<v1::ReleaseQuotaRequest, v1::ReleaseQuotaResponse>(
        std::move(req), call_deadline_,
        [this](grpc::ClientContext* c, const v1::ReleaseQuotaRequest* q,
               v1::ReleaseQuotaResponse* r, std::function<void(grpc::Status)> cb) {
          client_.admission->async()->ReleaseQuota(c, q, r, std::move(cb));
        },
        [this, i, sent, finished](const grpc::Status& status, const v1::ReleaseQuotaResponse&) {
          const double ms = absl::ToDoubleMilliseconds(absl::Now() - sent);
          {
            absl::MutexLock lock(&mu_);
            release_ms_.push_back(ms);
            if (!status.ok()) {
              ++rpc_errors_;
              Violation(absl::StrCat("ReleaseQuota(", finished ? "finished" : "stopped", ") ",
                                     plan_.workloads[i].name, ": ", status.error_message()));
            }
          }
          in_flight_.Done();
        });
  }

  // The finish timer of admission `generation` of workload i.
  void MaybeFinish(int i, uint32_t generation) {
    {
      absl::MutexLock lock(&mu_);
      WorkloadRun& r = runs_[i];
      if (r.phase != WorkloadRun::kHeld || r.generation != generation || r.evicted) return;
      r.finishing = true;
    }
    Release(i, /*finished=*/true);
  }

  void Charge(int i, int sign, absl::Time at) {
    const PlannedWorkload& wl = plan_.workloads[i];
    const int cq = wl.cluster_queue;
    const int cohort = cq_cohort_[cq];
    const int64_t milli = wl.total_milli();
    cq_used_[cq] += sign * milli;
    cohort_used_[cohort] += sign * milli;
    if (sign < 0) {
      cq_cpu_ms_[cq] += static_cast<double>(milli) *
                        absl::ToDoubleMilliseconds(at - runs_[i].admitted);
    }
    dirty_.push_back(cq);
  }

  // Checks the quota of every ClusterQueue (and its cohort) changed since the last check. Called
  // at the end of each commit: only there do the events received add up to a server state.
  void CheckQuota() {
    for (int cq : dirty_) {
      const int cohort = cq_cohort_[cq];
      cq_peak_[cq] = std::max(cq_peak_[cq], cq_used_[cq]);
      if (cq_used_[cq] > cq_limit_[cq]) {
        Violation(absl::StrCat("ClusterQueue ", plan_.cluster_queues[cq].name, " holds ",
                               FormatMilli(cq_used_[cq]), " CPU, above nominal + borrowing limit ",
                               FormatMilli(cq_limit_[cq])));
      }
      if (cohort_used_[cohort] > cohort_limit_[cohort]) {
        Violation(absl::StrCat("cohort ", plan_.cohorts[cohort], " holds ",
                               FormatMilli(cohort_used_[cohort]), " CPU, above its quota ",
                               FormatMilli(cohort_limit_[cohort])));
      }
      if (cq_used_[cq] < 0 || cohort_used_[cohort] < 0) {
        Violation(absl::StrCat("usage of ", plan_.cluster_queues[cq].name, " went negative"));
      }
    }
    dirty_.clear();
    ++checks_;
  }

  // Watch events are level-triggered: the server publishes an object once per commit, in its
  // last state, so several transitions may arrive as one event. Transitions are therefore
  // derived from the workload's conditions, not from the event's reason; a new admission is
  // recognised by a new QuotaReserved transition time.
  void OnEvent(const v1::WatchEvent& ev, absl::Time at) {
    if (!ev.has_workload()) return;
    const v1::Workload& wl = ev.workload();
    const v1::ObjectMeta& meta = wl.metadata();
    auto it = index_.find(absl::StrCat(meta.namespace_(), "/", meta.name()));
    if (it == index_.end()) return;  // not this run's
    const int i = it->second;
    if (trace_) {
      std::fprintf(stderr, "%llu %s %s/%s\n", static_cast<unsigned long long>(ev.revision()),
                   ev.reason().c_str(), meta.namespace_().c_str(), meta.name().c_str());
    }
    const v1::Condition* reserved = FindCondition(wl, "QuotaReserved");
    const bool finished = IsTrue(FindCondition(wl, "Finished"));
    const bool held = IsTrue(reserved) && wl.status().has_admission() && !finished;
    const bool evicted = held && IsTrue(FindCondition(wl, "Evicted"));
    const int64_t stamp = reserved == nullptr ? 0
                                              : reserved->last_transition_time().seconds() * 1000000000 +
                                                    reserved->last_transition_time().nanos();
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      ++events_;
      // A later commit began: the previous one ended with an event this watch did not receive.
      if (open_commit_ != 0 && ev.commit_revision() != open_commit_) CheckQuota();
      open_commit_ = ev.commit_revision();
      EndOfEvent end(this, ev);
      WorkloadRun& r = runs_[i];
      const std::string who = absl::StrCat(meta.namespace_(), "/", meta.name());
      if (r.phase == WorkloadRun::kDone) {
        if (held) Violation(absl::StrCat(who, " holds quota again after it finished"));
        return;
      }
      const bool new_admission = held && (r.phase != WorkloadRun::kHeld || stamp != r.stamp);
      // The admission the harness knew about ended: finished, or stopped and requeued.
      if (r.phase == WorkloadRun::kHeld && (!held || new_admission)) {
        Charge(i, -1, at);
        if (finished) {
          r.finishes++;
          r.phase = WorkloadRun::kDone;
          ++finished_;
          last_finish_ = std::max(last_finish_, at);
        } else {
          if (!r.evicted) Violation(absl::StrCat(who, " lost its quota without an eviction"));
          r.requeues++;
          r.phase = WorkloadRun::kPending;
        }
      } else if (finished) {
        r.finishes++;
        Violation(absl::StrCat(who, " finished without holding quota"));
        r.phase = WorkloadRun::kDone;
        ++finished_;
      }
      if (new_admission && !finished) {
        r.phase = WorkloadRun::kHeld;
        r.stamp = stamp;
        r.evicted = false;
        r.finishing = false;
        const uint32_t generation = ++r.generation;
        r.admissions++;
        r.admitted = at;
        r.time_to_admission_ms = absl::ToDoubleMilliseconds(at - r.submitted);
        Charge(i, +1, at);
        if (timer_ != nullptr) {
          const double runtime_ms = static_cast<double>(plan_.workloads[i].runtime_ms) / scale_;
          timer_->At(at + absl::Milliseconds(runtime_ms),
                     [this, i, generation] { MaybeFinish(i, generation); });
        }
      }
      if (evicted && r.phase == WorkloadRun::kHeld && !r.evicted) {
        r.evicted = true;
        r.evictions++;
        stop = !r.finishing;
      }
    }
    if (stop) Release(i, /*finished=*/false);
  }

  // Closes the commit when this event was its last (or the server does not say: then every
  // event is checked).
  struct EndOfEvent {
    EndOfEvent(ScheduleRun* run, const v1::WatchEvent& ev) : run(run), ev(ev) {}
    ~EndOfEvent() {
      if (ev.commit_revision() == 0 || ev.revision() == ev.commit_revision()) {
        run->CheckQuota();
        run->open_commit_ = 0;
      }
    }
    ScheduleRun* run;
    const v1::WatchEvent& ev;
  };

  static const v1::Condition* FindCondition(const v1::Workload& wl, const char* type) {
    for (const v1::Condition& c : wl.status().conditions()) {
      if (c.type() == type) return &c;
    }
    return nullptr;
  }
  static bool IsTrue(const v1::Condition* c) { return c != nullptr && c->status() == "True"; }

  const bool trace_ = std::getenv("ADMITD_BENCH_TRACE") != nullptr;
  testing::Client client_;
  const Plan& plan_;
  const double scale_;
  absl::flat_hash_map<std::string, int> index_;
  absl::flat_hash_map<std::string, size_t> cohort_index_;
  std::vector<int> cq_cohort_;
  std::vector<int64_t> cq_limit_;
  InFlight in_flight_;

  absl::Mutex mu_;
  Timer* timer_ = nullptr;
  absl::Time start_;
  absl::Time call_deadline_ = absl::InfiniteFuture();
  absl::Time last_finish_ = absl::InfinitePast();
  std::vector<WorkloadRun> runs_;
  std::vector<int64_t> cq_used_, cq_peak_, cohort_used_, cohort_limit_;
  std::vector<double> cq_cpu_ms_;
  std::vector<int> dirty_;  // ClusterQueues whose usage changed since the last check
  uint64_t open_commit_ = 0;
  int64_t checks_ = 0;
  std::vector<double> submit_ms_, release_ms_;
  size_t finished_ = 0;
  int64_t events_ = 0;
  int64_t rpc_errors_ = 0;
  int64_t violation_count_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace

RunReport RunSchedule(const std::string& address, const Plan& plan, double scale,
                      absl::Duration timeout) {
  ScheduleRun run(address, plan, scale);
  return run.Run(timeout);
}

void PrintRunReport(const RunReport& r) {
  std::printf("wall time                   %10.2f s\n", r.wall_ms / 1000);
  std::printf("lower bound                 %10.2f s   (work / capacity %.2f s, last arrival + "
              "runtime %.2f s)\n",
              r.lower_bound_ms() / 1000, r.work_bound_ms / 1000, r.arrival_bound_ms / 1000);
  std::printf("wall / lower bound          %10.3f\n", r.ratio());
  std::printf("setup (queues)              %10.2f s   (not in the wall time)\n", r.setup_ms / 1000);
  std::printf("\n%-20s %6s %8s %14s\n", "ClusterQueue class", "CQs", "usage %", "peak CPU/CQ");
  for (const CqClassReport& c : r.cq_classes) {
    std::printf("%-20s %6d %8.1f %14s\n", c.name.c_str(), c.cluster_queues, c.usage_percent,
                FormatMilli(c.peak_milli).c_str());
  }
  std::printf("\n%-14s %7s %10s %9s   %-32s\n", "workload class", "count", "admissions",
              "evictions", "time to admission avg/p50/p99 (ms)");
  for (const ClassReport& c : r.classes) {
    std::printf("%-14s %7d %10d %9d   %10.1f %10.1f %10.1f\n", c.name.c_str(), c.count,
                c.admissions, c.evictions, c.time_to_admission_ms.mean,
                c.time_to_admission_ms.p50, c.time_to_admission_ms.p99);
  }
  std::printf("\nSubmit RPC p50/p99          %8.2f / %.2f ms  (%zu calls)\n", r.submit_rpc_ms.p50,
              r.submit_rpc_ms.p99, r.submit_rpc_ms.count);
  std::printf("ReleaseQuota RPC p50/p99    %8.2f / %.2f ms  (%zu calls)\n", r.release_rpc_ms.p50,
              r.release_rpc_ms.p99, r.release_rpc_ms.count);
  std::printf("watch events %lld, commits checked %lld, reconnects %d, rpc errors %lld\n",
              static_cast<long long>(r.events), static_cast<long long>(r.quota_checks),
              r.watch_reconnects, static_cast<long long>(r.rpc_errors));
  std::printf("finished %d of %d workloads\n", r.finished, r.workloads);
  for (const std::string& v : r.violations) std::printf("VIOLATION: %s\n", v.c_str());
  if (r.violation_count > static_cast<int64_t>(r.violations.size())) {
    std::printf("VIOLATION: ... %lld in all\n", static_cast<long long>(r.violation_count));
  }
  std::printf("invariants: %s\n", r.ok() ? "OK" : "FAILED");
}

}  // namespace admitd::bench
