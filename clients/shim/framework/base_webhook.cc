#include "clients/shim/framework/base_webhook.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/webhook/webhook_json.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

bool SuspendedAt(const nlohmann::json& object, const std::vector<std::string>& path) {
  const nlohmann::json* v = &object;
  for (const std::string& key : path) v = &Field(*v, key);
  return *v == true;
}

}  // namespace

std::vector<nlohmann::json> BaseDefault(const BaseWebhookSpec& spec, const nlohmann::json& object,
                                        JobWebhookContext& context,
                                        const JobWebhookOptions& options) {
  std::vector<nlohmann::json> ops = DefaultFramework(object, context, options, spec.suspend);
  DefaultMultiKueueManagedBy(object, context, options, spec.managed_by, spec.own_controller, &ops);
  // Every pod of an elastic object starts gated until its slice is admitted.
  if (spec.elastic && spec.templates && Elastic(ObjectView(object), options)) {
    for (const TemplateAt& t : spec.templates(object)) {
      GateTemplate(object, t.pod_template, t.tokens, &ops);
    }
  }
  return ops;
}

std::vector<FieldError> BaseValidateCreate(const BaseWebhookSpec& spec,
                                           const nlohmann::json& object,
                                           const JobWebhookOptions& options) {
  std::vector<FieldError> errs = ValidateFrameworkCreate(object, options);
  if (!spec.elastic && Elastic(ObjectView(object), options)) {
    errs.push_back(ElasticNotSupported(spec.api_version, spec.kind));
  }
  if (!options.topology_aware_scheduling || !spec.templates) return errs;
  for (const TemplateAt& t : spec.templates(object)) {
    const nlohmann::json& annotations = Field(Field(t.pod_template, "metadata"), "annotations");
    std::vector<FieldError> tas =
        TasPodSetRequestErrors(t.metadata_path, annotations, options.tas_multi_layer_topology);
    errs.insert(errs.end(), tas.begin(), tas.end());
    if (!tas.empty()) continue;
    if (std::optional<std::string> size = Entry(annotations, kSliceSize);
        size && GoParseInt32(*size).value_or(0) > t.count) {
      errs.push_back(FieldError::Invalid(
          absl::StrCat(t.metadata_path, ".annotations[", kSliceSize, "]"), GoQuote(*size),
          absl::StrCat("must not be greater than pod set count ", t.count)));
    }
  }
  return errs;
}

std::vector<FieldError> BaseValidateUpdate(const BaseWebhookSpec& spec,
                                           const nlohmann::json& old_object,
                                           const nlohmann::json& new_object,
                                           JobWebhookContext& context,
                                           const JobWebhookOptions& options) {
  std::vector<FieldError> errs = BaseValidateCreate(spec, new_object, options);
  std::vector<FieldError> update = ValidateFrameworkUpdate(
      old_object, new_object, SuspendedAt(old_object, spec.suspend),
      SuspendedAt(new_object, spec.suspend), context, options);
  errs.insert(errs.end(), update.begin(), update.end());
  return errs;
}

KindWebhook BaseWebhook(BaseWebhookSpec spec, JobWebhookContext& context,
                        const JobWebhookOptions& options, bool enabled) {
  KindWebhook webhook{.kind = spec.kind,
                      .mutate_path = spec.mutate_path,
                      .validate_path = spec.validate_path,
                      .enabled = enabled};
  webhook.default_create = [&context, options, spec](const nlohmann::json& object) {
    return BaseDefault(spec, object, context, options);
  };
  webhook.validate = [&context, options, spec](const nlohmann::json* old_object,
                                               const nlohmann::json& object,
                                               std::vector<std::string>*, std::string*) {
    return old_object == nullptr
               ? BaseValidateCreate(spec, object, options)
               : BaseValidateUpdate(spec, *old_object, object, context, options);
  };
  return webhook;
}

}  // namespace admitd::shim
