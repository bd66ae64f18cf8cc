#include "clients/shim/admitd_webhook_context.h"

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

bool AdmitdWebhookContext::Exists(v1::ObjectKind kind, const std::string& ns,
                                  const std::string& name) {
  const auto key = std::make_tuple(static_cast<int>(kind), ns, name);
  {
    absl::MutexLock lock(&mu_);
    auto it = answers_.find(key);
    if (it != answers_.end() && options_.now() - it->second.at < options_.cache_ttl) {
      return it->second.exists;
    }
  }
  v1::GetObjectRequest request;
  request.set_kind(kind);
  request.set_namespace_(ns);
  request.set_name(name);
  v1::QueueObject object;
  grpc::ClientContext rpc;
  rpc.set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_timeout));
  const grpc::Status status = queues_.Get(&rpc, request, &object);
  if (!status.ok() && status.error_code() != grpc::StatusCode::NOT_FOUND) return false;
  absl::MutexLock lock(&mu_);
  answers_[key] = Answer{status.ok(), options_.now()};
  return status.ok();
}

}  // namespace admitd::shim
