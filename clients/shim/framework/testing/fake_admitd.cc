// FakeAdmitd (fakes.h): admitd's Workloads in memory, moved through their life by the test.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/testing/fakes.h"
#include "google/protobuf/text_format.h"

namespace admitd::shim::testing {
namespace {

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

const v1::OwnerReference* Controller(const v1::Workload& wl) {
  for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
    if (o.controller()) return &o;
  }
  return nullptr;
}

void DropCondition(v1::Workload* wl, const std::string& type) {
  auto* conditions = wl->mutable_status()->mutable_conditions();
  conditions->erase(std::remove_if(conditions->begin(), conditions->end(),
                                   [&](const v1::Condition& c) { return c.type() == type; }),
                    conditions->end());
}

}  // namespace

void SetWorkloadCondition(v1::Workload* wl, const std::string& type, const std::string& status,
                          const std::string& reason, const std::string& message) {
  DropCondition(wl, type);
  v1::Condition* c = wl->mutable_status()->add_conditions();
  c->set_type(type);
  c->set_status(status);
  c->set_reason(reason);
  c->set_message(message);
}

void FakeAdmitd::SetFlavor(const v1::ResourceFlavor& flavor) {
  absl::MutexLock lock(&mu_);
  flavors_[flavor.metadata().name()] = flavor;
}

void FakeAdmitd::Admit(const std::string& ns, const std::string& name,
                       const std::string& cluster_queue,
                       const std::map<std::string, std::string>& flavors) {
  absl::MutexLock lock(&mu_);
  v1::Workload* wl = Find(ns, name);
  if (wl == nullptr) return;
  v1::Admission* admission = wl->mutable_status()->mutable_admission();
  admission->Clear();
  admission->set_cluster_queue(cluster_queue);
  for (const v1::PodSet& ps : wl->spec().pod_sets()) {
    v1::PodSetAssignment* a = admission->add_pod_set_assignments();
    a->set_name(ps.name());
    a->set_count(ps.count());
    for (const auto& [resource, flavor] : flavors) (*a->mutable_flavors())[resource] = flavor;
  }
  SetWorkloadCondition(wl, "QuotaReserved", "True", "QuotaReserved");
  SetWorkloadCondition(wl, "Admitted", "True", "Admitted");
  DropCondition(wl, "Evicted");
}

void FakeAdmitd::Evict(const std::string& ns, const std::string& name,
                       const std::string& message) {
  absl::MutexLock lock(&mu_);
  v1::Workload* wl = Find(ns, name);
  if (wl == nullptr) return;
  SetWorkloadCondition(wl, "Evicted", "True", "Preempted", message);
  SetWorkloadCondition(wl, "Admitted", "False", "NoReservation");
}

void FakeAdmitd::SetCondition(const std::string& ns, const std::string& name,
                              const std::string& type, const std::string& status,
                              const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (v1::Workload* wl = Find(ns, name)) SetWorkloadCondition(wl, type, status, reason);
}

void FakeAdmitd::Put(const v1::Workload& workload) {
  absl::MutexLock lock(&mu_);
  v1::Workload wl = workload;
  if (wl.metadata().uid().empty()) wl.mutable_metadata()->set_uid(absl::StrCat("wl-", next_uid_++));
  if (!wl.metadata().has_creation_timestamp()) {
    wl.mutable_metadata()->mutable_creation_timestamp()->set_seconds(clock_++);
  }
  workloads_[Key(wl.metadata().namespace_(), wl.metadata().name())] = std::move(wl);
}

std::vector<FakeAdmitd::Call> FakeAdmitd::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::vector<std::string> FakeAdmitd::methods() const {
  std::vector<std::string> out;
  for (const Call& c : calls()) out.push_back(c.method);
  return out;
}

void FakeAdmitd::ClearCalls() {
  absl::MutexLock lock(&mu_);
  calls_.clear();
}

void FakeAdmitd::FailNext(const std::string& method, absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_[method] = std::move(status);
}

absl::Status FakeAdmitd::Begin(const std::string& method, const std::string& workload,
                               const google::protobuf::Message& request) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(request, &text);
  calls_.push_back({method, workload, std::move(text)});
  auto it = fail_.find(method);
  if (it == fail_.end()) return absl::OkStatus();
  absl::Status s = it->second;
  fail_.erase(it);
  return s;
}

v1::Workload* FakeAdmitd::Find(const std::string& ns, const std::string& name) {
  auto it = workloads_.find(Key(ns, name));
  return it == workloads_.end() ? nullptr : &it->second;
}

std::vector<v1::Workload> FakeAdmitd::WorkloadsOf(const std::string& kind, const std::string& ns,
                                                  const std::string& owner_name) const {
  std::vector<v1::Workload> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, wl] : workloads_) {
    const v1::OwnerReference* owner = Controller(wl);
    if (owner != nullptr && owner->kind() == kind && owner->name() == owner_name &&
        wl.metadata().namespace_() == ns) {
      out.push_back(wl);
    }
  }
  std::sort(out.begin(), out.end(), [](const v1::Workload& a, const v1::Workload& b) {
    const int64_t ta = a.metadata().creation_timestamp().seconds();
    const int64_t tb = b.metadata().creation_timestamp().seconds();
    return ta != tb ? ta < tb : a.metadata().name() < b.metadata().name();
  });
  return out;
}

std::optional<v1::Workload> FakeAdmitd::Workload(const std::string& ns,
                                                 const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = workloads_.find(Key(ns, name));
  if (it == workloads_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> FakeAdmitd::CopyKeys() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, wl] : workloads_) {
    if (wl.metadata().labels().count("kueue.x-k8s.io/multikueue-origin")) out.push_back(key);
  }
  return out;
}

std::map<std::string, v1::ResourceFlavor> FakeAdmitd::Flavors() const {
  absl::MutexLock lock(&mu_);
  return flavors_;
}

absl::StatusOr<v1::SubmitResponse> FakeAdmitd::Submit(const v1::SubmitRequest& req) {
  absl::MutexLock lock(&mu_);
  const v1::ObjectMeta& meta = req.workload().metadata();
  if (absl::Status s = Begin("Submit", Key(meta.namespace_(), meta.name()), req); !s.ok()) {
    return s;
  }
  v1::SubmitResponse resp;
  if (v1::Workload* existing = Find(meta.namespace_(), meta.name())) {
    *resp.mutable_workload() = *existing;
    return resp;
  }
  v1::Workload wl = req.workload();
  wl.mutable_metadata()->set_uid(absl::StrCat("wl-", next_uid_++));
  wl.mutable_metadata()->mutable_creation_timestamp()->set_seconds(clock_++);
  workloads_[Key(meta.namespace_(), meta.name())] = wl;
  resp.set_created(true);
  *resp.mutable_workload() = std::move(wl);
  return resp;
}

absl::StatusOr<v1::ResizeResponse> FakeAdmitd::Resize(const v1::ResizeRequest& req) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("Resize", Key(req.namespace_(), req.job().name()), req); !s.ok()) {
    return s;
  }
  // In place, on every unfinished Workload of the job (admitd's choice between in place and a
  // new slice is not the reconcile's).
  v1::ResizeResponse resp;
  for (auto& [key, wl] : workloads_) {
    const v1::OwnerReference* owner = Controller(wl);
    if (owner == nullptr || owner->uid() != req.job().uid()) continue;
    for (v1::PodSet& ps : *wl.mutable_spec()->mutable_pod_sets()) {
      for (const v1::PodSetCount& c : req.pod_sets()) {
        if (c.name() == ps.name()) ps.set_count(c.count());
      }
    }
    *resp.add_workloads() = wl;
  }
  return resp;
}

absl::Status FakeAdmitd::ReleaseQuota(const v1::ReleaseQuotaRequest& req) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("ReleaseQuota", Key(req.namespace_(), req.name()), req); !s.ok()) {
    return s;
  }
  v1::Workload* wl = Find(req.namespace_(), req.name());
  if (wl == nullptr) return absl::NotFoundError("release quota: workload not found");
  if (!req.uid().empty() && req.uid() != wl->metadata().uid()) {
    return absl::FailedPreconditionError("release quota: uid mismatch");
  }
  if (req.has_finished()) {
    const std::string reason = !req.finished().reason().empty() ? req.finished().reason()
                               : req.finished().succeeded()     ? "Succeeded"
                                                                : "Failed";
    SetWorkloadCondition(wl, "Finished", "True", reason, req.finished().message());
  } else if (req.has_stopped()) {
    wl->mutable_status()->clear_admission();
    SetWorkloadCondition(wl, "QuotaReserved", "False", "Pending");
    SetWorkloadCondition(wl, "Admitted", "False", "NoReservation");
    DropCondition(wl, "Evicted");
  } else {
    *wl->mutable_status()->mutable_reclaimable_pods() = req.reclaimable().pods();
  }
  return absl::OkStatus();
}

absl::Status FakeAdmitd::DeleteWorkload(const v1::Workload& workload) {
  absl::MutexLock lock(&mu_);
  const std::string key = Key(workload.metadata().namespace_(), workload.metadata().name());
  if (absl::Status s = Begin("DeleteWorkload", key, workload); !s.ok()) return s;
  auto it = workloads_.find(key);
  if (it != workloads_.end() && it->second.metadata().uid() == workload.metadata().uid()) {
    workloads_.erase(it);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Workload> FakeAdmitd::UpdateRemoteJob(const v1::UpdateRemoteJobRequest& req) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("UpdateRemoteJob", Key(req.namespace_(), req.name()), req); !s.ok()) {
    return s;
  }
  v1::Workload* wl = Find(req.namespace_(), req.name());
  if (wl == nullptr) return absl::NotFoundError("update remote job: workload not found");
  if (req.has_adopt()) *wl->mutable_metadata()->add_owner_references() = req.adopt();
  if (req.has_manifest()) wl->mutable_remote_job()->set_manifest(req.manifest());
  if (req.has_status()) wl->mutable_remote_job()->set_status(req.status());
  return *wl;
}

absl::Status FakeAdmitd::ReportPodsReady(const v1::ReportPodsReadyRequest& req) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("ReportPodsReady", Key(req.namespace_(), req.name()), req); !s.ok()) {
    return s;
  }
  v1::Workload* wl = Find(req.namespace_(), req.name());
  if (wl == nullptr) return absl::NotFoundError("report pods ready: workload not found");
  SetWorkloadCondition(wl, "PodsReady", req.ready() ? "True" : "False",
                       req.ready() ? "Started" : "WaitForStart");
  return absl::OkStatus();
}

absl::Status FakeAdmitd::SetActive(const v1::SetActiveRequest& req) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Begin("SetActive", Key(req.namespace_(), req.name()), req); !s.ok()) {
    return s;
  }
  v1::Workload* wl = Find(req.namespace_(), req.name());
  if (wl == nullptr) return absl::NotFoundError("set active: workload not found");
  wl->mutable_spec()->set_active(req.active());
  if (!req.active() && wl->status().has_admission()) {
    SetWorkloadCondition(wl, "Evicted", "True", "Deactivated", "The workload is deactivated");
    SetWorkloadCondition(wl, "Admitted", "False", "NoReservation");
  }
  return absl::OkStatus();
}

}  // namespace admitd::shim::testing
