#include "clients/shim/integrations/pytorchjob/pytorchjob_workload.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

// Kueue's OrderedReplicaTypes for a PyTorchJob.
constexpr const char* kReplicaTypes[] = {"Master", "Worker"};

const nlohmann::json& ReplicaSpecs(const nlohmann::json& job) {
  return Field(Field(job, "spec"), "pytorchReplicaSpecs");
}

}  // namespace

absl::StatusOr<nlohmann::json> PyTorchJobPodSets(const nlohmann::json& job) {
  nlohmann::json pod_sets = nlohmann::json::array();
  for (const char* type : kReplicaTypes) {
    const nlohmann::json& replica = Field(ReplicaSpecs(job), type);
    if (!replica.is_object()) continue;
    // Kueue's NewPodSetReference: the type in lower case.
    pod_sets.push_back({{"name", absl::AsciiStrToLower(type)},
                        {"count", IntOr(Field(replica, "replicas"), 1)},
                        {"template", ObjectOr(Field(replica, "template"))}});
  }
  if (pod_sets.empty()) {
    return absl::InvalidArgumentError("spec.pytorchReplicaSpecs: Required value: Master or Worker");
  }
  return pod_sets;
}

TemplateLayout PyTorchJobLayout(const nlohmann::json& job) {
  TemplateLayout layout{.suspend = nlohmann::json::json_pointer("/spec/runPolicy/suspend")};
  for (const char* type : kReplicaTypes) {
    if (!Field(ReplicaSpecs(job), type).is_object()) continue;
    layout.templates.push_back(nlohmann::json::json_pointer(
        absl::StrCat("/spec/pytorchReplicaSpecs/", type, "/template")));
  }
  return layout;
}

std::optional<nlohmann::json> PyTorchJobScalePatch(const nlohmann::json& job,
                                                   const std::map<std::string, int>& counts) {
  nlohmann::json specs = nlohmann::json::object();
  for (const char* type : kReplicaTypes) {
    const nlohmann::json& replica = Field(ReplicaSpecs(job), type);
    auto it = counts.find(absl::AsciiStrToLower(type));
    if (!replica.is_object() || it == counts.end()) continue;
    if (IntOr(Field(replica, "replicas"), 1) != it->second) {
      specs[type] = {{"replicas", it->second}};
    }
  }
  if (specs.empty()) return std::nullopt;
  return nlohmann::json{{"spec", {{"pytorchReplicaSpecs", specs}}}};
}

bool PyTorchJobSuspended(const nlohmann::json& job) {
  return Field(Field(Field(job, "spec"), "runPolicy"), "suspend") == true;
}

std::optional<JobFinish> PyTorchJobFinished(const nlohmann::json& job) {
  const nlohmann::json& conditions = Field(Field(job, "status"), "conditions");
  if (!conditions.is_array()) return std::nullopt;
  for (const nlohmann::json& c : conditions) {
    const std::string type = Str(c, "type");
    if ((type == "Succeeded" || type == "Failed") && Str(c, "status") == "True") {
      return JobFinish{type != "Failed", Str(c, "message")};
    }
  }
  return std::nullopt;
}

bool PyTorchJobActive(const nlohmann::json& job) {
  const nlohmann::json& statuses = Field(Field(job, "status"), "replicaStatuses");
  if (!statuses.is_object()) return false;
  for (const auto& [type, status] : statuses.items()) {
    if (IntOr(Field(status, "active"), 0) != 0) return true;
  }
  return false;
}

bool PyTorchJobPodsReady(const nlohmann::json& job) {
  const nlohmann::json& conditions = Field(Field(job, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const nlohmann::json& c : conditions) {
    if (Str(c, "type") == "Running") return Str(c, "status") == "True";
  }
  return false;
}

}  // namespace admitd::shim
