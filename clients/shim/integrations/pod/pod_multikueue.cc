#include "clients/shim/integrations/pod/pod_multikueue.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/reconcile_util.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "common/log.h"

namespace admitd::shim {
namespace {

bool IsGated(const nlohmann::json& pod) {
  const nlohmann::json& gates = Field(Field(pod, "spec"), "schedulingGates");
  if (!gates.is_array()) return false;
  for (const nlohmann::json& g : gates) {
    if (Str(g, "name") == kAdmissionGate) return true;
  }
  return false;
}

const nlohmann::json* ConditionOf(const nlohmann::json& status, const std::string& type) {
  const nlohmann::json& conditions = Field(status, "conditions");
  if (!conditions.is_array()) return nullptr;
  for (const nlohmann::json& c : conditions) {
    if (Str(c, "type") == type) return &c;
  }
  return nullptr;
}

}  // namespace

nlohmann::json PodsManifest(const std::vector<nlohmann::json>& pods) {
  nlohmann::json items = nlohmann::json::array();
  for (const nlohmann::json& pod : pods) {
    const nlohmann::json& meta = Field(pod, "metadata");
    nlohmann::json spec = ObjectOr(Field(pod, "spec"));
    spec.erase("nodeName");
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata",
                      {{"name", Str(meta, "name")},
                       {"namespace", Str(meta, "namespace")},
                       {"labels", ObjectOr(Field(meta, "labels"))},
                       {"annotations", ObjectOr(Field(meta, "annotations"))}}},
                     {"spec", std::move(spec)}});
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

bool IsPodsManifest(const nlohmann::json& manifest) {
  return Str(manifest, "apiVersion") == "v1" && Str(manifest, "kind") == "List" &&
         Field(manifest, "items").is_array();
}

absl::StatusOr<std::vector<nlohmann::json>> WorkerPodsFor(const v1::Workload& copy) {
  const nlohmann::json manifest =
      nlohmann::json::parse(copy.remote_job().manifest(), nullptr, /*allow_exceptions=*/false);
  if (!IsPodsManifest(manifest)) {
    return absl::InvalidArgumentError(
        "remoteJob.manifest: Invalid value: must be a v1 List of Pods");
  }
  auto origin = copy.metadata().labels().find(kMultiKueueOriginLabel);
  if (origin == copy.metadata().labels().end()) {
    return absl::InvalidArgumentError("the copy has no kueue.x-k8s.io/multikueue-origin label");
  }
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& item : manifest["items"]) {
    const nlohmann::json& meta = Field(item, "metadata");
    if (Str(item, "kind") != "Pod" || Str(meta, "name").empty() ||
        !Field(item, "spec").is_object()) {
      return absl::InvalidArgumentError(
          "remoteJob.manifest.items: Invalid value: each must be a Pod with a name and a spec");
    }
    nlohmann::json labels = ObjectOr(Field(meta, "labels"));
    nlohmann::json annotations = ObjectOr(Field(meta, "annotations"));
    labels[kMultiKueueOriginLabel] = origin->second;
    labels.erase(kPrebuiltWorkloadKey);
    annotations[kPrebuiltWorkloadKey] = copy.metadata().name();
    out.push_back({{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata",
                    {{"name", Str(meta, "name")},
                     {"namespace", copy.metadata().namespace_()},
                     {"labels", std::move(labels)},
                     {"annotations", std::move(annotations)}}},
                   {"spec", item["spec"]}});
  }
  return out;
}

std::optional<nlohmann::json> PodStatusPatch(const nlohmann::json& local,
                                             const nlohmann::json& remote) {
  if (!remote.is_object()) return std::nullopt;
  const nlohmann::json current = ObjectOr(Field(local, "status"));
  nlohmann::json want = nlohmann::json::object();
  want["phase"] = Field(remote, "phase").is_string() ? remote["phase"] : nlohmann::json("Pending");
  want["message"] = Field(remote, "message").is_string() ? remote["message"] : nlohmann::json();
  nlohmann::json conditions =
      Field(remote, "conditions").is_array() ? remote["conditions"] : nlohmann::json::array();
  const nlohmann::json* remote_scheduled = ConditionOf(remote, "PodScheduled");
  const bool scheduled_there =
      remote_scheduled != nullptr && Str(*remote_scheduled, "status") == "True";
  if (const nlohmann::json* here = ConditionOf(current, "PodScheduled");
      here != nullptr && IsGated(local) && !scheduled_there) {
    nlohmann::json kept = nlohmann::json::array();
    for (const nlohmann::json& c : conditions) {
      if (Str(c, "type") != "PodScheduled") kept.push_back(c);
    }
    kept.push_back(*here);
    conditions = std::move(kept);
  }
  want["conditions"] = std::move(conditions);
  nlohmann::json have = {{"phase", Field(current, "phase")},
                         {"message", Field(current, "message")},
                         {"conditions", Field(current, "conditions").is_array()
                                            ? current["conditions"]
                                            : nlohmann::json::array()}};
  if (have == want) return std::nullopt;
  return nlohmann::json{{"status", std::move(want)}};
}

PodMultiKueue::PodMultiKueue(const KubeApi& kube, AdmitdApi& admitd, const ObjectCache& pods,
                             std::string cluster)
    : kube_(kube), admitd_(admitd), pods_(pods), cluster_(std::move(cluster)) {}

bool PodMultiKueue::Concerns(const v1::Workload& wl, const std::string& cluster) {
  const auto& labels = wl.metadata().labels();
  auto c = labels.find(kPodClusterLabel);
  return c != labels.end() && c->second == cluster && labels.count(kMultiKueueOriginLabel) == 0 &&
         (!wl.status().cluster_name().empty() || !wl.status().nominated_cluster_names().empty() ||
          !wl.remote_job().status().empty());
}

absl::Status PodMultiKueue::Reconcile(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  std::optional<v1::Workload> wl = admitd_.Workload(ns, name);
  if (!wl || !Concerns(*wl, cluster_)) return absl::OkStatus();
  // The Workload's pods, as it names them (a pod recreated under the same name is another pod).
  std::vector<nlohmann::json> pods;
  for (const v1::OwnerReference& o : wl->metadata().owner_references()) {
    if (o.kind() != "Pod") continue;
    std::optional<nlohmann::json> pod = pods_.Get(ns + "/" + o.name());
    if (pod && Str(Field(*pod, "metadata"), "uid") == o.uid()) pods.push_back(*std::move(pod));
  }
  // The manifest follows the Workload's pods: a serving group admitted at its first pod (fast
  // admission) hands its later pods over as they join.
  std::string manifest = reconcile::Finished(*wl) ? "" : PodsManifest(pods).dump();
  if (!manifest.empty() && manifest != wl->remote_job().manifest()) {
    if (pods.size() != static_cast<size_t>(wl->metadata().owner_references_size())) {
      return absl::UnavailableError("the Workload's pods are not all in the cache yet");
    }
    v1::UpdateRemoteJobRequest request;
    request.set_namespace_(ns);
    request.set_name(name);
    request.set_uid(wl->metadata().uid());
    request.set_manifest(std::move(manifest));
    absl::StatusOr<v1::Workload> updated = admitd_.UpdateRemoteJob(request);
    if (!updated.ok()) return updated.status();
    ++handed_over_;
    ADMITD_LOG(kInfo, "multikueue pods handed over", {{"workload", key},
                                                      {"pods", absl::StrCat(pods.size())}});
  }
  if (wl->remote_job().status().empty()) return absl::OkStatus();
  const nlohmann::json status =
      nlohmann::json::parse(wl->remote_job().status(), nullptr, /*allow_exceptions=*/false);
  const nlohmann::json& remote = Field(status, "pods");
  absl::Status result = absl::OkStatus();
  for (const nlohmann::json& pod : pods) {
    const nlohmann::json& meta = Field(pod, "metadata");
    std::optional<nlohmann::json> patch = PodStatusPatch(pod, Field(remote, Str(meta, "name")));
    if (!patch) continue;
    (*patch)["metadata"] = {{"resourceVersion", Str(meta, "resourceVersion")}};
    absl::StatusOr<nlohmann::json> r = kube_.Patch(
        absl::StrCat("/api/v1/namespaces/", ns, "/pods/", Str(meta, "name"), "/status"), *patch);
    if (r.ok()) {
      ++mirrored_;
    } else if (r.status().code() != absl::StatusCode::kNotFound) {
      result.Update(r.status());
    }
  }
  return result;
}

}  // namespace admitd::shim
