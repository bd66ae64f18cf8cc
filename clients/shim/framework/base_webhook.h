// The webhook of a kind that has no rules of its own beyond the framework's (Kueue's
// BaseWebhookFactory, kueue-jobframework.md §1.3, §1.4): on CREATE the framework's defaulting
// (with the kind's suspend switch) and its managedBy for a MultiKueue manager's queue; on CREATE
// and UPDATE the framework's checks, the elastic-job annotation refused (a kind that can be
// elastic instead gets an elastic object's templates gated at creation), and each pod set's
// topology request (with its slice size within the pod set's count) checked on its template; on
// UPDATE also what may not change. JobSet and the Kubeflow jobs use it.
//
//   KindWebhook webhook = BaseWebhook(spec, context, options, enabled);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_BASE_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_BASE_WEBHOOK_H_

#include <functional>
#include <string>
#include <vector>

#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// One pod set's template as the webhook checks it.
struct TemplateAt {
  std::string metadata_path;  // where its metadata is, for the messages
  std::vector<std::string> tokens;  // where the template is, for patches (members and indexes)
  nlohmann::json pod_template;
  int64_t count = 0;  // the pod set's count (the slice size may not exceed it)
};

struct BaseWebhookSpec {
  std::string api_version, kind;
  std::string mutate_path, validate_path;  // Kueue's paths
  std::vector<std::string> suspend;        // {"spec", "suspend"}
  std::vector<std::string> managed_by;     // {"spec", "managedBy"}
  std::string own_controller;  // a managedBy value MultiKueue may take over (the kind's operator)
  // The kind can be an elastic job: the elastic-job annotation is accepted, and the templates
  // of an elastic object are gated (kueue.x-k8s.io/elastic-job) at creation, so that its pods
  // wait for their slice's admission. Otherwise the annotation is refused.
  bool elastic = false;
  // The object's pod sets' templates, in order.
  std::function<std::vector<TemplateAt>(const nlohmann::json& object)> templates;
};

std::vector<nlohmann::json> BaseDefault(const BaseWebhookSpec& spec, const nlohmann::json& object,
                                        JobWebhookContext& context,
                                        const JobWebhookOptions& options);
std::vector<FieldError> BaseValidateCreate(const BaseWebhookSpec& spec,
                                           const nlohmann::json& object,
                                           const JobWebhookOptions& options);
std::vector<FieldError> BaseValidateUpdate(const BaseWebhookSpec& spec,
                                           const nlohmann::json& old_object,
                                           const nlohmann::json& new_object,
                                           JobWebhookContext& context,
                                           const JobWebhookOptions& options);
// The three as a KindWebhook (`enabled` false: every object allowed unchanged).
KindWebhook BaseWebhook(BaseWebhookSpec spec, JobWebhookContext& context,
                        const JobWebhookOptions& options, bool enabled);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_BASE_WEBHOOK_H_
