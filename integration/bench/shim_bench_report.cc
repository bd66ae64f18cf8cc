#include "integration/bench/shim_bench_report.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "integration/bench/bench_common.h"

namespace admitd::bench {
namespace {

std::string Row(const std::string& what, const Summary& s) {
  if (s.count == 0) {
    return absl::StrFormat("%-40s %6d %10s %10s %10s\n", what, 0, "-", "-", "-");
  }
  return absl::StrFormat("%-40s %6zu %10.1f %10.1f %10.1f\n", what, s.count, s.p50, s.p99, s.max);
}

std::string JsonFields(const Summary& s) {
  return absl::StrFormat("\"n\":%zu,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f", s.count,
                         s.p50, s.p99, s.max);
}

std::string Json(const Summary& s) { return absl::StrCat("{", JsonFields(s), "}"); }

// Milliseconds from `from` to `to` for the items of kind `kind` (item i is of kind i % kinds).
std::vector<double> KindSpans(Timeline& t, const std::vector<absl::Time>& from,
                              const std::vector<absl::Time>& to, size_t kind, size_t kinds) {
  absl::MutexLock lock(&t.mu);
  std::vector<double> out;
  for (size_t i = kind; i < from.size(); i += kinds) {
    if (from[i] == absl::InfinitePast() || to[i] == absl::InfinitePast()) continue;
    out.push_back(absl::ToDoubleMilliseconds(to[i] - from[i]));
  }
  return out;
}

// The objects of kind `kind` whose create returned, and the first of them not seen running.
int KindCreated(Timeline& t, size_t kind, size_t kinds, int* first_not_running) {
  absl::MutexLock lock(&t.mu);
  int n = 0;
  *first_not_running = -1;
  for (size_t i = kind; i < t.returned.size(); i += kinds) {
    if (t.returned[i] == absl::InfinitePast()) continue;
    ++n;
    if (*first_not_running < 0 && t.done[i] == absl::InfinitePast()) {
      *first_not_running = static_cast<int>(i);
    }
  }
  return n;
}

struct KindFigures {
  const BenchKind* kind;
  int created = 0;
  int first_not_running = -1;
  Summary running, to_admitd, admitted_to_running;
  Summary to_pod;  // created -> its first pod seen (a kind admitted as pods)
};

std::vector<KindFigures> PerKind(const ShimBenchFigures& f) {
  Timeline& t = *f.objects;
  const size_t n = f.kinds.size();
  std::vector<KindFigures> out;
  for (size_t k = 0; k < n; ++k) {
    KindFigures kf{.kind = f.kinds[k]};
    kf.created = KindCreated(t, k, n, &kf.first_not_running);
    kf.running = Summarize(KindSpans(t, t.sent, t.done, k, n));
    kf.to_admitd = Summarize(KindSpans(t, t.sent, t.in_admitd, k, n));
    kf.admitted_to_running = Summarize(KindSpans(t, t.admitted, t.done, k, n));
    if (f.pods != nullptr && f.kinds[k]->via_pods) {
      kf.to_pod = Summarize(KindSpans(*f.pods, t.sent, f.pods->done, k, n));
    }
    out.push_back(kf);
  }
  return out;
}

std::string P50(const Summary& s) {
  return s.count > 0 ? absl::StrFormat("%.1f", s.p50) : std::string("-");
}

void PrintPerKind(const std::vector<KindFigures>& kinds) {
  std::printf("\n%-30s %7s %6s %10s %10s %10s %10s %10s %12s\n", "per kind: created -> running",
              "created", "n", "p50 ms", "p99 ms", "max ms", "pod p50", "admitd p50",
              "adm->run p50");
  bool via_pods = false;
  for (const KindFigures& k : kinds) {
    const Summary& s = k.running;
    std::printf("%-30s %7d %6zu %10s %10s %10s %10s %10s %12s\n", k.kind->name.c_str(), k.created,
                s.count, s.count > 0 ? absl::StrFormat("%.1f", s.p50).c_str() : "-",
                s.count > 0 ? absl::StrFormat("%.1f", s.p99).c_str() : "-",
                s.count > 0 ? absl::StrFormat("%.1f", s.max).c_str() : "-", P50(k.to_pod).c_str(),
                P50(k.to_admitd).c_str(), P50(k.admitted_to_running).c_str());
    via_pods = via_pods || k.kind->via_pods;
  }
  // The kinds that start the same way, together: "job, jobset: spec.suspend false".
  std::vector<std::pair<std::string, std::string>> running;  // what, kinds
  for (const KindFigures& k : kinds) {
    auto it = std::find_if(running.begin(), running.end(),
                           [&](const auto& r) { return r.first == k.kind->running_is; });
    if (it == running.end()) {
      running.emplace_back(k.kind->running_is, k.kind->name);
    } else {
      absl::StrAppend(&it->second, ", ", k.kind->name);
    }
  }
  std::string legend;
  for (const auto& [what, names] : running) {
    absl::StrAppend(&legend, legend.empty() ? "" : "; ", names, ": ", what);
  }
  std::printf(
      "(running: the first watch event showing %s. admitd p50: created -> its Workload in admitd; "
      "adm->run p50: admitted -> seen running%s)\n",
      legend.c_str(),
      via_pods ? "; pod p50: created -> its pod seen (made by the test API server's simulated "
                 "controllers). The pods' Workloads are in the breakdown above, found through the "
                 "pods' names"
               : "");
  for (const KindFigures& k : kinds) {
    if (k.first_not_running >= 0) {
      std::printf("not running: %d of %d %s, the first %s\n",
                  k.created - static_cast<int>(k.running.count), k.created, k.kind->name.c_str(),
                  ObjectName(*k.kind, k.first_not_running).c_str());
    }
  }
}

}  // namespace

void PrintShimBenchReport(const ShimBenchFigures& f) {
  Timeline& o = *f.objects;
  Timeline& d = *f.direct;
  const int n = static_cast<int>(o.sent.size());
  // Jobs alone: the labels of the figures as they have always been.
  const bool jobs_only = f.kinds.size() == 1 && f.kinds[0]->name == "job";
  const char* noun = jobs_only ? "Jobs" : "objects";
  const char* started = jobs_only ? "unsuspended" : "running";
  const Summary shim = Summarize(Spans(o, o.sent, o.done));
  const Summary create = Summarize(Spans(o, o.sent, o.returned));
  const Summary returned_to_done = Summarize(Spans(o, o.returned, o.done));
  const Summary to_admitd = Summarize(Spans(o, o.sent, o.in_admitd));
  const Summary queued = Summarize(Spans(o, o.in_admitd, o.admitted));
  const Summary to_start = Summarize(Spans(o, o.admitted, o.done));
  const Summary direct = Summarize(Spans(d, d.sent, d.done));
  const Summary submit = Summarize(Spans(d, d.sent, d.returned));
  const std::vector<KindFigures> kinds = PerKind(f);
  const double ratio = direct.count > 0 && direct.p50 > 0 ? shim.p50 / direct.p50 : 0;
  const double jobs_s = absl::ToDoubleSeconds(f.last_done - f.first_sent);
  const double creates_s = absl::ToDoubleSeconds(f.last_returned - f.first_sent);
  const double direct_s = absl::ToDoubleSeconds(f.direct_last_done - f.direct_first_sent);
  const double jobs_per_s = jobs_s > 0 ? static_cast<double>(shim.count) / jobs_s : 0;
  const double direct_per_s = direct_s > 0 ? static_cast<double>(direct.count) / direct_s : 0;
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());

  if (jobs_only) {
    std::printf("\nshim_bench: %d Jobs created at once from %d threads; %d CPUs; %s\n", n,
                f.threads, cpus, f.ok ? "complete" : "INCOMPLETE");
  } else {
    std::printf(
        "\nshim_bench: %d objects (%s, in turn) created at once from %d threads; %d CPUs; "
        "%s\n",
        n, KindNames(f.kinds).c_str(), f.threads, cpus, f.ok ? "complete" : "INCOMPLETE");
  }
  if (!f.stopped_at.empty()) std::printf("stopped: %s\n", f.stopped_at.c_str());
  std::printf("\n%-40s %6s %10s %10s %10s\n", "latency", "n", "p50 ms", "p99 ms", "max ms");
  std::fputs(
      Row(jobs_only ? "Job created -> unsuspended (shim)" : "created -> running (shim)", shim)
          .c_str(),
      stdout);
  std::fputs(Row("  create call (POST, returned)", create).c_str(), stdout);
  std::fputs(Row(absl::StrCat("  create returned -> ", started), returned_to_done).c_str(), stdout);
  std::fputs(Row("  created -> Workload in admitd", to_admitd).c_str(), stdout);
  std::fputs(Row("  Workload in admitd -> admitted", queued).c_str(), stdout);
  std::fputs(
      Row(jobs_only ? "  admitted -> Job seen unsuspended" : "  admitted -> seen running", to_start)
          .c_str(),
      stdout);
  std::fputs(Row("Submit -> admitted (gRPC, direct)", direct).c_str(), stdout);
  std::fputs(Row("  Submit call (returned)", submit).c_str(), stdout);
  if (ratio > 0) std::printf("shim p50 / direct p50: %.1f\n", ratio);
  PrintPerKind(kinds);
  std::printf(
      "\nthroughput: %zu %s %s in %.2f s = %.1f %s/s (the creates took %.2f s)"
      "; direct: %zu admitted in %.2f s = %.1f Workloads/s\n",
      shim.count, noun, started, jobs_s, jobs_per_s, noun, creates_s, direct.count, direct_s,
      direct_per_s);

  const double per_job = shim.count > 0 ? 1000.0 / static_cast<double>(shim.count) : 0;
  auto cpu_row = [&](const char* name, double before, double done, double settled, int64_t rss_kib,
                     int64_t hwm_kib) {
    std::printf("%-26s %9.2f %9.2f %12.2f %9.2f %10s %10s\n", name, done - before,
                (done - before) * per_job, settled - before, (settled - before) * per_job,
                rss_kib > 0 ? absl::StrFormat("%.1f", rss_kib / 1024.0).c_str() : "-",
                hwm_kib > 0 ? absl::StrFormat("%.1f", hwm_kib / 1024.0).c_str() : "-");
  };
  std::printf(
      "\n%s phase, CPU (user+sys) to the last %s, and with the shim's trailing work (+%.1f s):\n",
      jobs_only ? "Jobs" : "Objects", jobs_only ? "unsuspension" : "one running", f.settle_s);
  const char* per = jobs_only ? "ms/Job" : "ms/obj";
  std::printf("%-26s %9s %9s %12s %9s %10s %10s\n", "process", "cpu s", per, "cpu s (all)", per,
              "RSS MiB", "peak MiB");
  const CpuSample& b = f.cpu_before;
  const CpuSample& dn = f.cpu_done;
  const CpuSample& s = f.cpu_settled;
  cpu_row("admitd-shim", b.shim, dn.shim, s.shim, f.rss_before_kib[0], f.hwm_kib[0]);
  cpu_row("apiserver.py (python3)", b.apiserver, dn.apiserver, s.apiserver, f.rss_before_kib[1],
          f.hwm_kib[1]);
  cpu_row("admitd", b.admitd, dn.admitd, s.admitd, f.rss_before_kib[2], f.hwm_kib[2]);
  cpu_row("shim_bench (this process)", b.bench, dn.bench, s.bench, -1, -1);
  std::printf(
      "(RSS: before the first create; peak: VmHWM after the phase. Wall time to the last "
      "%s: %.2f s on %d CPUs)\n",
      jobs_only ? "unsuspension" : "one running", jobs_s, cpus);
  std::string counters;
  for (const auto& [name, value] : f.shim_counters) {
    absl::StrAppendFormat(&counters, " %s=%.0f", name.substr(sizeof("admitd_shim_") - 1), value);
  }
  const double opens = static_cast<double>(f.tcp_after.active_opens - f.tcp_before.active_opens);
  std::printf("admitd-shim /metrics after the phase:%s\n", counters.c_str());
  std::printf(
      "TCP (whole machine) during the phase: %.0f connections opened (%.1f per %s), %lld "
      "SYNs dropped on a full listen queue\n",
      opens, opens * per_job / 1000, jobs_only ? "Job" : "object",
      static_cast<long long>(f.tcp_after.listen_overflows - f.tcp_before.listen_overflows));

  auto cpu_json = [&](const CpuSample& to) {
    return absl::StrFormat("{\"shim\":%.3f,\"apiserver\":%.3f,\"admitd\":%.3f,\"bench\":%.3f}",
                           (to.shim - b.shim) * per_job, (to.apiserver - b.apiserver) * per_job,
                           (to.admitd - b.admitd) * per_job, (to.bench - b.bench) * per_job);
  };
  std::string json =
      absl::StrFormat("{\"bench\":\"shim_bench\",\"ok\":%s,\"jobs\":%d,\"threads\":%d",
                      f.ok ? "true" : "false", n, f.threads);
  absl::StrAppend(&json, ",\"shim\":", Json(shim), ",\"create_call\":", Json(create),
                  ",\"returned_to_unsuspended\":", Json(returned_to_done),
                  ",\"created_to_in_admitd\":", Json(to_admitd),
                  ",\"in_admitd_to_admitted\":", Json(queued),
                  ",\"admitted_to_unsuspended\":", Json(to_start), ",\"direct\":", Json(direct));
  absl::StrAppendFormat(&json, ",\"ratio_p50\":%.2f,\"jobs_per_s\":%.2f,\"direct_per_s\":%.2f",
                        ratio, jobs_per_s, direct_per_s);
  absl::StrAppend(&json, ",\"cpu_ms_per_job\":", cpu_json(dn),
                  ",\"cpu_ms_per_job_with_trailing\":", cpu_json(s));
  absl::StrAppendFormat(&json,
                        ",\"peak_rss_mib\":{\"shim\":%.1f,\"apiserver\":%.1f,\"admitd\":%.1f}",
                        f.hwm_kib[0] / 1024.0, f.hwm_kib[1] / 1024.0, f.hwm_kib[2] / 1024.0);
  absl::StrAppendFormat(
      &json, ",\"tcp_opens\":%.0f,\"listen_overflows\":%lld", opens,
      static_cast<long long>(f.tcp_after.listen_overflows - f.tcp_before.listen_overflows));
  for (const auto& [name, value] : f.shim_counters) {
    absl::StrAppendFormat(&json, ",\"%s\":%.0f", name, value);
  }
  // Per kind: created -> running, with its p50 split as in the rows above.
  std::string per_kind;
  for (const KindFigures& k : kinds) {
    absl::StrAppendFormat(&per_kind, "%s\"%s\":{%s,\"created\":%d", per_kind.empty() ? "" : ",",
                          k.kind->name, JsonFields(k.running), k.created);
    if (k.kind->via_pods) {
      absl::StrAppendFormat(&per_kind, ",\"created_to_pod_p50_ms\":%.2f", k.to_pod.p50);
    }
    absl::StrAppendFormat(&per_kind,
                          ",\"created_to_in_admitd_p50_ms\":%.2f,\"admitted_to_running_p50_ms\":"
                          "%.2f}",
                          k.to_admitd.p50, k.admitted_to_running.p50);
  }
  absl::StrAppend(&json, ",\"kinds\":{", per_kind, "}");
  std::printf("%s}\n", json.c_str());
  std::fflush(stdout);
}

}  // namespace admitd::bench
