#include "clients/shim/webhook/webhook_server.h"

#include <httplib.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/serving_certificate.h"

namespace admitd::shim {
namespace {

bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  if (host->empty()) *host = "0.0.0.0";
  return absl::SimpleAtoi(address.substr(colon + 1), port) && *port >= 0 && *port <= 65535;
}

}  // namespace

class WebhookServer::Impl {
 public:
  explicit Impl(std::shared_ptr<ServingCertificate> cert)
      : certificate(std::move(cert)), server([this](SSL_CTX& ctx) {
          certificate->Install(&ctx);
          return true;
        }) {}

  std::shared_ptr<ServingCertificate> certificate;
  httplib::SSLServer server;
};

WebhookServer::WebhookServer(std::string address, std::string cert_dir,
                             std::vector<KindWebhook> webhooks, WebhookServerOptions options)
    : address_(std::move(address)),
      cert_dir_(std::move(cert_dir)),
      webhooks_(std::move(webhooks)),
      options_(std::move(options)) {}

WebhookServer::~WebhookServer() { Stop(); }

absl::Status WebhookServer::Start() {
  std::string host;
  int port = 0;
  if (!SplitHostPort(address_, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the webhook address ", address_, " is not host:port"));
  }
  absl::StatusOr<std::shared_ptr<ServingCertificate>> cert =
      ServingCertificate::Load({.cert_file = cert_dir_ + "/tls.crt",
                                .key_file = cert_dir_ + "/tls.key",
                                .check_interval = options_.cert_check_interval});
  if (!cert.ok()) return cert.status();
  auto impl = std::make_unique<Impl>(*std::move(cert));
  if (!impl->server.is_valid()) return absl::InternalError("cannot set up TLS for the webhook");
  httplib::SSLServer& server = impl->server;
  const auto seconds = [](absl::Duration d) {
    return static_cast<time_t>(absl::ToInt64Seconds(d));
  };
  const auto micros = [](absl::Duration d) {
    return static_cast<time_t>(absl::ToInt64Microseconds(d) % 1000000);
  };
  server.set_read_timeout(seconds(options_.read_timeout), micros(options_.read_timeout));
  server.set_write_timeout(seconds(options_.write_timeout), micros(options_.write_timeout));
  server.set_payload_max_length(options_.max_body_bytes);
  for (const KindWebhook& webhook : webhooks_) {
    for (const std::string& path : {webhook.mutate_path, webhook.validate_path}) {
      server.Post(path, [&webhook, path](const httplib::Request& req, httplib::Response& res) {
        WebhookReply reply = AnswerReview(webhook, path, req.body);
        res.status = reply.http_status;
        res.set_content(reply.body.dump(), "application/json");
      });
    }
  }
  if (host.find(':') != std::string::npos) server.set_address_family(AF_INET6);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server would
  // share a port already taken instead of failing.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address_, " for the webhook"));
  }
  port_ = bound;
  impl_ = std::move(impl);
  listener_ = std::thread([server = &impl_->server] { server->listen_after_bind(); });
  // Stop() only reaches a server that runs: wait for the listener to get there.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!impl_->server.is_running() && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return absl::OkStatus();
}

void WebhookServer::Stop() {
  if (impl_ == nullptr) return;
  impl_->server.stop();
  if (listener_.joinable()) listener_.join();
  impl_.reset();
}

}  // namespace admitd::shim
