#include "clients/shim/webhook/admission_review.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace admitd::shim {
namespace {

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

}  // namespace

WebhookReply AnswerReview(const KindWebhook& webhook, const std::string& path,
                          const std::string& body) {
  ReviewRequest r;
  WebhookReply reply;
  if (!ReadReview(body, webhook.kind.c_str(), &r, &reply)) return reply;
  if (!webhook.enabled) return Mutated(r, {});  // Kueue's no-op webhook: allowed, unchanged
  if (path == webhook.mutate_path) {
    const bool defaults = r.create || (r.update && webhook.default_on_update);
    return Mutated(r, defaults && webhook.default_create ? webhook.default_create(r.object)
                                                         : std::vector<nlohmann::json>());
  }
  std::vector<FieldError> errors;
  std::vector<std::string> warnings;
  std::string denial;
  if ((r.create || r.update) && webhook.validate) {
    errors = webhook.validate(r.update ? &r.old_object : nullptr, r.object, &warnings, &denial);
  }
  return Judged(r, errors, warnings, denial);
}

}  // namespace admitd::shim
