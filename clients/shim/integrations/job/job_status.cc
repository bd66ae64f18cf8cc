#include "clients/shim/integrations/job/job_status.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

int64_t Int(const nlohmann::json& j, const char* key, int64_t def = 0) {
  const nlohmann::json& v = Field(j, key);
  return v.is_number_integer() ? v.get<int64_t>() : def;
}

// The indexes below `limit` a "1,3-5" list names; malformed or descending ranges are skipped.
void AddIndexes(const nlohmann::json& list, int64_t limit, std::set<int64_t>* out) {
  if (!list.is_string()) return;
  for (absl::string_view part : absl::StrSplit(list.get<std::string>(), ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> ends = absl::StrSplit(part, '-');
    int64_t lo = 0, hi = 0;
    if (ends.size() == 1 && absl::SimpleAtoi(ends[0], &lo)) {
      hi = lo;
    } else if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &lo) ||
               !absl::SimpleAtoi(ends[1], &hi) || hi < lo) {
      continue;
    }
    for (int64_t i = std::max<int64_t>(lo, 0); i <= hi && i < limit; ++i) out->insert(i);
  }
}

}  // namespace

std::optional<JobFinish> JobFinished(const nlohmann::json& job) {
  const nlohmann::json& conditions = Field(Field(job, "status"), "conditions");
  if (!conditions.is_array()) return std::nullopt;
  for (const nlohmann::json& c : conditions) {
    const std::string type = c.value("type", "");
    if ((type == "Complete" || type == "Failed") && c.value("status", "") == "True") {
      return JobFinish{type == "Complete", c.value("message", "")};
    }
  }
  return std::nullopt;
}

bool JobActive(const nlohmann::json& job) { return Int(Field(job, "status"), "active") != 0; }

bool JobPodsReady(const nlohmann::json& job, int pod_count) {
  const nlohmann::json& status = Field(job, "status");
  const nlohmann::json& uncounted = Field(Field(status, "uncountedTerminatedPods"), "succeeded");
  const int64_t n = Int(status, "succeeded") + Int(status, "ready") +
                    (uncounted.is_array() ? static_cast<int64_t>(uncounted.size()) : 0);
  return n >= pod_count;
}

bool JobPodsReady(const nlohmann::json& job) {
  const nlohmann::json& spec = Field(job, "spec");
  int64_t need = Int(spec, "parallelism", 1);
  if (spec.contains("completions") && spec["completions"].is_number()) {
    need = std::min(need, Int(spec, "completions"));
  }
  return JobPodsReady(job, static_cast<int>(need));
}

int JobReclaimablePods(const nlohmann::json& job) {
  const nlohmann::json& spec = Field(job, "spec");
  const nlohmann::json& status = Field(job, "status");
  const int64_t p = Int(spec, "parallelism", 1);
  const int64_t c = Int(spec, "completions", p);
  int64_t t = 0;
  if (spec.value("completionMode", "NonIndexed") == "Indexed") {
    std::set<int64_t> terminal;
    AddIndexes(Field(status, "completedIndexes"), c, &terminal);
    AddIndexes(Field(status, "failedIndexes"), c, &terminal);
    t = static_cast<int64_t>(terminal.size());
  } else {
    t = Int(status, "succeeded");
  }
  const int64_t remaining = std::max<int64_t>(c - t, 0);
  if (p > 1 && t > 0 && remaining < p) return static_cast<int>(p - remaining);
  return 0;
}

}  // namespace admitd::shim
