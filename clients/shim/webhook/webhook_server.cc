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

constexpr char kMutatePath[] = "/mutate-batch-v1-job";
constexpr char kValidatePath[] = "/validate-batch-v1-job";
constexpr char kMutatePodPath[] = "/mutate--v1-pod";
constexpr char kValidatePodPath[] = "/validate--v1-pod";
constexpr char kMutateRayClusterPath[] = "/mutate-ray-io-v1-raycluster";
constexpr char kValidateRayClusterPath[] = "/validate-ray-io-v1-raycluster";

// ---- AdmissionReview
// -----------------------------------------------------------------------------

WebhookReply BadRequest(const std::string& why) { return {400, {{"error", why}}}; }

nlohmann::json Review(const nlohmann::json& request_review, nlohmann::json response) {
  return {{"apiVersion", request_review["apiVersion"]},
          {"kind", "AdmissionReview"},
          {"response", std::move(response)}};
}

// The object as the webhook judges it: the request's namespace filled in when the object (a
// Job created with generateName, say) does not carry one.
nlohmann::json WithNamespace(nlohmann::json object, const nlohmann::json& request) {
  if (object.is_object() && object["metadata"].is_object() &&
      !object["metadata"].contains("namespace") && request.value("namespace", "") != "") {
    object["metadata"]["namespace"] = request["namespace"];
  }
  return object;
}

// What a webhook reads from an AdmissionReview, and the response it starts from.
struct ReviewRequest {
  nlohmann::json review;
  nlohmann::json response;  // {uid, allowed: true}
  nlohmann::json object;
  nlohmann::json old_object;
  bool create = false;
  bool update = false;
};

// Reads `body`; false with `*reply` set when it is answered at once: HTTP 400 for a body that is
// not an AdmissionReview, a denial for a CREATE or UPDATE without the `kind` object to decode.
bool ReadReview(const std::string& body, const char* kind, ReviewRequest* out,
                WebhookReply* reply) {
  nlohmann::json review = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!review.is_object()) {
    *reply = BadRequest("the body is not a JSON object");
    return false;
  }
  const std::string api_version = review.value("apiVersion", nlohmann::json()).is_string()
                                      ? review["apiVersion"].get<std::string>()
                                      : "";
  if (review.value("kind", nlohmann::json()) != "AdmissionReview" ||
      (api_version != "admission.k8s.io/v1" && api_version != "admission.k8s.io/v1beta1")) {
    *reply = BadRequest("the body is not an admission.k8s.io/v1 AdmissionReview");
    return false;
  }
  const nlohmann::json& request = review.contains("request") ? review["request"] : nlohmann::json();
  if (!request.is_object() || !request.value("uid", nlohmann::json()).is_string()) {
    *reply = BadRequest("the AdmissionReview has no request with a uid");
    return false;
  }
  out->response = {{"uid", request["uid"]}, {"allowed", true}};
  const std::string operation = request.value("operation", nlohmann::json()).is_string()
                                    ? request["operation"].get<std::string>()
                                    : "";
  out->create = operation == "CREATE";
  out->update = operation == "UPDATE";
  out->object = WithNamespace(request.value("object", nlohmann::json()), request);
  out->old_object = WithNamespace(request.value("oldObject", nlohmann::json()), request);
  out->review = std::move(review);
  if ((out->create || out->update) &&
      (!out->object.is_object() || (out->update && !out->old_object.is_object()))) {
    out->response["allowed"] = false;
    out->response["status"] = {
        {"code", 400}, {"message", absl::StrCat("the request carries no ", kind, " to decode")}};
    *reply = {200, Review(out->review, std::move(out->response))};
    return false;
  }
  return true;
}

// The answer of a mutating webhook: `ops` as a base64 JSONPatch, none when empty.
WebhookReply Mutated(ReviewRequest& r, const std::vector<nlohmann::json>& ops) {
  if (!ops.empty()) {
    r.response["patchType"] = "JSONPatch";
    r.response["patch"] = absl::Base64Escape(nlohmann::json(ops).dump());
  }
  return {200, Review(r.review, std::move(r.response))};
}

// The answer of a validating webhook: allowed, or denied with the aggregated errors.
WebhookReply Judged(ReviewRequest& r, const std::vector<FieldError>& errors,
                    const std::vector<std::string>& warnings, const std::string& denial = "") {
  if (errors.empty() && !denial.empty()) {
    r.response["allowed"] = false;
    r.response["status"] = {{"metadata", nlohmann::json::object()},
                            {"code", 403},
                            {"reason", "Forbidden"},
                            {"message", denial}};
  } else if (errors.empty()) {
    r.response["status"] = {{"metadata", nlohmann::json::object()}, {"code", 200}};
  } else {
    r.response["allowed"] = false;
    r.response["status"] = {{"metadata", nlohmann::json::object()},
                            {"code", 403},
                            {"reason", "Forbidden"},
                            {"message", AggregateErrors(errors)}};
  }
  if (!warnings.empty()) r.response["warnings"] = warnings;
  return {200, Review(r.review, std::move(r.response))};
}

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

WebhookReply AnswerJobReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const JobWebhookOptions& options) {
  ReviewRequest r;
  WebhookReply reply;
  if (!ReadReview(body, "Job", &r, &reply)) return reply;
  if (path == kMutatePath) {
    return Mutated(
        r, r.create ? DefaultJob(r.object, context, options) : std::vector<nlohmann::json>());
  }
  std::vector<FieldError> errors;
  if (r.create) errors = ValidateJobCreate(r.object, context, options);
  if (r.update) errors = ValidateJobUpdate(r.old_object, r.object, context, options);
  return Judged(r, errors, {});
}

WebhookReply AnswerPodReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const PodWebhookOptions& options) {
  ReviewRequest r;
  WebhookReply reply;
  if (!ReadReview(body, "Pod", &r, &reply)) return reply;
  if (path == kMutatePodPath) {
    return Mutated(
        r, r.create ? DefaultPod(r.object, context, options) : std::vector<nlohmann::json>());
  }
  std::vector<FieldError> errors;
  std::vector<std::string> warnings;
  if (r.create) errors = ValidatePodCreate(r.object, context, options, &warnings);
  if (r.update) errors = ValidatePodUpdate(r.old_object, r.object, context, options, &warnings);
  return Judged(r, errors, warnings);
}

WebhookReply AnswerRayClusterReview(const std::string& path, const std::string& body,
                                    JobWebhookContext& context, const JobWebhookOptions& options,
                                    bool enabled) {
  ReviewRequest r;
  WebhookReply reply;
  if (!ReadReview(body, "RayCluster", &r, &reply)) return reply;
  if (!enabled) return Mutated(r, {});  // Kueue's no-op webhook: allowed, unchanged
  if (path == kMutateRayClusterPath) {
    return Mutated(r, r.create ? DefaultRayCluster(r.object, context, options)
                               : std::vector<nlohmann::json>());
  }
  std::vector<FieldError> errors;
  std::string denial;
  if (r.create) errors = ValidateRayClusterCreate(r.object, options, &denial);
  if (r.update) errors = ValidateRayClusterUpdate(r.old_object, r.object, context, options, &denial);
  return Judged(r, errors, {}, denial);
}

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

WebhookServer::WebhookServer(std::string address, std::string cert_dir, JobWebhookContext& context,
                             WebhookServerOptions options)
    : address_(std::move(address)),
      cert_dir_(std::move(cert_dir)),
      context_(context),
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
  for (const char* path : {kMutatePath, kValidatePath}) {
    server.Post(path, [this, path](const httplib::Request& req, httplib::Response& res) {
      WebhookReply reply = AnswerJobReview(path, req.body, context_, options_.job);
      res.status = reply.http_status;
      res.set_content(reply.body.dump(), "application/json");
    });
  }
  PodWebhookOptions pod_options = options_.pod;
  pod_options.integration_enabled = options_.pods;
  for (const char* path : {kMutatePodPath, kValidatePodPath}) {
    server.Post(path,
                [this, path, pod_options](const httplib::Request& req, httplib::Response& res) {
                  WebhookReply reply = AnswerPodReview(path, req.body, context_, pod_options);
                  res.status = reply.http_status;
                  res.set_content(reply.body.dump(), "application/json");
                });
  }
  for (const char* path : {kMutateRayClusterPath, kValidateRayClusterPath}) {
    server.Post(path, [this, path](const httplib::Request& req, httplib::Response& res) {
      WebhookReply reply =
          AnswerRayClusterReview(path, req.body, context_, options_.job, options_.rayclusters);
      res.status = reply.http_status;
      res.set_content(reply.body.dump(), "application/json");
    });
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
