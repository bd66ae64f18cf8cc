// Conversion of absl::Status into grpc::Status. The code maps 1:1; payloads set by
// common/status.h (google.rpc.BadRequest, google.rpc.ErrorInfo) become the details of a
// google.rpc.Status carried in the `grpc-status-details-bin` trailer, so grpcurl and every
// gRPC client see the field violations and reasons.
#ifndef ADMITD_SERVER_GRPC_STATUS_H_
#define ADMITD_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace admitd {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace admitd

#endif  // ADMITD_SERVER_GRPC_STATUS_H_
