#include "server/transport_security.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace admitd {

absl::StatusOr<TransportSecurity> MakeTransportSecurity(const Config& config) {
  TransportSecurity out;
  if (config.tls_cert_file.empty()) {
    out.grpc = grpc::InsecureServerCredentials();
    return out;
  }
  // Probes (kubelet's HTTPS probes, Prometheus without a certificate) reach the metrics port
  // without a client certificate, so only a required one is required there.
  absl::StatusOr<std::shared_ptr<ServingCertificate>> serving = ServingCertificate::Load(
      {.cert_file = config.tls_cert_file,
       .key_file = config.tls_key_file,
       .client_ca_file = config.client_ca_file,
       .require_client_certificate = config.require_client_certificate,
       .check_interval = config.tls_refresh_interval});
  if (!serving.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file): ",
                     serving.status().message()));
  }
  out.metrics = *std::move(serving);
  const auto refresh = static_cast<unsigned int>(
      std::max<int64_t>(1, absl::ToInt64Seconds(config.tls_refresh_interval)));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      config.tls_key_file, config.tls_cert_file, config.client_ca_file, refresh);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (config.client_ca_file.empty()) {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    options.watch_root_certs();
    options.set_cert_request_type(
        config.require_client_certificate
            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
            : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  out.grpc = grpc::experimental::TlsServerCredentials(options);
  return out;
}

}  // namespace admitd
