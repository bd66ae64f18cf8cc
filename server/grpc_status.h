// Conversion of absl::Status into grpc::Status. The code maps 1:1; payloads set by
// common/status.h (google.rpc.BadRequest, google.rpc.ErrorInfo) become the details of a
// google.rpc.Status carried in the `grpc-status-details-bin` trailer, so grpcurl and every
// gRPC client see the field violations and reasons. Also the one way the services end a unary
// call with an error.
#ifndef ADMITD_SERVER_GRPC_STATUS_H_
#define ADMITD_SERVER_GRPC_STATUS_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace admitd {

grpc::Status ToGrpcStatus(const absl::Status& status);

// Finishes the unary call `rpc` at once with `status` (converted as above) and returns the
// reactor a callback service method returns.
grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* rpc, const absl::Status& status);

}  // namespace admitd

#endif  // ADMITD_SERVER_GRPC_STATUS_H_
