#include "server/parse_errors.h"

#include <google/protobuf/descriptor.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/grpc_status.h"

namespace admitd {
namespace {

// Rewrites the status of a unary call whose request did not parse. gRPC gives such a call
// UNIMPLEMENTED with an empty message before any handler of ours runs; our handlers never answer
// UNIMPLEMENTED, so that status can only mean a parse failure.
class ParseErrorInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit ParseErrorInterceptor(const char* method) : method_(method == nullptr ? "" : method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status sent = methods->GetSendStatus();
      if (sent.error_code() == grpc::StatusCode::UNIMPLEMENTED && sent.error_message().empty()) {
        methods->ModifySendStatus(ToGrpcStatus(UnparseableRequest(method_)));
      }
    }
    methods->Proceed();
  }

 private:
  std::string method_;
};

class ParseErrorInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // Streams parse their own requests (Watch answers a bad one itself).
    if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY) return nullptr;
    return new ParseErrorInterceptor(info->method());
  }
};

}  // namespace

absl::Status UnparseableRequest(const std::string& method) {
  // "/admitd.v1.QueueService/Get" names the method admitd.v1.QueueService.Get, whose input
  // type the generated descriptors know.
  std::string full_name = method.empty() || method[0] != '/' ? method : method.substr(1);
  if (const size_t slash = full_name.find('/'); slash != std::string::npos) full_name[slash] = '.';
  const google::protobuf::MethodDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full_name);
  const std::string type =
      descriptor == nullptr ? "the method's request" : descriptor->input_type()->full_name();
  return InvalidArgument(
      {{"request", absl::StrCat("the request bytes do not parse as ", type, " (", method, ")")}});
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ParseErrorInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<ParseErrorInterceptorFactory>());
  return out;
}

}  // namespace admitd
