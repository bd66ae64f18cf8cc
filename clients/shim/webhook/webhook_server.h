// The shim's admission webhook server: HTTPS (cpp-httplib over OpenSSL) answering the API
// server's AdmissionReview v1 calls for batch/v1 Jobs and v1 Pods the way Kueue's webhooks do
// (job framework §1.3, §1.4, Job §2.1, Pods §3.1 to §3.3; Kubernetes §6.10):
//
//   POST /mutate-batch-v1-job    CREATE: the defaulting of DefaultJob as a base64 JSONPatch
//   POST /validate-batch-v1-job  CREATE, UPDATE: allowed, or allowed:false with status
//                                {code: 403, reason: Forbidden, message: <aggregated errors>}
//   POST /mutate--v1-pod         CREATE: the mutation of DefaultPod, likewise
//   POST /validate--v1-pod       CREATE, UPDATE: ValidatePodCreate/Update, likewise, with
//                                Kueue's admission warnings in `warnings`
//   POST /mutate-ray-io-v1-raycluster    CREATE: DefaultRayCluster, likewise
//   POST /validate-ray-io-v1-raycluster  CREATE, UPDATE: ValidateRayClusterCreate/Update
//
// With the pod integration off (WebhookServerOptions::pods, the default) the pod paths allow
// every pod unchanged, as Kueue's no-op webhook does; the RayCluster paths likewise with the
// ray.io/raycluster integration off (WebhookServerOptions::rayclusters).
//
// A body that is not an AdmissionReview is answered HTTP 400. The serving certificate and key are
// read from `<cert_dir>/tls.crt` and `<cert_dir>/tls.key`, and read again when those files change
// (checked at most once per `cert_check_interval`, at a TLS handshake), so a rotated certificate
// (a Secret volume updated in place, cert-manager) is served without a restart; a pair that does
// not load (half written, key not matching) leaves the previous one in use.
//
//   WebhookServer server("0.0.0.0:9443", "/tmp/k8s-webhook-server/serving-certs", context, {});
//   ADMITD_RETURN_IF_ERROR(server.Start());
//   ...
//   server.Stop();
//
// Thread safety: Start and Stop from one thread; requests are served on a pool of threads, each
// calling the JobWebhookContext (which must therefore be thread-safe).
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_SERVER_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "clients/shim/integrations/job/job_webhook.h"
#include "clients/shim/integrations/pod/pod_webhook.h"
#include "clients/shim/integrations/raycluster/raycluster_webhook.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct WebhookServerOptions {
  JobWebhookOptions job;
  // Kueue's `pod` framework is enabled; it sets `pod.integration_enabled`.
  bool pods = false;
  PodWebhookOptions pod;
  // Kueue's `ray.io/raycluster` framework is enabled; RayClusters are judged with `job`'s
  // options.
  bool rayclusters = false;
  // The certificate files' change times are looked at no more often than this.
  absl::Duration cert_check_interval = absl::Seconds(5);
  // Limits on one request (the API server's calls are small and quick).
  absl::Duration read_timeout = absl::Seconds(10);
  absl::Duration write_timeout = absl::Seconds(10);
  size_t max_body_bytes = 8 << 20;
};

// What one AdmissionReview POST is answered with (the pure part of the server, for tests).
struct WebhookReply {
  int http_status = 200;
  nlohmann::json body;  // an AdmissionReview, or {"error": ...} with a 400
};
// `path` is /mutate-batch-v1-job or /validate-batch-v1-job; `body` the request's body.
WebhookReply AnswerJobReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const JobWebhookOptions& options);
// `path` is /mutate--v1-pod or /validate--v1-pod.
WebhookReply AnswerPodReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const PodWebhookOptions& options);
// `path` is /mutate-ray-io-v1-raycluster or /validate-ray-io-v1-raycluster; `enabled` false
// allows every cluster unchanged.
WebhookReply AnswerRayClusterReview(const std::string& path, const std::string& body,
                                    JobWebhookContext& context, const JobWebhookOptions& options,
                                    bool enabled);

class WebhookServer {
 public:
  // `address` is "host:port" ("[v6addr]:port" for IPv6; port 0 picks a free one).
  WebhookServer(std::string address, std::string cert_dir, JobWebhookContext& context,
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
  JobWebhookContext& context_;
  const WebhookServerOptions options_;
  std::unique_ptr<Impl> impl_;
  std::thread listener_;
  int port_ = 0;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_SERVER_H_
