#include "clients/shim/framework/serving_webhook.h"

#include <map>
#include <optional>
#include <utility>

#include "clients/shim/framework/serving_job.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/webhook/webhook_json.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

// Another framework's pods' parent annotation on the template (a LeaderWorkerSet's StatefulSet).
bool OtherParent(const ServingWebhookSpec& spec, const nlohmann::json& object) {
  if (!spec.yield_to_other_parent) return false;
  const std::optional<std::string> parent = Entry(
      Field(Field(Field(Field(object, "spec"), "template"), "metadata"), "annotations"),
      kPodSuspendingParentAnnotation);
  return parent && *parent != spec.framework;
}

int64_t ReadyReplicas(const nlohmann::json& object) {
  return IntOr(Field(Field(object, "status"), "readyReplicas"), 0);
}

}  // namespace

std::vector<nlohmann::json> ServingDefault(const ServingWebhookSpec& spec,
                                           const nlohmann::json& object,
                                           JobWebhookContext& context,
                                           const JobWebhookOptions& options) {
  std::vector<nlohmann::json> ops;
  if (OtherParent(spec, object)) return ops;
  const std::map<std::string, std::string> defaults = DefaultLabels(object, context, options);
  SetEntries(object, {"metadata", "labels"}, defaults, &ops);
  if (!ShouldBeSuspended(object, defaults, context, options)) return ops;
  if (spec.elastic && Elastic(ObjectView(object), options)) {
    // One Workload for the object: its pods wait gated for their slice, in its one pod set.
    const nlohmann::json& pod_template = Field(Field(object, "spec"), "template");
    GateTemplate(object, pod_template, {"spec", "template"}, &ops);
    SetEntries(object, {"spec", "template", "metadata", "labels"},
               {{"kueue.x-k8s.io/podset", kServingPodSet}}, &ops);
    return ops;
  }
  SetEntries(object, {"spec", "template", "metadata", "annotations"},
             {{kPodSuspendingParentAnnotation, spec.framework}}, &ops);
  if (spec.label_template) {
    const ObjectView view(object);
    std::map<std::string, std::string> labels = {{kManagedLabel, "true"}};
    for (const char* key : {kQueueNameLabel, kPriorityClassLabel}) {
      auto d = defaults.find(key);
      const std::string value = d != defaults.end() ? d->second : view.Label(key);
      if (!value.empty()) labels[key] = value;
    }
    SetEntries(object, {"spec", "template", "metadata", "labels"}, labels, &ops);
  }
  return ops;
}

std::vector<FieldError> ServingValidate(const ServingWebhookSpec& spec,
                                        const nlohmann::json* old_object,
                                        const nlohmann::json& object, JobWebhookContext& context,
                                        const JobWebhookOptions& options) {
  std::vector<FieldError> errs;
  if (OtherParent(spec, object)) return errs;
  const ObjectView view(object);
  CheckSubdomain(LabelPath(kQueueNameLabel), Entry(view.labels, kQueueNameLabel), &errs);
  if (!spec.elastic && Elastic(view, options)) {
    errs.push_back(ElasticNotSupported(spec.api_version, spec.kind));
  }
  if (old_object == nullptr) {
    if (options.admission_gated_by) {
      CheckAdmissionGatedByFormat(view.Annotation(kAdmissionGatedBy), &errs);
    }
    return errs;
  }
  const ObjectView prev(*old_object);
  if (spec.elastic && Elastic(prev, options) != Elastic(view, options)) {
    errs.push_back(FieldError::Invalid(AnnotationPath(kElasticJobAnnotation),
                                       Elastic(view, options) ? "true" : "false", kImmutable));
  }
  // Suspended: none of its pods is ready.
  const bool suspended = ReadyReplicas(*old_object) == 0;
  const std::string old_queue = prev.Label(kQueueNameLabel), new_queue = view.Label(kQueueNameLabel);
  if ((!suspended || new_queue.empty()) && new_queue != old_queue) {
    errs.push_back(FieldError::Invalid(LabelPath(kQueueNameLabel), JsonQuote(new_queue), kImmutable));
  }
  CheckPriorityClassUpdate(*old_object, object, suspended, &errs);
  if (options.admission_gated_by) {
    CheckAdmissionGatedByUpdate(prev.Annotation(kAdmissionGatedBy),
                                view.Annotation(kAdmissionGatedBy), &errs);
  }
  if (spec.check_managed_update &&
      ShouldBeSuspended(object, DefaultLabels(object, context, options), context, options)) {
    spec.check_managed_update(*old_object, object, context, &errs);
  }
  return errs;
}

KindWebhook ServingWebhook(ServingWebhookSpec spec, JobWebhookContext& context,
                           const JobWebhookOptions& options, bool enabled) {
  KindWebhook webhook{.kind = spec.kind,
                      .mutate_path = spec.mutate_path,
                      .validate_path = spec.validate_path,
                      .enabled = enabled,
                      .default_on_update = true};
  webhook.default_create = [&context, options, spec](const nlohmann::json& object) {
    return ServingDefault(spec, object, context, options);
  };
  webhook.validate = [&context, options, spec](const nlohmann::json* old_object,
                                               const nlohmann::json& object,
                                               std::vector<std::string>*, std::string*) {
    return ServingValidate(spec, old_object, object, context, options);
  };
  return webhook;
}

}  // namespace admitd::shim
