#include "clients/shim/webhook/admitd_webhook_context.h"

#include <grpcpp/grpcpp.h>

#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace admitd::shim {

AdmitdWebhookContext::AdmitdWebhookContext(v1::QueueService::StubInterface& queues,
                                           AdmitdWebhookContextOptions options)
    : queues_(queues),
      options_(std::move(options)),
      excluded_(options_.excluded_namespaces.begin(), options_.excluded_namespaces.end()) {}

bool AdmitdWebhookContext::DefaultLocalQueueExists(const std::string& ns) {
  return Exists(v1::OBJECT_KIND_LOCAL_QUEUE, ns, "default");
}

bool AdmitdWebhookContext::DefaultPriorityClassExists() {
  return Exists(v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS, "", "default");
}

bool AdmitdWebhookContext::NamespaceManaged(const std::string& ns) {
  return excluded_.count(ns) == 0;
}

std::vector<std::string> AdmitdWebhookContext::ParseNamespaceList(const std::string& flag) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(flag, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

std::optional<bool> AdmitdWebhookContext::Remembered(
    const std::tuple<int, std::string, std::string>& key) {
  absl::MutexLock lock(&mu_);
  auto it = answers_.find(key);
  if (it != answers_.end() && options_.now() - it->second.at < options_.cache_ttl) {
    return it->second.exists;
  }
  return std::nullopt;
}

grpc::Status AdmitdWebhookContext::Fetch(v1::ObjectKind kind, const std::string& ns,
                                         const std::string& name, v1::QueueObject* object) {
  v1::GetObjectRequest request;
  request.set_kind(kind);
  request.set_namespace_(ns);
  request.set_name(name);
  grpc::ClientContext rpc;
  rpc.set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_timeout));
  return queues_.Get(&rpc, request, object);
}

bool AdmitdWebhookContext::Exists(v1::ObjectKind kind, const std::string& ns,
                                  const std::string& name) {
  const auto key = std::make_tuple(static_cast<int>(kind), ns, name);
  if (std::optional<bool> known = Remembered(key)) return *known;
  v1::QueueObject object;
  const grpc::Status status = Fetch(kind, ns, name, &object);
  if (!status.ok() && status.error_code() != grpc::StatusCode::NOT_FOUND) return false;
  absl::MutexLock lock(&mu_);
  answers_[key] = Answer{status.ok(), options_.now()};
  return status.ok();
}

bool AdmitdWebhookContext::LocalQueueUsesMultiKueue(const std::string& ns,
                                                    const std::string& name) {
  const auto key = std::make_tuple(-1, ns, name);  // not an object kind: this question's own
  if (std::optional<bool> known = Remembered(key)) return *known;
  // Any error but NOT_FOUND on the way: "no", not remembered.
  auto answer = [&](const grpc::Status& status, bool uses) {
    if (!status.ok() && status.error_code() != grpc::StatusCode::NOT_FOUND) return false;
    absl::MutexLock lock(&mu_);
    answers_[key] = Answer{uses, options_.now()};
    return uses;
  };
  v1::QueueObject lq, cq;
  grpc::Status s = Fetch(v1::OBJECT_KIND_LOCAL_QUEUE, ns, name, &lq);
  if (!s.ok()) return answer(s, false);
  s = Fetch(v1::OBJECT_KIND_CLUSTER_QUEUE, "", lq.local_queue().spec().cluster_queue(), &cq);
  if (!s.ok()) return answer(s, false);
  for (const v1::AdmissionCheckStrategyRule& rule :
       cq.cluster_queue().spec().admission_checks_strategy().admission_checks()) {
    v1::QueueObject check;
    s = Fetch(v1::OBJECT_KIND_ADMISSION_CHECK, "", rule.name(), &check);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) continue;
    if (!s.ok()) return answer(s, false);
    if (check.admission_check().spec().controller_name() == "kueue.x-k8s.io/multikueue") {
      return answer(grpc::Status::OK, true);
    }
  }
  return answer(grpc::Status::OK, false);
}

}  // namespace admitd::shim
