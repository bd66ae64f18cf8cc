#include "common/status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/rpc/error_details.pb.h"

namespace admitd {

absl::Status InvalidArgument(const std::vector<FieldViolation>& violations) {
  google::rpc::BadRequest bad_request;
  std::vector<std::string> parts;
  for (const FieldViolation& v : violations) {
    auto* fv = bad_request.add_field_violations();
    fv->set_field(v.field);
    fv->set_description(v.description);
    parts.push_back(v.field.empty() ? v.description : absl::StrCat(v.field, ": ", v.description));
  }
  absl::Status status(absl::StatusCode::kInvalidArgument, absl::StrJoin(parts, "; "));
  status.SetPayload(kBadRequestTypeUrl, absl::Cord(bad_request.SerializeAsString()));
  return status;
}

absl::Status ErrorWithReason(absl::StatusCode code, absl::string_view reason,
                             absl::string_view message) {
  google::rpc::ErrorInfo info;
  info.set_reason(std::string(reason));
  info.set_domain(std::string(kErrorDomain));
  absl::Status status(code, message);
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

absl::Status NotFound(absl::string_view kind, absl::string_view name, absl::string_view field) {
  absl::Status status =
      ErrorWithReason(absl::StatusCode::kNotFound, "NOT_FOUND",
                      absl::StrCat(kind, " \"", name, "\" not found"));
  if (!field.empty()) {
    google::rpc::BadRequest bad_request;
    auto* fv = bad_request.add_field_violations();
    fv->set_field(std::string(field));
    fv->set_description(absl::StrCat(kind, " \"", name, "\" not found"));
    status.SetPayload(kBadRequestTypeUrl, absl::Cord(bad_request.SerializeAsString()));
  }
  return status;
}

absl::Status WithRetryDelay(absl::Status status, absl::Duration delay) {
  if (delay < absl::ZeroDuration()) delay = absl::ZeroDuration();
  google::rpc::RetryInfo info;
  const int64_t nanos = absl::ToInt64Nanoseconds(delay);
  info.mutable_retry_delay()->set_seconds(nanos / 1000000000);
  info.mutable_retry_delay()->set_nanos(static_cast<int32_t>(nanos % 1000000000));
  status.SetPayload(kRetryInfoTypeUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

std::vector<FieldViolation> FieldViolationsOf(const absl::Status& status) {
  std::vector<FieldViolation> out;
  auto payload = status.GetPayload(kBadRequestTypeUrl);
  if (!payload) return out;
  google::rpc::BadRequest bad_request;
  if (!bad_request.ParseFromString(std::string(*payload))) return out;
  for (const auto& fv : bad_request.field_violations()) {
    out.push_back({fv.field(), fv.description()});
  }
  return out;
}

std::string ErrorReasonOf(const absl::Status& status) {
  auto payload = status.GetPayload(kErrorInfoTypeUrl);
  if (!payload) return "";
  google::rpc::ErrorInfo info;
  if (!info.ParseFromString(std::string(*payload))) return "";
  return info.reason();
}

std::optional<absl::Duration> RetryDelayOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryInfoTypeUrl);
  if (!payload) return std::nullopt;
  google::rpc::RetryInfo info;
  if (!info.ParseFromString(std::string(*payload))) return std::nullopt;
  return absl::Seconds(info.retry_delay().seconds()) +
         absl::Nanoseconds(info.retry_delay().nanos());
}

}  // namespace admitd
