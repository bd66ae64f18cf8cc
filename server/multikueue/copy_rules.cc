#include "server/multikueue/copy_rules.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/engine/engine.h"

namespace admitd::multikueue::rules {

std::string Key(const v1::ObjectMeta& meta) {
  return absl::StrCat(meta.namespace_(), "/", meta.name());
}

const v1::Condition* FindCondition(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const v1::Workload& wl, const std::string& type) {
  const v1::Condition* c = FindCondition(wl, type);
  return c != nullptr && c->status() == "True";
}

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

bool HoldsReservation(const v1::Workload& wl) {
  return IsTrue(wl, "QuotaReserved") && !IsTrue(wl, "Finished");
}

// The manager reservation a copy belongs to: the QuotaReserved transition time.
std::string ReservationId(const v1::Workload& wl) {
  const v1::Condition* c = FindCondition(wl, "QuotaReserved");
  if (c == nullptr) return "";
  return absl::StrCat(c->last_transition_time().seconds(), ".", c->last_transition_time().nanos());
}

const v1::AdmissionCheckState* CheckState(const v1::Workload& wl, const std::string& check) {
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    if (c.name() == check) return &c;
  }
  return nullptr;
}



bool IsElastic(const v1::Workload& wl) { return AnnotationOf(wl, kElasticJobAnnotation) == "true"; }

// The manager scaled an elastic workload down: every count at most the copy's, one lower.
bool ScaledDown(const v1::Workload& local, const v1::Workload& copy) {
  if (local.spec().pod_sets_size() != copy.spec().pod_sets_size()) return false;
  bool lower = false;
  for (int i = 0; i < local.spec().pod_sets_size(); ++i) {
    const v1::PodSet& l = local.spec().pod_sets(i);
    const v1::PodSet& c = copy.spec().pod_sets(i);
    if (l.name() != c.name() || l.count() > c.count()) return false;
    lower = lower || l.count() < c.count();
  }
  return lower;
}

std::string AnnotationOf(const v1::Workload& wl, const std::string& name) {
  auto it = wl.metadata().annotations().find(name);
  return it == wl.metadata().annotations().end() ? "" : it->second;
}

// Why MultiKueue cannot run the workload's job in a worker (Kueue's Rejected messages, without
// the ", Previously" part), or nothing. A workload without an owner is dispatched as it is:
// its submitter follows the copies itself.
std::optional<std::string> RejectionOf(const v1::Workload& wl) {
  const v1::OwnerReference* owner = nullptr;
  for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
    if (o.controller()) owner = &o;
  }
  if (owner == nullptr && !wl.metadata().owner_references().empty()) {
    owner = &wl.metadata().owner_references(0);
  }
  if (owner == nullptr) return std::nullopt;
  // Pods (and so a Deployment's or a StatefulSet's) have no managedBy: they are accepted as
  // they are, and stay gated here while a worker runs their copies.
  if (owner->api_version() == "v1" && owner->kind() == "Pod") return std::nullopt;
  // The kinds admitd-shim has a MultiKueue adapter for (Kueue's registered adapters).
  static const std::pair<const char*, const char*> kAdapters[] = {
      {"batch/v1", "Job"},
      {"jobset.x-k8s.io/v1alpha2", "JobSet"},
      {"kubeflow.org/v1", "PyTorchJob"},
      {"ray.io/v1", "RayJob"},
      {"ray.io/v1", "RayCluster"}};
  bool adapter = false;
  for (const auto& [api_version, kind] : kAdapters) {
    adapter = adapter || (owner->api_version() == api_version && owner->kind() == kind);
  }
  if (adapter) {
    const std::string& managed_by = wl.remote_job().managed_by();
    if (managed_by == kMultiKueueControllerName) return std::nullopt;
    return absl::StrCat("The owner is not managed by Kueue: Expecting spec.managedBy to be \"",
                        kMultiKueueControllerName, "\" not \"", managed_by, "\"");
  }
  // Go's GroupVersionKind as text: "group/version, Kind=K", "/v1, Kind=Pod" for the core group.
  const std::string gv = absl::StrContains(owner->api_version(), '/')
                             ? owner->api_version()
                             : absl::StrCat("/", owner->api_version());
  return absl::StrCat("No multikueue adapter found for owner kind \"", gv, ", Kind=",
                      owner->kind(), "\"");
}

}  // namespace admitd::multikueue::rules
