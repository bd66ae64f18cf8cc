#include "clients/shim/integrations/pod/pod_observation.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "clients/shim/kube/json_fields.h"
#include "common/manifest/manifest.h"
#include "google/protobuf/util/time_util.h"

namespace admitd::shim {
namespace {

void CopyMap(const nlohmann::json& from, google::protobuf::Map<std::string, std::string>* to) {
  if (!from.is_object()) return;
  for (const auto& [k, v] : from.items()) {
    if (v.is_string()) (*to)[k] = v.get<std::string>();
  }
}

// RFC 3339 (what the API server writes) into a Timestamp; false when it is not one.
bool SetTime(const std::string& text, google::protobuf::Timestamp* out) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return false;
  out->set_seconds(absl::ToUnixSeconds(t));
  out->set_nanos(static_cast<int32_t>((t - absl::FromUnixSeconds(absl::ToUnixSeconds(t))) /
                                      absl::Nanoseconds(1)));
  return true;
}

v1::PodPhase Phase(const std::string& phase) {
  if (phase == "Pending") return v1::POD_PHASE_PENDING;
  if (phase == "Running") return v1::POD_PHASE_RUNNING;
  if (phase == "Succeeded") return v1::POD_PHASE_SUCCEEDED;
  if (phase == "Failed") return v1::POD_PHASE_FAILED;
  if (phase == "Unknown") return v1::POD_PHASE_UNKNOWN;
  return v1::POD_PHASE_UNSPECIFIED;
}

}  // namespace

absl::StatusOr<v1::PodObservation> PodObservationFromJson(const nlohmann::json& pod,
                                                          const std::string& cluster) {
  const nlohmann::json& meta = Field(pod, "metadata");
  const nlohmann::json& spec = Field(pod, "spec");
  const nlohmann::json& status = Field(pod, "status");
  v1::PodObservation obs;
  obs.set_cluster(cluster);
  obs.set_namespace_(Str(meta, "namespace"));
  obs.set_name(Str(meta, "name"));
  obs.set_uid(Str(meta, "uid"));
  if (obs.namespace_().empty() || obs.name().empty() || obs.uid().empty()) {
    return absl::InvalidArgumentError("metadata.namespace, name and uid are required");
  }
  int64_t rv = 0;
  if (!absl::SimpleAtoi(Str(meta, "resourceVersion"), &rv)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metadata.resourceVersion: \"", Str(meta, "resourceVersion"), "\" is not an integer"));
  }
  obs.set_resource_version(rv);
  CopyMap(Field(meta, "labels"), obs.mutable_labels());
  CopyMap(Field(meta, "annotations"), obs.mutable_annotations());
  obs.set_phase(Phase(Str(status, "phase")));
  obs.set_status_message(Str(status, "message"));
  SetTime(Str(meta, "creationTimestamp"), obs.mutable_creation_timestamp());
  if (const std::string t = Str(meta, "deletionTimestamp"); !t.empty()) {
    SetTime(t, obs.mutable_deletion_timestamp());
  }
  if (const nlohmann::json& g = Field(meta, "deletionGracePeriodSeconds"); g.is_number_integer()) {
    obs.set_deletion_grace_period_seconds(g.get<int64_t>());
  }
  obs.set_node_name(Str(spec, "nodeName"));
  if (const nlohmann::json& gates = Field(spec, "schedulingGates"); gates.is_array()) {
    for (const nlohmann::json& g : gates) obs.add_scheduling_gates()->set_name(Str(g, "name"));
  }
  if (const nlohmann::json& fins = Field(meta, "finalizers"); fins.is_array()) {
    for (const nlohmann::json& f : fins) {
      if (f.is_string()) obs.add_finalizers(f.get<std::string>());
    }
  }
  if (const nlohmann::json& conds = Field(status, "conditions"); conds.is_array()) {
    for (const nlohmann::json& c : conds) {
      v1::Condition* out = obs.add_conditions();
      out->set_type(Str(c, "type"));
      out->set_status(Str(c, "status"));
      out->set_reason(Str(c, "reason"));
      out->set_message(Str(c, "message"));
      SetTime(Str(c, "lastTransitionTime"), out->mutable_last_transition_time());
    }
  }
  if (const nlohmann::json& refs = Field(meta, "ownerReferences"); refs.is_array()) {
    for (const nlohmann::json& r : refs) {
      v1::OwnerReference* out = obs.add_owner_references();
      out->set_api_version(Str(r, "apiVersion"));
      out->set_kind(Str(r, "kind"));
      out->set_name(Str(r, "name"));
      out->set_uid(Str(r, "uid"));
      out->set_controller(Field(r, "controller").is_boolean() && Field(r, "controller").get<bool>());
    }
  }
  // The spec, read as a Workload's pod template is.
  const nlohmann::json doc = {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata", {{"name", "pod"}, {"namespace", obs.namespace_()}}},
      {"spec",
       {{"podSets",
         {{{"name", "main"}, {"count", 1}, {"template", {{"spec", spec.is_object() ? spec
                                                                                  : nlohmann::json::object()}}}}}}}}};
  absl::StatusOr<std::vector<manifest::Manifest>> parsed =
      manifest::ParseManifests(doc.dump(), absl::StrCat("pod ", obs.namespace_(), "/", obs.name()));
  if (!parsed.ok()) return parsed.status();
  *obs.mutable_spec() = (*parsed)[0].workload.spec().pod_sets(0).template_().spec();
  return obs;
}

}  // namespace admitd::shim
