// The shim's admission webhook server: HTTPS (cpp-httplib over OpenSSL) answering the API
// server's AdmissionReview v1 calls (Kubernetes §6.10) on each KindWebhook's mutate and validate
// paths with its rules (admission_review.h). Each integration brings its webhook (Kueue's paths:
// /mutate-batch-v1-job, /validate--v1-pod, /mutate-ray-io-v1-raycluster, ...); the shim passes
// those of the integrations it was built with, enabled or not.
//
// A body that is not an AdmissionReview is answered HTTP 400. The serving certificate and key are
// read from `<cert_dir>/tls.crt` and `<cert_dir>/tls.key`, and read again when those files change
// (checked at most once per `cert_check_interval`, at a TLS handshake), so a rotated certificate
// (a Secret volume updated in place, cert-manager) is served without a restart; a pair that does
// not load (half written, key not matching) leaves the previous one in use.
//
//   WebhookServer server("0.0.0.0:9443", "/tmp/k8s-webhook-server/serving-certs",
//                        {JobWebhook(context, {})}, {});
//   ADMITD_RETURN_IF_ERROR(server.Start());
//   ...
//   server.Stop();
//
// Thread safety: Start and Stop from one thread; requests are served on a pool of threads, each
// calling the webhooks' rules (which must therefore be thread-safe).
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_SERVER_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_SERVER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct WebhookServerOptions {
  // The certificate files' change times are looked at no more often than this.
  absl::Duration cert_check_interval = absl::Seconds(5);
  // Limits on one request (the API server's calls are small and quick).
  absl::Duration read_timeout = absl::Seconds(10);
  absl::Duration write_timeout = absl::Seconds(10);
  size_t max_body_bytes = 8 << 20;
};

class WebhookServer {
 public:
  // `address` is "host:port" ("[v6addr]:port" for IPv6; port 0 picks a free one).
  WebhookServer(std::string address, std::string cert_dir, std::vector<KindWebhook> webhooks,
                WebhookServerOptions options = {});
  ~WebhookServer();  // Stop()
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  // Loads the certificate, binds and starts serving on a background thread. FAILED_PRECONDITION
  // when the certificate or key cannot be read or do not match, INVALID_ARGUMENT for an address
  // that is not host:port, UNAVAILABLE when the address cannot be bound.
  absl::Status Start();
  // Stops accepting and waits for the serving thread. Idempotent.
  void Stop();
  // The bound port, after a successful Start.
  int port() const { return port_; }

 private:
  class Impl;

  const std::string address_;
  const std::string cert_dir_;
  const std::vector<KindWebhook> webhooks_;
  const WebhookServerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::thread listener_;
  int port_ = 0;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_SERVER_H_
