// The answer to request bytes that do not parse. gRPC's callback API answers an unparseable
// unary request UNIMPLEMENTED with no message; ParseErrorInterceptors turns that into
// INVALID_ARGUMENT naming the request type, as every other malformed request is answered.
//
//   builder.experimental().SetInterceptorCreators(ParseErrorInterceptors());
//
// Thread safety: pure functions; the interceptors keep no state shared between calls.
#ifndef ADMITD_SERVER_PARSE_ERRORS_H_
#define ADMITD_SERVER_PARSE_ERRORS_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace admitd {

// The INVALID_ARGUMENT an unparseable request of `method` ("/admitd.v1.X/Y") gets.
absl::Status UnparseableRequest(const std::string& method);

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ParseErrorInterceptors();

}  // namespace admitd

#endif  // ADMITD_SERVER_PARSE_ERRORS_H_
