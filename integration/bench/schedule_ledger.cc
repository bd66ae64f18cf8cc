#include "integration/bench/schedule_ledger.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "integration/fixtures.h"

namespace admitd::bench {
namespace {

constexpr size_t kMaxViolationsKept = 20;

const v1::Condition* FindCondition(const v1::Workload& wl, const char* type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const v1::Condition* c) { return c != nullptr && c->status() == "True"; }

}  // namespace

std::string LedgerFlags(const v1::Workload& wl) {
  const v1::Condition* reserved = FindCondition(wl, "QuotaReserved");
  std::string flags;
  if (IsTrue(reserved) && wl.status().has_admission()) flags += 'Q';
  if (IsTrue(FindCondition(wl, "Evicted"))) flags += 'E';
  if (IsTrue(FindCondition(wl, "Finished"))) flags += 'F';
  if (flags.empty()) flags = "-";
  if (reserved != nullptr) {
    absl::StrAppend(&flags, "@", reserved->last_transition_time().seconds(), ".",
                    reserved->last_transition_time().nanos());
  }
  return flags;
}

std::vector<std::pair<std::string, v1::ApplyRequest>> SetupRequests(const Plan& plan) {
  std::vector<std::pair<std::string, v1::ApplyRequest>> requests;
  requests.emplace_back("ResourceFlavor", testing::Flavor(plan.flavor));
  for (const std::string& cohort : plan.cohorts) {
    v1::ApplyRequest req;
    req.mutable_object()->mutable_cohort()->mutable_metadata()->set_name(cohort);
    requests.emplace_back("Cohort " + cohort, std::move(req));
  }
  for (const PlannedClusterQueue& cq : plan.cluster_queues) {
    v1::ApplyRequest req = testing::ClusterQueue(
        cq.name, {plan.flavor}, {{"cpu", FormatMilli(cq.nominal_milli)}});
    v1::ClusterQueueSpec* spec = req.mutable_object()->mutable_cluster_queue()->mutable_spec();
    spec->set_cohort_name(cq.cohort);
    if (cq.borrowing_limit_milli) {
      v1::ResourceQuota* cpu =
          spec->mutable_resource_groups(0)->mutable_flavors(0)->mutable_resources(0);
      cpu->set_borrowing_limit(FormatMilli(*cq.borrowing_limit_milli));
    }
    spec->mutable_preemption()->set_reclaim_within_cohort(cq.reclaim_within_cohort);
    spec->mutable_preemption()->set_within_cluster_queue(cq.within_cluster_queue);
    requests.emplace_back("ClusterQueue " + cq.name, std::move(req));
    requests.emplace_back("LocalQueue " + cq.name, testing::LocalQueue(cq.name, cq.name, cq.name));
  }
  return requests;
}

v1::SubmitRequest SubmitRequestFor(const Plan& plan, int i) {
  const PlannedWorkload& wl = plan.workloads[i];
  const std::string& ns = plan.cluster_queues[wl.cluster_queue].name;
  v1::SubmitRequest req;
  *req.mutable_workload() = testing::Workload(ns, wl.name, ns, wl.pod_count,
                                              {{"cpu", FormatMilli(wl.request_milli)}},
                                              wl.priority);
  return req;
}

v1::ReleaseQuotaRequest ReleaseRequestFor(const Plan& plan, int i, bool finished) {
  const PlannedWorkload& wl = plan.workloads[i];
  v1::ReleaseQuotaRequest req;
  req.set_namespace_(plan.cluster_queues[wl.cluster_queue].name);
  req.set_name(wl.name);
  if (finished) {
    req.mutable_finished()->set_succeeded(true);
    req.mutable_finished()->set_message("Finished by admitd-bench");
  } else {
    req.mutable_stopped();
  }
  return req;
}

ScheduleLedger::ScheduleLedger(const Plan& plan) : plan_(plan), runs_(plan.workloads.size()) {
  absl::flat_hash_map<std::string, size_t> cohort_index;
  cohort_index.reserve(plan.cohorts.size());
  for (size_t i = 0; i < plan.cohorts.size(); ++i) cohort_index[plan.cohorts[i]] = i;
  cq_used_.assign(plan.cluster_queues.size(), 0);
  cq_cpu_ms_.assign(plan.cluster_queues.size(), 0);
  cq_peak_.assign(plan.cluster_queues.size(), 0);
  cohort_used_.assign(plan.cohorts.size(), 0);
  cohort_limit_.assign(plan.cohorts.size(), 0);
  for (const PlannedClusterQueue& cq : plan.cluster_queues) {
    cq_cohort_.push_back(static_cast<int>(cohort_index.at(cq.cohort)));
    cq_limit_.push_back(cq.borrowing_limit_milli ? cq.nominal_milli + *cq.borrowing_limit_milli
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

int ScheduleLedger::Find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? -1 : it->second;
}

void ScheduleLedger::Submitted(int i, absl::Time at) {
  runs_[i].phase = WorkloadRun::kPending;
  runs_[i].submitted = at;
}

void ScheduleLedger::Violation(std::string what) {
  ++violation_count_;
  if (violations_.size() < kMaxViolationsKept) violations_.push_back(std::move(what));
}

bool ScheduleLedger::BeginFinish(int i, uint32_t generation) {
  WorkloadRun& r = runs_[i];
  if (r.phase != WorkloadRun::kHeld || r.generation != generation || r.evicted) return false;
  r.finishing = true;
  return true;
}

void ScheduleLedger::StopApplied(int i) {
  if (runs_[i].phase == WorkloadRun::kHeld && runs_[i].evicted) runs_[i].stopped = true;
}

void ScheduleLedger::Charge(int i, int sign, absl::Time at) {
  const PlannedWorkload& wl = plan_.workloads[i];
  const int cq = wl.cluster_queue;
  const int cohort = cq_cohort_[cq];
  const int64_t milli = wl.total_milli();
  cq_used_[cq] += sign * milli;
  cohort_used_[cohort] += sign * milli;
  if (sign < 0) {
    cq_cpu_ms_[cq] +=
        static_cast<double>(milli) * absl::ToDoubleMilliseconds(at - runs_[i].admitted);
  }
  dirty_.push_back(cq);
}

void ScheduleLedger::CheckQuota() {
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

Observation ScheduleLedger::Observe(int i, const v1::Workload& wl, absl::Time at) {
  Observation out;
  const v1::Condition* reserved = FindCondition(wl, "QuotaReserved");
  const bool finished = IsTrue(FindCondition(wl, "Finished"));
  const bool held = IsTrue(reserved) && wl.status().has_admission() && !finished;
  const bool evicted = held && IsTrue(FindCondition(wl, "Evicted"));
  const int64_t stamp =
      reserved == nullptr ? 0
                          : reserved->last_transition_time().seconds() * 1000000000 +
                                reserved->last_transition_time().nanos();
  WorkloadRun& r = runs_[i];
  const auto who = [&wl] {
    return absl::StrCat(wl.metadata().namespace_(), "/", wl.metadata().name());
  };
  if (r.phase == WorkloadRun::kDone) {
    if (held) Violation(absl::StrCat(who(), " holds quota again after it finished"));
    return out;
  }
  const bool new_admission =
      held && (r.phase != WorkloadRun::kHeld || stamp != r.stamp || r.stopped);
  // The admission the run knew about ended: finished, or stopped and requeued.
  if (r.phase == WorkloadRun::kHeld && (!held || new_admission)) {
    Charge(i, -1, at);
    if (finished) {
      r.finishes++;
      r.phase = WorkloadRun::kDone;
      ++finished_;
      last_finish_ = std::max(last_finish_, at);
    } else {
      if (!r.evicted) Violation(absl::StrCat(who(), " lost its quota without an eviction"));
      r.requeues++;
      r.phase = WorkloadRun::kPending;
    }
  } else if (finished) {
    r.finishes++;
    Violation(absl::StrCat(who(), " finished without holding quota"));
    r.phase = WorkloadRun::kDone;
    ++finished_;
  }
  if (new_admission && !finished) {
    r.phase = WorkloadRun::kHeld;
    r.stamp = stamp;
    r.evicted = false;
    r.finishing = false;
    r.stopped = false;
    out.admitted = true;
    out.generation = ++r.generation;
    r.admissions++;
    r.admitted = at;
    r.time_to_admission_ms = absl::ToDoubleMilliseconds(at - r.submitted);
    Charge(i, +1, at);
  }
  if (evicted && r.phase == WorkloadRun::kHeld && !r.evicted) {
    r.evicted = true;
    r.evictions++;
    out.stop = !r.finishing;
  }
  return out;
}

void ScheduleLedger::Report(RunReport* report) {
  report->finished = static_cast<int>(finished_);
  report->quota_checks = checks_;
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
    if (r.time_to_admission_ms >= 0) {
      admission_times[wl.class_name].push_back(r.time_to_admission_ms);
    }
  }
  report->classes.clear();
  for (auto& entry : classes) {
    entry.second.time_to_admission_ms = Summarize(std::move(admission_times[entry.first]));
    report->classes.push_back(entry.second);
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
  report->cq_classes.clear();
  for (auto& entry : cq_classes) {
    const double denominator = cq_class_nominal[entry.first] * report->wall_ms;
    entry.second.usage_percent =
        denominator > 0 ? 100.0 * cq_class_cpu_ms[entry.first] / denominator : 0;
    report->cq_classes.push_back(entry.second);
  }
  report->violation_count = violation_count_;
  report->violations = violations_;
}

void PrintRunReport(const RunReport& r) {
  if (r.simulated) {
    std::printf("simulated wall time         %10.2f s   (virtual time: the engine alone, no "
                "latency)\n",
                r.wall_ms / 1000);
  } else {
    std::printf("wall time                   %10.2f s\n", r.wall_ms / 1000);
  }
  std::printf("lower bound                 %10.2f s   (work / capacity %.2f s, last arrival + "
              "runtime %.2f s)\n",
              r.lower_bound_ms() / 1000, r.work_bound_ms / 1000, r.arrival_bound_ms / 1000);
  std::printf("wall / lower bound          %10.3f\n", r.ratio());
  if (!r.simulated) {
    std::printf("setup (queues)              %10.2f s   (not in the wall time)\n",
                r.setup_ms / 1000);
  }
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
  if (r.simulated) {
    std::printf("\nsimulation CPU              %10.2f s   (%lld batches, %lld scheduling cycles)\n",
                r.cpu_ms / 1000, static_cast<long long>(r.batches),
                static_cast<long long>(r.cycles));
    std::printf("workload changes %lld, commits checked %lld\n",
                static_cast<long long>(r.events), static_cast<long long>(r.quota_checks));
  } else {
    std::printf("\nSubmit RPC p50/p99          %8.2f / %.2f ms  (%zu calls)\n",
                r.submit_rpc_ms.p50, r.submit_rpc_ms.p99, r.submit_rpc_ms.count);
    std::printf("ReleaseQuota RPC p50/p99    %8.2f / %.2f ms  (%zu calls)\n",
                r.release_rpc_ms.p50, r.release_rpc_ms.p99, r.release_rpc_ms.count);
    std::printf("watch events %lld, commits checked %lld, reconnects %d, rpc errors %lld, "
                "refused, retried %lld\n",
                static_cast<long long>(r.events), static_cast<long long>(r.quota_checks),
                r.watch_reconnects, static_cast<long long>(r.rpc_errors),
                static_cast<long long>(r.refused_retried));
  }
  std::printf("finished %d of %d workloads\n", r.finished, r.workloads);
  for (const std::string& v : r.violations) std::printf("VIOLATION: %s\n", v.c_str());
  if (r.violation_count > static_cast<int64_t>(r.violations.size())) {
    std::printf("VIOLATION: ... %lld in all\n", static_cast<long long>(r.violation_count));
  }
  std::printf("invariants: %s\n", r.ok() ? "OK" : "FAILED");
}

}  // namespace admitd::bench
