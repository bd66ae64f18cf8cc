#include "clients/shim/integrations/jobset/jobset_workload.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

const nlohmann::json& ReplicatedJobs(const nlohmann::json& jobset) {
  return Field(Field(jobset, "spec"), "replicatedJobs");
}

// Kueue's PodsCountPerReplica: parallelism (1 when unset) capped by completions.
int64_t PodsPerReplica(const nlohmann::json& replicated_job) {
  const nlohmann::json& spec = Field(Field(replicated_job, "template"), "spec");
  int64_t pods = IntOr(Field(spec, "parallelism"), 1);
  const nlohmann::json& completions = Field(spec, "completions");
  if (completions.is_number_integer()) pods = std::min(pods, completions.get<int64_t>());
  return pods;
}

bool ConditionIs(const nlohmann::json& jobset, const char* type, std::string* message) {
  const nlohmann::json& conditions = Field(Field(jobset, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const nlohmann::json& c : conditions) {
    if (Str(c, "type") == type && Str(c, "status") == "True") {
      *message = Str(c, "message");
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<nlohmann::json> JobSetPodSets(const nlohmann::json& jobset) {
  const nlohmann::json& jobs = ReplicatedJobs(jobset);
  if (!jobs.is_array() || jobs.empty()) {
    return absl::InvalidArgumentError("spec.replicatedJobs: Required value");
  }
  nlohmann::json pod_sets = nlohmann::json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string name = Str(jobs[i], "name");
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.replicatedJobs[", i, "].name: Required value"));
    }
    const nlohmann::json& pod_template = Field(Field(Field(jobs[i], "template"), "spec"), "template");
    // Kueue's NewPodSetReference: the name in lower case.
    pod_sets.push_back({{"name", absl::AsciiStrToLower(name)},
                        {"count", IntOr(Field(jobs[i], "replicas"), 1) * PodsPerReplica(jobs[i])},
                        {"template", pod_template.is_null() ? nlohmann::json::object()
                                                            : pod_template}});
  }
  return pod_sets;
}

std::optional<nlohmann::json> JobSetScalePatch(const nlohmann::json& jobset,
                                               const std::map<std::string, int>& counts) {
  nlohmann::json jobs = ArrayOr(Field(Field(jobset, "spec"), "replicatedJobs"));
  bool changed = false;
  for (nlohmann::json& job : jobs) {
    auto it = counts.find(absl::AsciiStrToLower(Str(job, "name")));
    const int64_t per_replica = PodsPerReplica(job);
    if (it == counts.end() || per_replica <= 0) continue;
    const int64_t replicas = it->second / per_replica;
    if (IntOr(Field(job, "replicas"), 1) != replicas) {
      job["replicas"] = replicas;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  return nlohmann::json{{"spec", {{"replicatedJobs", jobs}}}};
}

TemplateLayout JobSetLayout(const nlohmann::json& jobset) {
  TemplateLayout layout{.suspend = nlohmann::json::json_pointer("/spec/suspend")};
  const nlohmann::json& jobs = ReplicatedJobs(jobset);
  for (size_t i = 0; jobs.is_array() && i < jobs.size(); ++i) {
    layout.templates.push_back(nlohmann::json::json_pointer(
        absl::StrCat("/spec/replicatedJobs/", i, "/template/spec/template")));
  }
  return layout;
}

bool JobSetSuspended(const nlohmann::json& jobset) {
  return Field(Field(jobset, "spec"), "suspend") == true;
}

std::optional<JobFinish> JobSetFinished(const nlohmann::json& jobset) {
  std::string message;
  if (ConditionIs(jobset, "Completed", &message)) return JobFinish{true, message};
  if (ConditionIs(jobset, "Failed", &message)) return JobFinish{false, message};
  return std::nullopt;
}

bool JobSetActive(const nlohmann::json& jobset) {
  const nlohmann::json& statuses = Field(Field(jobset, "status"), "replicatedJobsStatus");
  if (!statuses.is_array()) return false;
  for (const nlohmann::json& s : statuses) {
    if (IntOr(Field(s, "active"), 0) > 0) return true;
  }
  return false;
}

bool JobSetPodsReady(const nlohmann::json& jobset) {
  int64_t replicas = 0, ready = 0;
  const nlohmann::json& jobs = ReplicatedJobs(jobset);
  for (size_t i = 0; jobs.is_array() && i < jobs.size(); ++i) {
    replicas += IntOr(Field(jobs[i], "replicas"), 1);
  }
  const nlohmann::json& statuses = Field(Field(jobset, "status"), "replicatedJobsStatus");
  for (size_t i = 0; statuses.is_array() && i < statuses.size(); ++i) {
    ready += IntOr(Field(statuses[i], "ready"), 0) + IntOr(Field(statuses[i], "succeeded"), 0);
  }
  return replicas == ready;
}

std::map<std::string, int> JobSetReclaimablePods(const nlohmann::json& jobset) {
  std::map<std::string, int> out;
  const nlohmann::json& statuses = Field(Field(jobset, "status"), "replicatedJobsStatus");
  if (!statuses.is_array() || statuses.empty()) return out;
  const nlohmann::json& jobs = ReplicatedJobs(jobset);
  for (size_t i = 0; jobs.is_array() && i < jobs.size(); ++i) {
    const std::string name = Str(jobs[i], "name");
    for (const nlohmann::json& s : statuses) {
      if (Str(s, "name") != name) continue;
      const int64_t succeeded = IntOr(Field(s, "succeeded"), 0);
      if (succeeded > 0 && succeeded <= IntOr(Field(jobs[i], "replicas"), 1)) {
        out[name] = static_cast<int>(succeeded * PodsPerReplica(jobs[i]));
      }
    }
  }
  return out;
}

}  // namespace admitd::shim
