// The server's transport security, from its Config: gRPC's credentials for the listening port
// (TLS with the certificate and key files, re-read by gRPC when they change; client
// certificates verified against the client CA) and the serving certificate of the metrics
// endpoint (common/serving_certificate.h). Plaintext when TLS is not configured.
//
// Thread safety: the result is immutable; its parts are safe to share.
#ifndef ADMITD_SERVER_TRANSPORT_SECURITY_H_
#define ADMITD_SERVER_TRANSPORT_SECURITY_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "absl/status/statusor.h"
#include "common/serving_certificate.h"
#include "server/config.h"

namespace admitd {

struct TransportSecurity {
  std::shared_ptr<grpc::ServerCredentials> grpc;
  std::shared_ptr<ServingCertificate> metrics;  // null: plain HTTP
};

// Reads the files once to refuse at start what would fail every handshake later:
// FAILED_PRECONDITION naming the flag and the file (missing, not PEM, key not matching the
// certificate, a CA bundle without a certificate).
absl::StatusOr<TransportSecurity> MakeTransportSecurity(const Config& config);

}  // namespace admitd

#endif  // ADMITD_SERVER_TRANSPORT_SECURITY_H_
