#include "clients/shim/integrations/job/job_webhook.h"

#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

constexpr char kJobControllerName[] = "kubernetes.io/job-controller";
constexpr char kMinParallelism[] = "kueue.x-k8s.io/job-min-parallelism";
constexpr char kCompletionsEqualParallelism[] = "kueue.x-k8s.io/job-completions-equal-parallelism";
constexpr char kTemplateAnnotations[] = "spec.template.metadata.annotations";

// A Job's view: the framework's, and its pod count.
struct JobView : ObjectView {
  using ObjectView::ObjectView;
  int32_t Parallelism() const { return static_cast<int32_t>(SpecInt("parallelism").value_or(1)); }
  // min(parallelism, completions): the pod set's count.
  int32_t PodsCount() const {
    int32_t count = Parallelism();
    if (auto c = SpecInt("completions"); c && static_cast<int32_t>(*c) < count) {
      count = static_cast<int32_t>(*c);
    }
    return count;
  }
};

void CheckPartialAdmission(const JobView& job, const JobWebhookOptions& options,
                           std::vector<FieldError>* errs) {
  std::optional<std::string> value = Entry(job.annotations, kMinParallelism);
  if (!value) return;
  const std::string path = AnnotationPath(kMinParallelism);
  std::string error;
  std::optional<int64_t> v = GoAtoi(*value, &error);
  if (!v) {
    errs->push_back(FieldError::Invalid(path, GoQuote(*value), error));
  } else if (static_cast<int32_t>(*v) >= job.PodsCount() || *v <= 0) {
    errs->push_back(FieldError::Invalid(
        path, absl::StrCat(*v), absl::StrCat("should be between 0 and ", job.PodsCount() - 1)));
  }
  if (Elastic(job, options)) {
    errs->push_back(FieldError::Invalid(
        path, GoQuote(*value), "partial admission and elastic job cannot be used together"));
  }
}

void CheckCompletionsEqualParallelism(const JobView& job, std::vector<FieldError>* errs) {
  std::optional<std::string> value = Entry(job.annotations, kCompletionsEqualParallelism);
  if (!value) return;
  const std::string path = AnnotationPath(kCompletionsEqualParallelism);
  std::string error;
  std::optional<bool> enabled = GoParseBool(*value, &error);
  if (!enabled) errs->push_back(FieldError::Invalid(path, GoQuote(*value), error));
  if (!enabled.value_or(false)) return;
  const std::optional<std::string> mode = Entry(job.spec, "completionMode");
  if (!mode || *mode == "NonIndexed") {
    errs->push_back(
        FieldError::Invalid(path, GoQuote(*value), "should not be enabled for NonIndexed jobs"));
  }
  const std::optional<int64_t> completions = job.SpecInt("completions");
  if (job.Parallelism() != static_cast<int32_t>(completions.value_or(1))) {
    errs->push_back(FieldError::Invalid(
        "spec.completions", completions ? absl::StrCat(static_cast<int32_t>(*completions)) : "null",
        absl::StrCat("should be equal to parallelism when ", kCompletionsEqualParallelism,
                     " annotation is true")));
  }
}

// A layer of the multi-layer slice topology annotation, as Go decodes it (null: the zero value).
int32_t LayerSize(const nlohmann::json& layer) {
  const nlohmann::json& size = Field(layer, "size");
  return size.is_number_integer() ? static_cast<int32_t>(size.get<int64_t>()) : 0;
}

void CheckTopologyRequest(const JobView& job, const JobWebhookOptions& options,
                          std::vector<FieldError>* errs) {
  if (!options.topology_aware_scheduling) return;
  if (std::vector<FieldError> tas = TasPodSetRequestErrors(
          "spec.template.metadata", job.template_annotations, options.tas_multi_layer_topology);
      !tas.empty()) {
    errs->insert(errs->end(), tas.begin(), tas.end());
    return;
  }
  const nlohmann::json& a = job.template_annotations;
  if (Elastic(job, options)) {
    // Kueue names these paths with Child(), so they print dotted rather than subscripted.
    if (Entry(a, kRequiredTopology)) {
      errs->push_back(
          FieldError::Forbidden(absl::StrCat(kTemplateAnnotations, ".", kRequiredTopology),
                                "required topology is not supported with elastic jobs"));
      return;
    }
    if (Entry(a, kPreferredTopology)) {
      errs->push_back(
          FieldError::Forbidden(absl::StrCat(kTemplateAnnotations, ".", kPreferredTopology),
                                "preferred topology is not supported with elastic jobs"));
      return;
    }
  }
  const int32_t count = job.PodsCount();
  const std::optional<std::string> s = Entry(a, kSliceSize);
  if (s && GoParseInt32(*s).value_or(0) > count) {
    errs->push_back(
        FieldError::Invalid(absl::StrCat(kTemplateAnnotations, "[", kSliceSize, "]"), GoQuote(*s),
                            absl::StrCat("must not be greater than pod set count ", count)));
  }
  if (std::optional<std::string> text = Entry(a, kSliceConstraints)) {
    const nlohmann::json layers = nlohmann::json::parse(*text, nullptr, false);
    if (layers.is_array() && !layers.empty() && layers[0].is_object()) {
      const int32_t first = LayerSize(layers[0]);
      if (first > count) {
        errs->push_back(FieldError::Invalid(
            absl::StrCat(kTemplateAnnotations, "[", kSliceConstraints, "]"), absl::StrCat(first),
            absl::StrCat("must not be greater than pod set count ", count)));
      }
    }
  }
}

}  // namespace

// ---- Public functions
// ----------------------------------------------------------------------------

std::vector<nlohmann::json> DefaultJob(const nlohmann::json& job, JobWebhookContext& context,
                                       const JobWebhookOptions& options) {
  const JobView view(job);
  std::vector<nlohmann::json> ops = DefaultFramework(job, context, options);
  // 4. A Job for a MultiKueue manager's queue is managed by MultiKueue, unless another
  // controller than the Job controller already manages it.
  DefaultMultiKueueManagedBy(job, context, options, {"spec", "managedBy"}, kJobControllerName,
                             &ops);
  // 5. Every pod of an elastic Job starts gated until its slice is admitted.
  if (Elastic(view, options)) {
    const std::vector<std::string> gates_path = {"spec", "template", "spec", "schedulingGates"};
    const nlohmann::json& gates =
        Field(Field(Field(view.spec, "template"), "spec"), "schedulingGates");
    const nlohmann::json gate = {{"name", kElasticJobAnnotation}};
    if (!ListHas(gates, kElasticJobAnnotation, "name")) AppendToList(job, gates_path, {gate}, &ops);
  }
  return ops;
}

std::vector<FieldError> ValidateJobCreate(const nlohmann::json& job, JobWebhookContext& context,
                                          const JobWebhookOptions& options) {
  const JobView view(job);
  std::vector<FieldError> errs = ValidateFrameworkCreate(job, options);
  CheckPartialAdmission(view, options, &errs);
  CheckCompletionsEqualParallelism(view, &errs);
  CheckTopologyRequest(view, options, &errs);
  return errs;
}

std::vector<FieldError> ValidateJobUpdate(const nlohmann::json& old_job,
                                          const nlohmann::json& new_job, JobWebhookContext& context,
                                          const JobWebhookOptions& options) {
  const JobView prev(old_job), next(new_job);
  std::vector<FieldError> errs = ValidateFrameworkCreate(new_job, options);
  if (next.Annotation(kMinParallelism) != prev.Annotation(kMinParallelism)) {
    CheckPartialAdmission(next, options, &errs);
  }
  CheckCompletionsEqualParallelism(next, &errs);

  std::vector<FieldError> framework = ValidateFrameworkUpdate(old_job, new_job, context, options);
  errs.insert(errs.end(), framework.begin(), framework.end());

  // The Job webhook's own update rules.
  if (Entry(prev.annotations, kMinParallelism) && !prev.SuspendField() &&
      prev.Parallelism() != next.Parallelism()) {
    errs.push_back(FieldError::Forbidden(
        "spec.parallelism",
        "cannot change when partial admission is enabled and the job is not suspended"));
  }
  const auto sync = [](const JobView& j) {
    std::string ignored;
    return GoParseBool(j.Annotation(kCompletionsEqualParallelism), &ignored).value_or(false);
  };
  if (prev.IsSuspended() == next.IsSuspended() && !next.IsSuspended() && sync(prev) != sync(next)) {
    errs.push_back(FieldError::Forbidden(AnnotationPath(kCompletionsEqualParallelism),
                                         "field is immutable while the job is not suspended"));
  }
  CheckTopologyRequest(next, options, &errs);
  return errs;
}

KindWebhook JobWebhook(JobWebhookContext& context, const JobWebhookOptions& options) {
  KindWebhook webhook{.kind = "Job",
                      .mutate_path = "/mutate-batch-v1-job",
                      .validate_path = "/validate-batch-v1-job"};
  webhook.default_create = [&context, options](const nlohmann::json& job) {
    return DefaultJob(job, context, options);
  };
  webhook.validate = [&context, options](const nlohmann::json* old_job, const nlohmann::json& job,
                                         std::vector<std::string>*, std::string*) {
    return old_job == nullptr ? ValidateJobCreate(job, context, options)
                              : ValidateJobUpdate(*old_job, job, context, options);
  };
  return webhook;
}

WebhookReply AnswerJobReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const JobWebhookOptions& options) {
  return AnswerReview(JobWebhook(context, options), path, body);
}

}  // namespace admitd::shim
