#include "clients/client.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace admitd::clients {
namespace {

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

}  // namespace

Client::Client(const std::string& target)
    : Client(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())) {}

Client::Client(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      queues_(v1::QueueService::NewStub(channel_)),
      admission_(v1::AdmissionService::NewStub(channel_)),
      pods_(v1::PodService::NewStub(channel_)) {}

std::string DescribeError(const grpc::Status& status) {
  std::string out = absl::StrCat(CodeName(status.error_code()), ": ", status.error_message());
  google::rpc::Status details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return out;
  }
  for (const auto& any : details.details()) {
    google::rpc::BadRequest bad;
    google::rpc::ErrorInfo info;
    if (any.UnpackTo(&bad)) {
      for (const auto& v : bad.field_violations()) {
        absl::StrAppend(&out, "\n  - ", v.field(), ": ", v.description());
      }
    } else if (any.UnpackTo(&info)) {
      absl::StrAppend(&out, "\n  reason: ", info.reason());
    }
  }
  if (std::optional<absl::Duration> delay = RetryDelayOf(status)) {
    absl::StrAppend(&out, "\n  retry after: ", absl::FormatDuration(*delay));
  }
  return out;
}

std::optional<absl::Duration> RetryDelayOf(const grpc::Status& status) {
  if (status.ok() || status.error_details().empty()) return std::nullopt;
  google::rpc::Status details;
  if (!details.ParseFromString(status.error_details())) return std::nullopt;
  for (const auto& any : details.details()) {
    google::rpc::RetryInfo info;
    if (any.UnpackTo(&info)) {
      return absl::Seconds(info.retry_delay().seconds()) +
             absl::Nanoseconds(info.retry_delay().nanos());
    }
  }
  return std::nullopt;
}

bool RefusedWithRetry(const grpc::Status& status) {
  return (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
          status.error_code() == grpc::StatusCode::UNAVAILABLE) &&
         RetryDelayOf(status).has_value();
}

absl::Duration WithJitter(absl::Duration delay) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return delay + delay * std::uniform_real_distribution<double>(0, 0.5)(random);
}

grpc::Status CallWithRetry(const std::function<grpc::Status(grpc::ClientContext*)>& call,
                           const RetryOptions& options) {
  const absl::Time deadline = absl::Now() + options.timeout;
  absl::Duration backoff = options.initial_backoff;
  grpc::Status status;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    if (options.prepare) options.prepare(&ctx);
    status = call(&ctx);
    if (!RefusedWithRetry(status) || attempt >= options.max_attempts) return status;
    const absl::Duration wait = WithJitter(std::max(*RetryDelayOf(status), backoff));
    if (absl::Now() + wait >= deadline) return status;
    absl::SleepFor(wait);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace admitd::clients
