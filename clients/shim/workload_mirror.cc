#include "clients/shim/workload_mirror.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace admitd::shim {
namespace {

constexpr char kApiVersion[] = "kueue.x-k8s.io/v1beta2";

std::string Path(const std::string& ns, const std::string& name = "") {
  std::string p = absl::StrCat("/apis/kueue.x-k8s.io/v1beta2/namespaces/", ns, "/workloads");
  if (!name.empty()) absl::StrAppend(&p, "/", name);
  return p;
}

// Protobuf's JSON writes 64-bit integers as strings; Kubernetes objects have numbers there.
void Numbers(nlohmann::json* j) {
  static const std::set<std::string> kIntegers = {
      "observedGeneration", "accumulatedPastExecutionTimeSeconds", "count", "minCount",
      "priority", "maximumExecutionTimeSeconds", "tolerationSeconds"};
  if (j->is_object()) {
    for (auto& [k, v] : j->items()) {
      int64_t n;
      if (v.is_string() && kIntegers.count(k) && absl::SimpleAtoi(v.get<std::string>(), &n)) {
        v = n;
      } else {
        Numbers(&v);
      }
    }
  } else if (j->is_array()) {
    for (nlohmann::json& v : *j) Numbers(&v);
  }
}

nlohmann::json ToJson(const google::protobuf::Message& m) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = false;
  if (!google::protobuf::util::MessageToJsonString(m, &text, options).ok()) {
    return nlohmann::json::object();
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return nlohmann::json::object();
  Numbers(&j);
  return j;
}

}  // namespace

nlohmann::json KueueWorkloadJson(const v1::Workload& wl) {
  const v1::ObjectMeta& m = wl.metadata();
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : m.labels()) labels[k] = v;
  labels[kMirrorLabel] = "true";
  nlohmann::json annotations = nlohmann::json::object();
  for (const auto& [k, v] : m.annotations()) annotations[k] = v;
  nlohmann::json owners = nlohmann::json::array();
  for (const v1::OwnerReference& o : m.owner_references()) {
    owners.push_back({{"apiVersion", o.api_version()},
                      {"kind", o.kind()},
                      {"name", o.name()},
                      {"uid", o.uid()},
                      {"controller", o.controller()}});
  }
  nlohmann::json meta = {{"name", m.name()},
                         {"namespace", m.namespace_()},
                         {"labels", labels},
                         {"annotations", annotations}};
  if (!owners.empty()) meta["ownerReferences"] = owners;
  nlohmann::json status = ToJson(wl.status());
  status.erase("pendingPosition");  // computed when read, never stored
  return {{"apiVersion", kApiVersion},
          {"kind", "Workload"},
          {"metadata", meta},
          {"spec", ToJson(wl.spec())},
          {"status", status}};
}

WorkloadMirror::WorkloadMirror(const KubeClient& kube, EventRecorder& events)
    : kube_(kube), events_(events) {}

void WorkloadMirror::OnWorkload(const v1::Workload& wl, bool deleted) {
  const std::string key = absl::StrCat(wl.metadata().namespace_(), "/", wl.metadata().name());
  {
    absl::MutexLock lock(&mu_);
    if (deleted) {
      latest_[key] = std::nullopt;
    } else {
      latest_[key] = wl;
    }
  }
  queue_.Add(key);
}

void WorkloadMirror::OnEvent(const v1::Event& e) {
  const v1::ObjectReference& r = e.regarding();
  std::string uid;
  {
    absl::MutexLock lock(&mu_);
    auto it = uids_.find(absl::StrCat(r.namespace_(), "/", r.name()));
    if (it == uids_.end()) return;  // not mirrored (yet)
    uid = it->second;
  }
  events_.Record({{"apiVersion", kApiVersion},
                  {"kind", "Workload"},
                  {"metadata", {{"namespace", r.namespace_()}, {"name", r.name()}, {"uid", uid}}}},
                 e.type(), e.reason(), e.note(),
                 e.reporting_controller().empty() ? "kueue-admission" : e.reporting_controller());
}

absl::Status WorkloadMirror::Apply(const std::string& key) {
  std::optional<v1::Workload> wl;
  {
    absl::MutexLock lock(&mu_);
    auto it = latest_.find(key);
    if (it == latest_.end()) return absl::OkStatus();
    wl = it->second;
  }
  const size_t slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  if (!wl) {
    absl::StatusOr<nlohmann::json> r = kube_.Delete(Path(ns, name));
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
    ++writes_;
    absl::MutexLock lock(&mu_);
    uids_.erase(key);
    if (auto it = latest_.find(key); it != latest_.end() && !it->second) latest_.erase(it);
    return absl::OkStatus();
  }
  nlohmann::json want = KueueWorkloadJson(*wl);
  absl::StatusOr<nlohmann::json> have = kube_.Get(Path(ns, name));
  if (have.status().code() == absl::StatusCode::kNotFound) {
    nlohmann::json body = want;
    body.erase("status");
    have = kube_.Create(Path(ns), body);
    ++writes_;
  } else if (have.ok() && ((*have)["spec"] != want["spec"] ||
                           (*have)["metadata"].value("labels", nlohmann::json()) !=
                               want["metadata"]["labels"] ||
                           (*have)["metadata"].value("annotations", nlohmann::json()) !=
                               want["metadata"]["annotations"])) {
    nlohmann::json body = want;
    body.erase("status");
    body["metadata"]["resourceVersion"] = (*have)["metadata"].value("resourceVersion", "");
    have = kube_.Update(Path(ns, name), body);
    ++writes_;
  }
  if (!have.ok()) return have.status();
  {
    absl::MutexLock lock(&mu_);
    uids_[key] = (*have)["metadata"].value("uid", "");
  }
  if (have->value("status", nlohmann::json::object()) != want["status"]) {
    nlohmann::json body = *have;
    body["status"] = want["status"];
    absl::StatusOr<nlohmann::json> r = kube_.Update(Path(ns, name) + "/status", body);
    if (!r.ok()) return r.status();
    ++writes_;
  }
  return absl::OkStatus();
}

absl::Status WorkloadMirror::Resync() {
  absl::StatusOr<nlohmann::json> list = kube_.Get(absl::StrCat(
      "/apis/kueue.x-k8s.io/v1beta2/workloads?labelSelector=", kMirrorLabel, "%3Dtrue"));
  if (!list.ok()) return list.status();
  for (const nlohmann::json& item : list->value("items", nlohmann::json::array())) {
    const nlohmann::json meta = item.value("metadata", nlohmann::json::object());
    const std::string key = absl::StrCat(meta.value("namespace", ""), "/", meta.value("name", ""));
    {
      absl::MutexLock lock(&mu_);
      if (latest_.count(key) && latest_[key]) continue;  // admitd has it
      latest_[key] = std::nullopt;
    }
    queue_.Add(key);
  }
  return absl::OkStatus();
}

void WorkloadMirror::Run() {
  std::string key;
  while (queue_.Get(&key)) {
    absl::Status s = Apply(key);
    if (s.ok()) {
      queue_.Forget(key);
    } else {
      ADMITD_LOG(kDebug, "workload not mirrored", {{"workload", key}, {"error", s.ToString()}});
      queue_.AddRateLimited(key);
    }
    queue_.Done(key);
  }
}

void WorkloadMirror::Stop() { queue_.ShutDown(); }

}  // namespace admitd::shim
