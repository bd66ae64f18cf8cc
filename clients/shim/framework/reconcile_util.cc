#include "clients/shim/framework/reconcile_util.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/client.h"
#include "clients/shim/admitd_link.h"
#include "common/status.h"
#include "google/protobuf/util/message_differencer.h"

namespace admitd::shim::reconcile {

nlohmann::json Meta(const nlohmann::json& obj) {
  if (!obj.is_object()) return nlohmann::json::object();
  auto it = obj.find("metadata");
  return it != obj.end() && it->is_object() ? *it : nlohmann::json::object();
}

bool Live(const std::optional<nlohmann::json>& obj) {
  return obj && Meta(*obj).value("deletionTimestamp", nlohmann::json()).is_null();
}

bool Reserved(const v1::Workload& wl) {
  return ConditionTrue(wl, "QuotaReserved") && wl.status().has_admission();
}

bool Finished(const v1::Workload& wl) { return ConditionTrue(wl, "Finished"); }

bool Admitted(const v1::Workload& wl) { return Reserved(wl) && ConditionTrue(wl, "Admitted"); }

bool SameContainers(const google::protobuf::RepeatedPtrField<v1::Container>& a,
                    const google::protobuf::RepeatedPtrField<v1::Container>& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i) {
    if (!google::protobuf::util::MessageDifferencer::Equals(a[i], b[i])) return false;
  }
  return true;
}

bool SameTolerations(const v1::PodSpec& a, const v1::PodSpec& b) {
  if (a.tolerations_size() != b.tolerations_size()) return false;
  for (int i = 0; i < a.tolerations_size(); ++i) {
    if (!google::protobuf::util::MessageDifferencer::Equals(a.tolerations(i), b.tolerations(i))) {
      return false;
    }
  }
  return true;
}

namespace {
thread_local const tracing::SpanContext* current_trace = nullptr;
}  // namespace

ReconcileTrace::ReconcileTrace(const tracing::SpanContext& span) : previous_(current_trace) {
  current_trace = span.IsValid() ? &span : nullptr;
}
ReconcileTrace::~ReconcileTrace() { current_trace = previous_; }

void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(15)));
  if (current_trace != nullptr) {
    ctx->AddMetadata("traceparent", tracing::FormatTraceparent(*current_trace));
  }
}

absl::Status FromGrpc(const std::string& what, const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  absl::Status status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
  if (std::optional<absl::Duration> delay = clients::RetryDelayOf(s)) {
    return WithRetryDelay(std::move(status), *delay);
  }
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  std::optional<absl::Duration> delay = RetryDelayOf(status);
  if (!delay) return std::nullopt;
  return clients::WithJitter(*delay);
}

absl::Status ReportPodsReady(AdmitdApi& admitd, const v1::Workload& wl, bool ready) {
  if (!Admitted(wl) || ConditionTrue(wl, "Evicted")) return absl::OkStatus();
  const v1::Condition* c = FindCondition(wl, "PodsReady");
  if (c == nullptr || (c->status() == "True") == ready) return absl::OkStatus();
  v1::ReportPodsReadyRequest req;
  req.set_namespace_(wl.metadata().namespace_());
  req.set_name(wl.metadata().name());
  req.set_uid(wl.metadata().uid());
  req.set_ready(ready);
  return admitd.ReportPodsReady(req);
}

absl::StatusOr<std::map<std::string, v1::ResourceFlavor>> AdmittedFlavors(
    const AdmitdApi& admitd, const v1::Workload& wl) {
  std::map<std::string, v1::ResourceFlavor> flavors = admitd.Flavors();
  for (const v1::PodSetAssignment& a : wl.status().admission().pod_set_assignments()) {
    for (const auto& [resource, flavor] : a.flavors()) {
      if (!flavors.count(flavor)) {
        return absl::NotFoundError(absl::StrCat("ResourceFlavor ", flavor, " not known yet"));
      }
    }
  }
  return flavors;
}

}  // namespace admitd::shim::reconcile
