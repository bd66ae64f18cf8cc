#include "server/grpc_status.h"

#include <string>

#include "google/rpc/status.pb.h"

namespace admitd {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  google::rpc::Status details;
  details.set_code(static_cast<int>(status.code()));
  details.set_message(std::string(status.message()));
  status.ForEachPayload([&details](absl::string_view type_url, const absl::Cord& payload) {
    auto* any = details.add_details();
    any->set_type_url(std::string(type_url));
    any->set_value(std::string(payload));
  });
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()),
                      details.details_size() > 0 ? details.SerializeAsString() : std::string());
}

grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* rpc, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace admitd
