#include "clients/shim/namespace_sync.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/framework/reconcile_util.h"

namespace admitd::shim {

absl::Status NamespaceSync::Sync(const std::string& name) {
  std::optional<nlohmann::json> ns = namespaces_.Get(name);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(15)));
  if (!reconcile::Live(ns)) {
    {
      absl::MutexLock lock(&mu_);
      applied_.erase(name);
    }
    v1::DeleteObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_NAMESPACE);
    req.set_name(name);
    v1::DeleteObjectResponse resp;
    grpc::Status s = admitd_.queues().Delete(&ctx, req, &resp);
    admitd_.ReportCall(s);
    if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND) {
      return absl::UnavailableError(absl::StrCat("delete namespace ", name, ": ", s.error_message()));
    }
    if (s.ok()) ++deleted_count_;
    return absl::OkStatus();
  }
  std::map<std::string, std::string> labels;
  const nlohmann::json meta = ns->value("metadata", nlohmann::json::object());
  if (meta.contains("labels") && meta["labels"].is_object()) {
    for (const auto& [k, v] : meta["labels"].items()) {
      if (v.is_string()) labels[k] = v.get<std::string>();
    }
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = applied_.find(name);
    if (it != applied_.end() && it->second == labels) return absl::OkStatus();
  }
  v1::ApplyRequest req;
  v1::ObjectMeta* m = req.mutable_object()->mutable_namespace_()->mutable_metadata();
  m->set_name(name);
  for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  v1::ApplyResponse resp;
  grpc::Status s = admitd_.queues().Apply(&ctx, req, &resp);
  admitd_.ReportCall(s);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("apply namespace ", name, ": ", s.error_message()));
  }
  if (!resp.unchanged()) ++applied_count_;
  absl::MutexLock lock(&mu_);
  applied_[name] = std::move(labels);
  return absl::OkStatus();
}

void NamespaceSync::Forget(const std::string& name) {
  absl::MutexLock lock(&mu_);
  applied_.erase(name);
}

}  // namespace admitd::shim
