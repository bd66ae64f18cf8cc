#include "clients/admitctl_commands.h"

#include <cstdio>

#include "absl/strings/match.h"
#include "common/connection.h"
#include "google/protobuf/util/json_util.h"

namespace admitd::clients {

std::optional<tracing::SpanContext>& CommandTrace() {
  static std::optional<tracing::SpanContext> trace;
  return trace;
}

void AddTrace(grpc::ClientContext* ctx) {
  if (CommandTrace()) ctx->AddMetadata("traceparent", tracing::FormatTraceparent(*CommandTrace()));
}

int Usage(std::string problem) {
  constexpr absl::string_view kSeeHelp = " (see --help)";  // said on the next line
  if (absl::EndsWith(problem, kSeeHelp)) problem.resize(problem.size() - kSeeHelp.size());
  std::fprintf(stderr, "admitctl: %s\nSee 'admitctl --help' for usage.\n", problem.c_str());
  return 2;
}

int Fail(const grpc::Status& status) {
  std::fprintf(stderr, "admitctl: %s\n", DescribeError(status).c_str());
  return 1;
}

grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& call,
                  absl::Duration timeout) {
  RetryOptions retry;
  retry.timeout = timeout;
  retry.prepare = AddTrace;
  return CallWithRetry(call, retry);
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

}  // namespace admitd::clients
