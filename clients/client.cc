#include "clients/client.h"

#include "absl/strings/str_cat.h"
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
  return out;
}

}  // namespace admitd::clients
