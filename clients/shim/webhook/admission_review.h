// AdmissionReview v1 (Kubernetes §6.10) for any kind: reading the API server's request, and
// answering it with a kind's rules, Kueue's way (job framework §1.3, §1.4): a mutating webhook
// answers its CREATE defaulting as a base64 JSONPatch; a validating one allows, or denies with
// {code: 403, reason: Forbidden, message: <aggregated field errors>}, with warnings. A body that is
// not an AdmissionReview is answered HTTP 400; a CREATE or UPDATE without the object to decode is
// denied with code 400.
//
//   KindWebhook job = JobWebhook(context, options);  // integrations/job/job_webhook.h
//   WebhookReply reply = AnswerReview(job, "/validate-batch-v1-job", body);
//
// Thread safety: AnswerReview is pure; the rules are called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_ADMISSION_REVIEW_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_ADMISSION_REVIEW_H_

#include <functional>
#include <string>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// What one AdmissionReview POST is answered with.
struct WebhookReply {
  int http_status = 200;
  nlohmann::json body;  // an AdmissionReview, or {"error": ...} with a 400
};

// One kind's webhook: where the API server calls it and the kind's rules.
struct KindWebhook {
  std::string kind;           // "Job": named when a request carries no object to decode
  std::string mutate_path;    // "/mutate-batch-v1-job" (Kueue's paths)
  std::string validate_path;  // "/validate-batch-v1-job"
  // Off: every object allowed unchanged (Kueue's no-op webhook for a framework not enabled).
  bool enabled = true;
  // The CREATE defaulting, as JSON Patch operations.
  std::function<std::vector<nlohmann::json>(const nlohmann::json& object)> default_create;
  // Whether the defaulting runs on UPDATE too (Kueue's Deployment and StatefulSet webhooks).
  bool default_on_update = false;
  // CREATE (`old_object` null) and UPDATE: the field errors; `warnings` to return with the
  // answer; `denial`, a message to deny with when there is no field error.
  std::function<std::vector<FieldError>(const nlohmann::json* old_object,
                                        const nlohmann::json& object,
                                        std::vector<std::string>* warnings, std::string* denial)>
      validate;
};

// `path` is the webhook's mutate_path or validate_path; `body` the request's body.
WebhookReply AnswerReview(const KindWebhook& webhook, const std::string& path,
                          const std::string& body);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_ADMISSION_REVIEW_H_
