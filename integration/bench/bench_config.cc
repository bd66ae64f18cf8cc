#include "integration/bench/bench_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace admitd::bench {
namespace {

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

absl::StatusOr<int64_t> Milli(const YAML::Node& node, const std::string& where) {
  if (!node || !node.IsScalar()) return Bad(where, "must be a quantity");
  auto milli = ParseMilli(node.Scalar());
  if (!milli.ok()) return Bad(where, std::string(milli.status().message()));
  return *milli;
}

absl::StatusOr<int64_t> Int(const YAML::Node& node, const std::string& where, int64_t fallback,
                            bool required) {
  if (!node) {
    if (required) return Bad(where, "is required");
    return fallback;
  }
  int64_t v = 0;
  if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &v) || v < 0) {
    return Bad(where, "must be a non-negative integer");
  }
  return v;
}

std::string Str(const YAML::Node& node, const std::string& fallback) {
  return node && node.IsScalar() ? node.Scalar() : fallback;
}

#define BENCH_ASSIGN(lhs, expr)            \
  do {                                     \
    auto _v = (expr);                      \
    if (!_v.ok()) return _v.status();      \
    lhs = *_v;                             \
  } while (0)

absl::StatusOr<WorkloadsSet> ParseWorkloadsSet(const YAML::Node& n, const std::string& where) {
  WorkloadsSet set;
  BENCH_ASSIGN(set.count, Int(n["count"], where + ".count", 0, true));
  BENCH_ASSIGN(set.creation_interval_ms,
               Int(n["creationIntervalMs"], where + ".creationIntervalMs", 0, false));
  const YAML::Node wls = n["workloads"];
  if (!wls || !wls.IsSequence() || wls.size() == 0) {
    return Bad(where + ".workloads", "must list at least one workload");
  }
  for (size_t i = 0; i < wls.size(); ++i) {
    const std::string w = absl::StrCat(where, ".workloads[", i, "]");
    WorkloadTemplate t;
    t.class_name = Str(wls[i]["className"], "");
    if (t.class_name.empty()) return Bad(w + ".className", "is required");
    BENCH_ASSIGN(t.runtime_ms, Int(wls[i]["runtimeMs"], w + ".runtimeMs", 0, false));
    int64_t priority = 0;
    if (wls[i]["priority"] && !absl::SimpleAtoi(wls[i]["priority"].Scalar(), &priority)) {
      return Bad(w + ".priority", "must be an integer");
    }
    t.priority = static_cast<int32_t>(priority);
    BENCH_ASSIGN(t.request_milli, Milli(wls[i]["request"], w + ".request"));
    BENCH_ASSIGN(t.pod_count, Int(wls[i]["podCount"], w + ".podCount", 1, false));
    if (t.pod_count == 0) t.pod_count = 1;
    set.workloads.push_back(std::move(t));
  }
  return set;
}

absl::StatusOr<QueuesSet> ParseQueuesSet(const YAML::Node& n, const std::string& where) {
  QueuesSet qs;
  qs.class_name = Str(n["className"], "cq");
  BENCH_ASSIGN(qs.count, Int(n["count"], where + ".count", 0, true));
  BENCH_ASSIGN(qs.nominal_milli, Milli(n["nominalQuota"], where + ".nominalQuota"));
  if (n["borrowingLimit"]) {
    int64_t limit = 0;
    BENCH_ASSIGN(limit, Milli(n["borrowingLimit"], where + ".borrowingLimit"));
    qs.borrowing_limit_milli = limit;
  }
  qs.reclaim_within_cohort = Str(n["reclaimWithinCohort"], "Never");
  qs.within_cluster_queue = Str(n["withinClusterQueue"], "Never");
  const YAML::Node sets = n["workloadsSets"];
  if (sets && !sets.IsSequence()) return Bad(where + ".workloadsSets", "must be a list");
  for (size_t i = 0; sets && i < sets.size(); ++i) {
    WorkloadsSet set;
    BENCH_ASSIGN(set, ParseWorkloadsSet(sets[i], absl::StrCat(where, ".workloadsSets[", i, "]")));
    qs.workloads_sets.push_back(std::move(set));
  }
  return qs;
}

}  // namespace

absl::StatusOr<int64_t> ParseMilli(const std::string& quantity) {
  if (quantity.empty()) return absl::InvalidArgumentError("empty quantity");
  if (quantity.back() == 'm') {
    int64_t v = 0;
    if (!absl::SimpleAtoi(quantity.substr(0, quantity.size() - 1), &v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad quantity \"", quantity, "\""));
    }
    return v;
  }
  double v = 0;
  if (!absl::SimpleAtod(quantity, &v) || v < 0 || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat("bad quantity \"", quantity, "\""));
  }
  return static_cast<int64_t>(std::llround(v * 1000));
}

std::string FormatMilli(int64_t milli) {
  if (milli % 1000 == 0) return absl::StrCat(milli / 1000);
  return absl::StrCat(milli, "m");
}

absl::StatusOr<Config> ParseConfig(const std::string& yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config is not YAML: ", e.what()));
  }
  Config config;
  if (root["resourceFlavor"] && root["resourceFlavor"]["name"]) {
    config.flavor = root["resourceFlavor"]["name"].Scalar();
  }
  const YAML::Node cohorts = root["cohorts"];
  if (!cohorts || !cohorts.IsSequence() || cohorts.size() == 0) {
    return absl::InvalidArgumentError("config must contain at least one cohort");
  }
  for (size_t i = 0; i < cohorts.size(); ++i) {
    const std::string where = absl::StrCat("cohorts[", i, "]");
    CohortSet cs;
    cs.class_name = Str(cohorts[i]["className"], "cohort");
    BENCH_ASSIGN(cs.count, Int(cohorts[i]["count"], where + ".count", 0, true));
    const YAML::Node qsets = cohorts[i]["queuesSets"];
    if (!qsets || !qsets.IsSequence()) return Bad(where + ".queuesSets", "must be a list");
    for (size_t j = 0; j < qsets.size(); ++j) {
      QueuesSet qs;
      BENCH_ASSIGN(qs, ParseQueuesSet(qsets[j], absl::StrCat(where, ".queuesSets[", j, "]")));
      cs.queues_sets.push_back(std::move(qs));
    }
    config.cohorts.push_back(std::move(cs));
  }
  return config;
}

absl::StatusOr<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str());
}

Plan Expand(const Config& config, const std::string& prefix) {
  Plan plan;
  plan.flavor = config.flavor;
  double work = 0;      // milliCPU·ms
  double capacity = 0;  // milliCPU
  for (size_t cs_idx = 0; cs_idx < config.cohorts.size(); ++cs_idx) {
    const CohortSet& cs = config.cohorts[cs_idx];
    for (int c = 0; c < cs.count; ++c) {
      // Kueue names cohorts <class>-<i>; a second cohort set of the same class gets its index.
      std::string cohort = absl::StrCat(prefix, cs.class_name, "-", c);
      if (cs_idx > 0) cohort = absl::StrCat(prefix, cs.class_name, cs_idx, "-", c);
      plan.cohorts.push_back(cohort);
      for (size_t qs_idx = 0; qs_idx < cs.queues_sets.size(); ++qs_idx) {
        const QueuesSet& qs = cs.queues_sets[qs_idx];
        for (int q = 0; q < qs.count; ++q) {
          PlannedClusterQueue cq;
          cq.name = absl::StrCat(qs.class_name, "-", qs_idx, "-", q, "-", cohort);
          cq.cohort = cohort;
          cq.class_name = qs.class_name;
          cq.nominal_milli = qs.nominal_milli;
          cq.borrowing_limit_milli = qs.borrowing_limit_milli;
          cq.reclaim_within_cohort = qs.reclaim_within_cohort;
          cq.within_cluster_queue = qs.within_cluster_queue;
          capacity += static_cast<double>(qs.nominal_milli);
          const int cq_index = static_cast<int>(plan.cluster_queues.size());
          plan.cluster_queues.push_back(std::move(cq));
          for (size_t ws_idx = 0; ws_idx < qs.workloads_sets.size(); ++ws_idx) {
            const WorkloadsSet& ws = qs.workloads_sets[ws_idx];
            int64_t t = 0;
            for (int round = 0; round < ws.count; ++round) {
              for (size_t i = 0; i < ws.workloads.size(); ++i) {
                const WorkloadTemplate& tmpl = ws.workloads[i];
                t += ws.creation_interval_ms;  // Kueue's runner waits before each creation
                PlannedWorkload wl;
                wl.name = absl::StrCat(tmpl.class_name, "-", ws_idx, "-", round, "-", i);
                wl.class_name = tmpl.class_name;
                wl.cluster_queue = cq_index;
                wl.request_milli = tmpl.request_milli;
                wl.pod_count = tmpl.pod_count;
                wl.priority = tmpl.priority;
                wl.arrival_ms = t;
                wl.runtime_ms = tmpl.runtime_ms;
                work += static_cast<double>(wl.total_milli()) * static_cast<double>(wl.runtime_ms);
                plan.arrival_bound_ms =
                    std::max(plan.arrival_bound_ms, static_cast<double>(t + wl.runtime_ms));
                plan.workloads.push_back(std::move(wl));
              }
            }
          }
        }
      }
    }
  }
  std::stable_sort(plan.workloads.begin(), plan.workloads.end(),
                   [](const PlannedWorkload& a, const PlannedWorkload& b) {
                     return a.arrival_ms < b.arrival_ms;
                   });
  plan.work_bound_ms = capacity > 0 ? work / capacity : 0;
  return plan;
}

}  // namespace admitd::bench
