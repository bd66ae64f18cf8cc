#include "clients/shim/framework/webhook_rules.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/kueue_keys.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

constexpr char kStopping[] = "kueue.x-k8s.io/stopping";

bool PrebuiltFromAnnotation(const ObjectView& object, const JobWebhookOptions& options) {
  const std::string annotation = object.Annotation(kPrebuiltWorkloadKey);
  return (options.workload_identifier_annotations ||
          annotation.size() > kLabelValueMaxLength) &&
         !annotation.empty();
}

// jobframework.ValidateJobOnCreate.
void CheckCommonCreate(const ObjectView& object, const JobWebhookOptions& options,
                       std::vector<FieldError>* errs) {
  CheckSubdomain(LabelPath(kQueueNameLabel), Entry(object.labels, kQueueNameLabel), errs);
  CheckPrebuiltName(object, options, errs);  // a job may use a prebuilt Workload
  CheckMaxExecTime(object.labels, errs);
  if (options.admission_gated_by) {
    CheckAdmissionGatedByFormat(object.Annotation(kAdmissionGatedBy), errs);
  }
}

}  // namespace

ObjectView::ObjectView(const nlohmann::json& object)
    : meta(Field(object, "metadata")),
      labels(Field(meta, "labels")),
      annotations(Field(meta, "annotations")),
      spec(Field(object, "spec")),
      template_annotations(Field(Field(Field(spec, "template"), "metadata"), "annotations")) {}

std::string ObjectView::Label(const std::string& k) const { return Entry(labels, k).value_or(""); }
std::string ObjectView::Annotation(const std::string& k) const {
  return Entry(annotations, k).value_or("");
}
std::string ObjectView::Namespace() const { return Entry(meta, "namespace").value_or(""); }
std::optional<int64_t> ObjectView::SpecInt(const char* key) const {
  const nlohmann::json& v = Field(spec, key);
  if (!v.is_number_integer()) return std::nullopt;
  return v.get<int64_t>();
}
bool ObjectView::IsSuspended() const { return SuspendField() && Annotation(kStopping) != "true"; }

bool Elastic(const ObjectView& object, const JobWebhookOptions& options) {
  return options.elastic_jobs && object.Annotation(kElasticJobAnnotation) == "true";
}

std::string PrebuiltPath(const ObjectView& object, const JobWebhookOptions& options) {
  return PrebuiltFromAnnotation(object, options) ? AnnotationPath(kPrebuiltWorkloadKey)
                                                 : LabelPath(kPrebuiltWorkloadKey);
}

std::string PrebuiltName(const ObjectView& object, const JobWebhookOptions& options) {
  const std::string annotation = object.Annotation(kPrebuiltWorkloadKey);
  if (options.workload_identifier_annotations) {
    return !annotation.empty() ? annotation : object.Label(kPrebuiltWorkloadKey);
  }
  if (std::string label = object.Label(kPrebuiltWorkloadKey); !label.empty()) return label;
  return annotation.size() > kLabelValueMaxLength ? annotation : "";
}

void CheckPrebuiltName(const ObjectView& object, const JobWebhookOptions& options,
                       std::vector<FieldError>* errs) {
  if (PrebuiltFromAnnotation(object, options)) {
    CheckSubdomain(AnnotationPath(kPrebuiltWorkloadKey),
                   Entry(object.annotations, kPrebuiltWorkloadKey), errs);
  } else {
    CheckSubdomain(LabelPath(kPrebuiltWorkloadKey), Entry(object.labels, kPrebuiltWorkloadKey),
                   errs);
  }
}

std::vector<nlohmann::json> DefaultFramework(const nlohmann::json& job, JobWebhookContext& context,
                                             const JobWebhookOptions& options) {
  return DefaultFramework(job, context, options, {"spec", "suspend"});
}

std::map<std::string, std::string> DefaultLabels(const nlohmann::json& object,
                                                 JobWebhookContext& context,
                                                 const JobWebhookOptions& options) {
  const ObjectView view(object);
  const std::string ns = view.Namespace();
  const bool owned = ControlledByOneOf(view.meta, options.managed_owner_kinds);
  std::map<std::string, std::string> labels;
  // 1. The namespace's `default` LocalQueue for an object without a queue.
  if (view.Label(kQueueNameLabel).empty() && !owned && context.DefaultLocalQueueExists(ns) &&
      context.NamespaceManaged(ns)) {
    labels[kQueueNameLabel] = "default";
  }
  // 2. The `default` WorkloadPriorityClass for an object without a priority class.
  if (options.workload_priority_class_defaulting && view.Label(kPriorityClassLabel).empty() &&
      !owned && context.DefaultPriorityClassExists()) {
    labels[kPriorityClassLabel] = "default";
  }
  return labels;
}

bool ShouldBeSuspended(const nlohmann::json& object,
                       const std::map<std::string, std::string>& defaults,
                       JobWebhookContext& context, const JobWebhookOptions& options) {
  const ObjectView view(object);
  if (!Field(view.meta, "deletionTimestamp").is_null()) return false;  // being deleted: as it is
  if (ControlledByOneOf(view.meta, options.managed_owner_kinds)) return false;
  const bool has_queue =
      defaults.count(kQueueNameLabel) > 0 || !view.Label(kQueueNameLabel).empty();
  return has_queue ||
         (options.manage_jobs_without_queue_name && context.NamespaceManaged(view.Namespace()));
}

std::vector<nlohmann::json> DefaultFramework(const nlohmann::json& job, JobWebhookContext& context,
                                             const JobWebhookOptions& options,
                                             const std::vector<std::string>& suspend_path) {
  const ObjectView view(job);
  const std::map<std::string, std::string> labels = DefaultLabels(job, context, options);
  std::vector<nlohmann::json> ops;
  SetEntries(job, {"metadata", "labels"}, labels, &ops);
  // 3. Suspended, to wait for admission: a Job with a queue, or every Job of a managed namespace
  // with manageJobsWithoutQueueName. A Job being deleted is left as it is.
  const nlohmann::json* suspend = &job;
  for (const std::string& key : suspend_path) suspend = &Field(*suspend, key);
  const bool suspended = *suspend == true;
  const bool stopping = suspended && view.Annotation(kStopping) == "true";
  if (!(suspended && !stopping) && ShouldBeSuspended(job, labels, context, options)) {
    if (!suspended) AddAt(job, suspend_path, true, &ops);
  }
  return ops;
}

std::vector<FieldError> ValidateFrameworkCreate(const nlohmann::json& object,
                                                const JobWebhookOptions& options) {
  std::vector<FieldError> errs;
  CheckCommonCreate(ObjectView(object), options, &errs);
  return errs;
}

std::vector<FieldError> ValidateFrameworkUpdate(const nlohmann::json& old_job,
                                                const nlohmann::json& new_job,
                                                JobWebhookContext& context,
                                                const JobWebhookOptions& options) {
  return ValidateFrameworkUpdate(old_job, new_job, ObjectView(old_job).IsSuspended(),
                                 ObjectView(new_job).IsSuspended(), context, options);
}

std::vector<FieldError> ValidateFrameworkUpdate(const nlohmann::json& old_job,
                                                const nlohmann::json& new_job,
                                                bool old_suspended, bool new_suspended,
                                                JobWebhookContext& context,
                                                const JobWebhookOptions& options) {
  const ObjectView prev(old_job), next(new_job);
  std::vector<FieldError> errs;
  const std::string queue_path = LabelPath(kQueueNameLabel);
  const std::string old_queue = prev.Label(kQueueNameLabel),
                    new_queue = next.Label(kQueueNameLabel);
  if (!new_suspended && new_queue != old_queue) {
    errs.push_back(FieldError::Invalid(queue_path, JsonQuote(new_queue), kImmutable));
  }
  if (new_queue.empty() && !old_queue.empty() &&
      context.DefaultLocalQueueExists(prev.Namespace())) {
    errs.push_back(FieldError::Invalid(
        queue_path, GoQuote(""), "queue-name must not be empty in namespace with default queue"));
  }
  if (new_suspended || Elastic(prev, options)) {
    CheckPrebuiltName(next, options, &errs);
  } else if (PrebuiltName(next, options) != PrebuiltName(prev, options)) {
    errs.push_back(FieldError::Invalid(PrebuiltPath(next, options),
                                       GoQuote(PrebuiltName(next, options)), kImmutable));
  }
  if ((!new_suspended || !old_suspended) &&
      next.Label(kMaxExecTimeLabel) != prev.Label(kMaxExecTimeLabel)) {
    errs.push_back(FieldError::Invalid(LabelPath(kMaxExecTimeLabel),
                                       GoQuote(next.Label(kMaxExecTimeLabel)), kImmutable));
  }
  CheckPriorityClassUpdate(old_job, new_job, new_suspended, &errs);
  if (Elastic(prev, options) != Elastic(next, options)) {
    errs.push_back(FieldError::Invalid(AnnotationPath(kElasticJobAnnotation),
                                       Elastic(next, options) ? "true" : "false", kImmutable));
  }
  if (options.admission_gated_by) {
    CheckAdmissionGatedByUpdate(prev.Annotation(kAdmissionGatedBy),
                                next.Annotation(kAdmissionGatedBy), &errs);
  }
  return errs;
}

void DefaultMultiKueueManagedBy(const nlohmann::json& object, JobWebhookContext& context,
                                const JobWebhookOptions& options,
                                const std::vector<std::string>& managed_by_path,
                                const std::string& own_controller,
                                std::vector<nlohmann::json>* ops) {
  const ObjectView view(object);
  if (ControlledByOneOf(view.meta, options.managed_owner_kinds)) return;
  std::string queue = view.Label(kQueueNameLabel);
  if (queue.empty() && context.DefaultLocalQueueExists(view.Namespace()) &&
      context.NamespaceManaged(view.Namespace())) {
    queue = "default";  // step 1 gave it
  }
  const nlohmann::json* managed_by = &object;
  for (const std::string& key : managed_by_path) managed_by = &Field(*managed_by, key);
  const bool defaultable = managed_by->is_null() || (managed_by->is_string() &&
                                                     managed_by->get<std::string>() == own_controller);
  if (!queue.empty() && defaultable && context.LocalQueueUsesMultiKueue(view.Namespace(), queue)) {
    AddAt(object, managed_by_path, kMultiKueueControllerName, ops);
  }
}

void CheckPriorityClassUpdate(const nlohmann::json& old_object, const nlohmann::json& new_object,
                              bool suspended, std::vector<FieldError>* errs) {
  const std::string old_class = ObjectView(old_object).Label(kPriorityClassLabel),
                    new_class = ObjectView(new_object).Label(kPriorityClassLabel);
  if (!suspended && old_class.empty() && !new_class.empty()) {
    errs->push_back(
        FieldError::Invalid(LabelPath(kPriorityClassLabel), GoQuote(new_class),
                            "WorkloadPriorityClass cannot be added to a non-suspended workload"));
  } else if (new_class.empty() && !old_class.empty()) {
    errs->push_back(FieldError::Invalid(LabelPath(kPriorityClassLabel), GoQuote(new_class),
                                        "WorkloadPriorityClass cannot be removed from a workload"));
  }
}

FieldError ElasticNotSupported(const std::string& api_version, const std::string& kind) {
  // Go's GroupVersionKind prints a core kind with an empty group: "/v1, Kind=Pod".
  const std::string gv = api_version.find('/') == std::string::npos ? "/" + api_version
                                                                    : api_version;
  return FieldError::Forbidden(AnnotationPath(kElasticJobAnnotation),
                               absl::StrCat("elastic job is not supported for \"", gv,
                                            ", Kind=", kind, "\""));
}

}  // namespace admitd::shim
