// A Kubernetes API client for the cluster shim: JSON requests over libcurl (TLS with a CA file,
// bearer tokens), Kubernetes' error Status mapped to absl::Status, and watch streams read line by
// line as they arrive.
//
//   KubeClient kube(*KubeConfig::FromKubeconfig("/path/kubeconfig"));
//   absl::StatusOr<nlohmann::json> pods = kube.Get("/api/v1/namespaces/default/pods");
//   kube.Watch("/api/v1/pods", rv, 30, [](const WatchEvent& e) { ...; return true; });
//
// Errors: the HTTP code of a Kubernetes Status becomes NOT_FOUND (404), ALREADY_EXISTS (409
// AlreadyExists), ABORTED (409 Conflict: a stale resourceVersion), OUT_OF_RANGE (410 Expired),
// INVALID_ARGUMENT (400, 422), PERMISSION_DENIED (403), UNAUTHENTICATED (401), UNAVAILABLE
// (transport errors, 5xx); the message is the Status' message.
//
// Thread safety: a KubeClient may be used from several threads (each call has its own handle).
#ifndef ADMITD_CLIENTS_SHIM_KUBE_KUBE_CLIENT_H_
#define ADMITD_CLIENTS_SHIM_KUBE_KUBE_CLIENT_H_

#include <array>
#include <atomic>
#include <memory>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/shim/framework/interfaces.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct KubeConfig {
  std::string server;      // https://host:port or http://host:port
  std::string ca_file;     // PEM bundle to verify the server with; empty: the system's
  std::string token;       // bearer token; empty: none
  std::string token_file;  // re-read on every request when set (rotated service-account tokens)
  std::string ca_data;     // PEM (a kubeconfig's certificate-authority-data, decoded)
  // A client certificate and key: files, or PEM (client-certificate-data, client-key-data).
  std::string client_cert_file, client_key_file, client_cert_data, client_key_data;
  bool insecure_skip_tls_verify = false;

  // The current context of a kubeconfig file: the cluster's server, certificate-authority(-data)
  // and insecure-skip-tls-verify; the user's token, tokenFile, client-certificate(-data) and
  // client-key(-data). INVALID_ARGUMENT for what it cannot use (an exec plugin, say).
  static absl::StatusOr<KubeConfig> FromKubeconfig(const std::string& path);
  // Inside a pod: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the mounted
  // service-account token (re-read as it rotates) and CA. FAILED_PRECONDITION outside a pod.
  static absl::StatusOr<KubeConfig> InCluster(
      const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");
};

// One event of a watch stream.
struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK (ERROR becomes the Watch's status)
  nlohmann::json object;
};

class KubeClient : public KubeApi {
 public:
  explicit KubeClient(KubeConfig config);

  // Requests made so far, by verb (GET, POST, PUT, PATCH, DELETE; a watch is a GET) and outcome
  // ("2xx", "3xx", "4xx", "5xx", or "error" when no answer came), for the metrics. Copies of a
  // client share the counts.
  static constexpr const char* kVerbs[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  static constexpr const char* kOutcomes[] = {"2xx", "3xx", "4xx", "5xx", "error"};
  int64_t requests(int verb, int outcome) const {
    return counts_->at(verb * 5 + outcome).load(std::memory_order_relaxed);
  }

  absl::StatusOr<nlohmann::json> Get(const std::string& path) const override;
  absl::StatusOr<nlohmann::json> Create(const std::string& path,
                                        const nlohmann::json& body) const override;
  // PUT: ABORTED when body's metadata.resourceVersion is stale.
  absl::StatusOr<nlohmann::json> Update(const std::string& path,
                                        const nlohmann::json& body) const override;
  // `content_type`: application/merge-patch+json, application/json-patch+json or
  // application/strategic-merge-patch+json.
  absl::StatusOr<nlohmann::json> Patch(const std::string& path, const nlohmann::json& body,
                                       const std::string& content_type =
                                           "application/merge-patch+json") const override;
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) const override;
  // DELETE only while the object's uid is `uid`: ABORTED (409) when the name now belongs to
  // another object. `propagation`: DeleteOptions.propagationPolicy (Background, Foreground,
  // Orphan), or the resource's default when empty.
  absl::StatusOr<nlohmann::json> DeleteUid(const std::string& path, const std::string& uid,
                                           const std::string& propagation = "") const override;

  // Watches `path` (a collection) from `resource_version` with bookmarks, for at most
  // `timeout_seconds`, calling `on_event` for each event until it returns false. OK when the
  // server ended the stream (re-watch from the last version seen); OUT_OF_RANGE when the version
  // is too old (list again); another error otherwise. Setting `*cancel` ends the watch within
  // about a second (OK), even while no event arrives.
  absl::Status Watch(const std::string& path, const std::string& resource_version,
                     int timeout_seconds, const std::function<bool(const WatchEvent&)>& on_event,
                     const std::atomic<bool>* cancel = nullptr) const;

 private:
  absl::StatusOr<nlohmann::json> Request(const std::string& method, const std::string& path,
                                         const std::string& body,
                                         const std::string& content_type) const;
  std::string Token() const;
  void SetTls(void* curl) const;  // the CA, client certificate and verification options

  // Counts a request's outcome: an HTTP status, or 0 when none came.
  void Count(const std::string& method, long http_code) const;

  KubeConfig config_;
  std::shared_ptr<std::array<std::atomic<int64_t>, 25>> counts_ =
      std::make_shared<std::array<std::atomic<int64_t>, 25>>();
};

// The absl::Status for an HTTP answer: `code` and, when it is one, the Kubernetes Status in `body`.
absl::Status StatusFromHttp(long code, const std::string& body);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_KUBE_CLIENT_H_
