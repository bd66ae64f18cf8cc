#include "clients/shim/integrations/pod/pod_webhook.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/integrations/pod/pod_webhook_role_hash.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/webhook/webhook_json.h"
#include "common/manifest/manifest.h"
#include "common/utf8.h"

namespace admitd::shim {
namespace {

// ---- Reading the pod's JSON --------------------------------------------------------------------

struct PodView {
  PodView(const nlohmann::json& pod, const PodWebhookOptions& options)
      : meta(Field(pod, "metadata")),
        labels(Field(meta, "labels")),
        annotations(Field(meta, "annotations")),
        spec(Field(pod, "spec")),
        phase(Entry(Field(pod, "status"), "phase").value_or("")),
        identifier_annotations(options.workload_identifier_annotations) {}
  std::string Label(const std::string& k) const { return Entry(labels, k).value_or(""); }
  std::string Annotation(const std::string& k) const { return Entry(annotations, k).value_or(""); }
  bool HasAnnotation(const std::string& k) const { return Entry(annotations, k).has_value(); }
  std::string Namespace() const { return Entry(meta, "namespace").value_or(""); }
  bool HasGate(const std::string& gate) const {
    return ListHas(Field(spec, "schedulingGates"), gate, "name");
  }
  // Kueue's podSuspended: gated for admission, or terminated.
  bool IsSuspended() const {
    return HasGate(kAdmissionGate) || phase == "Succeeded" || phase == "Failed";
  }
  // GetPodGroupName: with WorkloadIdentifierAnnotations the annotation first.
  std::string GroupName() const {
    if (identifier_annotations) {
      if (std::string name = Annotation(kGroupNameLabel); !name.empty()) return name;
    }
    return Label(kGroupNameLabel);
  }
  std::string GroupNamePath() const {
    return identifier_annotations && !Annotation(kGroupNameLabel).empty() ? AnnotationPath(kGroupNameLabel)
                                                                     : LabelPath(kGroupNameLabel);
  }
  // The prebuilt Workload's key: from the annotation with WorkloadIdentifierAnnotations (or a
  // value too long for a label), else from the label.
  bool PrebuiltFromAnnotation() const {
    const std::string annotation = Annotation(kPrebuiltWorkloadKey);
    return (identifier_annotations || annotation.size() > kLabelValueMaxLength) &&
           !annotation.empty();
  }
  std::string PrebuiltPath() const {
    return PrebuiltFromAnnotation() ? AnnotationPath(kPrebuiltWorkloadKey)
                                    : LabelPath(kPrebuiltWorkloadKey);
  }
  std::string PrebuiltName() const {
    const std::string annotation = Annotation(kPrebuiltWorkloadKey);
    if (identifier_annotations) {
      return !annotation.empty() ? annotation : Label(kPrebuiltWorkloadKey);
    }
    if (std::string label = Label(kPrebuiltWorkloadKey); !label.empty()) return label;
    return annotation.size() > kLabelValueMaxLength ? annotation : "";
  }

  const nlohmann::json& meta;
  const nlohmann::json& labels;
  const nlohmann::json& annotations;
  const nlohmann::json& spec;
  const std::string phase;
  const bool identifier_annotations;
};

bool Elastic(const PodView& pod, const PodWebhookOptions& options) {
  return options.elastic_jobs && pod.Annotation(kElasticJobAnnotation) == "true";
}

// ---- Validation --------------------------------------------------------------------------------

void CheckPrebuiltName(const PodView& pod, std::vector<FieldError>* errs) {
  if (pod.PrebuiltFromAnnotation()) {
    CheckSubdomain(AnnotationPath(kPrebuiltWorkloadKey),
                   Entry(pod.annotations, kPrebuiltWorkloadKey), errs);
  } else {
    CheckSubdomain(LabelPath(kPrebuiltWorkloadKey), Entry(pod.labels, kPrebuiltWorkloadKey), errs);
  }
}

// jobframework.ValidateJobOnCreate for a pod.
void CheckJobOnCreate(const PodView& pod, const PodWebhookOptions& options,
                      std::vector<FieldError>* errs) {
  CheckSubdomain(LabelPath(kQueueNameLabel), Entry(pod.labels, kQueueNameLabel), errs);
  CheckPrebuiltName(pod, errs);  // a Pod may use a prebuilt Workload
  CheckMaxExecTime(pod.labels, errs);
  if (Elastic(pod, options)) {
    errs->push_back(ElasticNotSupported("v1", "Pod"));
  }
  if (options.admission_gated_by) {
    CheckAdmissionGatedByFormat(pod.Annotation(kAdmissionGatedBy), errs);
  }
}

bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool HasTemplate(const v1::PodSet& set) {
  return set.has_template_() && set.template_().spec().containers_size() > 0;
}

// What admitd finds wrong with a kueue.x-k8s.io/pod-group-sets annotation (the texts of its
// PodService report errors); empty when it is well formed.
std::string DeclaredSetsError(const PodView& pod, const PodWebhookOptions& options) {
  absl::StatusOr<std::vector<v1::PodSet>> parsed =
      manifest::ParsePodSets(pod.Annotation(kGroupSetsAnnotation));
  if (!parsed.ok()) return std::string(parsed.status().message());
  const std::vector<v1::PodSet>& sets = *parsed;
  if (sets.empty()) return "at least one pod set is required";
  if (static_cast<int>(sets.size()) > options.max_pod_sets) {
    return absl::StrCat("pod group can't include more than ", options.max_pod_sets, " roles");
  }
  std::vector<std::string> errors, untemplated;
  for (size_t i = 0; i < sets.size(); ++i) {
    const v1::PodSet& s = sets[i];
    if (s.name().empty()) {
      errors.push_back(absl::StrCat("[", i, "].name: Required value"));
    } else if (!IsDnsLabel(s.name())) {
      errors.push_back(absl::StrCat("[", i, "].name: Invalid value: \"", s.name(),
                                    "\": must be a lowercase RFC 1123 label"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (!s.name().empty() && sets[j].name() == s.name()) {
        errors.push_back(absl::StrCat("[", i, "].name: Duplicate value: \"", s.name(), "\""));
      }
    }
    if (s.count() < 1) {
      errors.push_back(absl::StrCat("[", i, "].count: Invalid value: ", s.count(),
                                    ": must be greater than or equal to 1"));
    }
    if (s.has_min_count()) {
      errors.push_back(
          absl::StrCat("[", i, "].minCount: Forbidden: pod groups are not partially admitted"));
    }
    if (!HasTemplate(s)) untemplated.push_back(s.name());
  }
  if (untemplated.size() > 1) {
    errors.push_back(
        absl::StrCat("only one pod set may leave its template empty to take the pod's ",
                     "own spec, not ", absl::StrJoin(untemplated, ", ")));
  }
  if (!errors.empty()) return absl::StrJoin(errors, "; ");
  if (std::string role = pod.Label(kGroupRoleLabel); !role.empty()) {
    if (std::none_of(sets.begin(), sets.end(),
                     [&](const v1::PodSet& s) { return s.name() == role; })) {
      return absl::StrCat("the pod's '", kGroupRoleLabel, "' label \"", role,
                          "\" names none of the pod sets");
    }
  } else if (untemplated.empty()) {
    return absl::StrCat("the pod belongs to no pod set: give it the '", kGroupRoleLabel,
                        "' label or leave one pod set's template empty");
  }
  if (pod.HasAnnotation(kGroupTotalCountAnnotation)) {
    std::string ignored;
    int64_t total = 0;
    for (const v1::PodSet& s : sets) total += s.count();
    std::optional<int64_t> declared = GoAtoi(pod.Annotation(kGroupTotalCountAnnotation), &ignored);
    if (declared && *declared != total) {
      return absl::StrCat("the '", kGroupTotalCountAnnotation, "' annotation (", *declared,
                          ") differs from the pod sets' total count (", total, ")");
    }
  }
  return "";
}

// validatePodGroupMetadata, with admitd's declared pod sets: a pod that declares its group's sets
// (or names its set with a role label) needs no total count.
void CheckGroupMetadata(const PodView& pod, const PodWebhookOptions& options,
                        std::vector<FieldError>* errs) {
  const std::optional<std::string> total = Entry(pod.annotations, kGroupTotalCountAnnotation);
  std::string detail = absl::StrCat("both the '", kGroupTotalCountAnnotation, "' annotation and the '",
                                    kGroupNameLabel, "' label should be set");
  if (options.workload_identifier_annotations && !pod.Annotation(kGroupNameLabel).empty()) {
    detail = absl::StrCat("both the '", kGroupTotalCountAnnotation, "' annotation and the '", kGroupNameLabel,
                          "' annotation should be set");
  }
  const std::string group = pod.GroupName();
  const bool declares = pod.HasAnnotation(kGroupSetsAnnotation);
  const bool has_role = !pod.Label(kGroupRoleLabel).empty();
  if (group.empty() && (declares || has_role)) {
    errs->push_back(FieldError::Required(
        pod.GroupNamePath(),
        absl::StrCat("the '", declares ? kGroupSetsAnnotation : kGroupRoleLabel, "' ",
                     declares ? "annotation" : "label", " needs the '", kGroupNameLabel, "' label")));
    return;
  }
  if (declares) {
    // The error may quote what the YAML parser stopped at, half a UTF-8 character at times: the
    // reply is JSON, which needs valid UTF-8.
    if (std::string e = ToValidUtf8(DeclaredSetsError(pod, options)); !e.empty()) {
      errs->push_back(FieldError::Invalid(AnnotationPath(kGroupSetsAnnotation), "", e));
    }
  }
  if (group.empty()) {
    if (total) errs->push_back(FieldError::Required(pod.GroupNamePath(), detail));
    return;
  }
  CheckSubdomain(pod.GroupNamePath(), group, errs);
  if (!total) {
    if (!declares && !has_role) {
      errs->push_back(FieldError::Required(AnnotationPath(kGroupTotalCountAnnotation), detail));
    }
    return;
  }
  std::string error;
  std::optional<int64_t> count = GoAtoi(*total, &error);
  if (count && *count < 1) {
    error = absl::StrCat("incorrect annotation value '", kGroupTotalCountAnnotation, "=", *total,
                         "': group total count should be greater than zero");
  }
  if (!count || *count < 1) {
    errs->push_back(FieldError::Invalid(AnnotationPath(kGroupTotalCountAnnotation), GoQuote(*total), error));
  }
}

// The pod webhook's validateCommon.
void CheckCommon(const PodView& pod, const PodWebhookOptions& options,
                 std::vector<FieldError>* errs) {
  if (std::optional<std::string> managed = Entry(pod.labels, kManagedLabel);
      managed && *managed != "true") {
    errs->push_back(
        FieldError::Forbidden(LabelPath(kManagedLabel), "managed label value can only be 'true'"));
  }
  CheckGroupMetadata(pod, options, errs);
  std::vector<FieldError> tas =
      TasPodSetRequestErrors("metadata", pod.annotations, options.tas_multi_layer_topology);
  errs->insert(errs->end(), tas.begin(), tas.end());
  const std::string group = pod.GroupName(), prebuilt = pod.PrebuiltName();
  if (!group.empty() && !prebuilt.empty() && prebuilt != group) {
    errs->push_back(FieldError::Invalid(pod.PrebuiltPath(), GoQuote(prebuilt),
                                        "prebuilt workload and pod group should be equal"));
  }
}

void AddManagedOwnerWarning(const PodView& pod, const PodWebhookOptions& options,
                            std::vector<std::string>* warnings) {
  if (warnings != nullptr && pod.Label(kManagedLabel) == "true" &&
      ControlledByOneOf(pod.meta, options.managed_owner_kinds)) {
    warnings->push_back(absl::StrCat("pod owner is managed by kueue, label '", kManagedLabel,
                                     "=true' might lead to unexpected behaviour"));
  }
}

}  // namespace

// ---- Public functions --------------------------------------------------------------------------

std::vector<nlohmann::json> DefaultPod(const nlohmann::json& pod, JobWebhookContext& context,
                                       const PodWebhookOptions& options) {
  std::vector<nlohmann::json> ops;
  if (!options.integration_enabled) return ops;
  const PodView view(pod, options);
  const std::string ns = view.Namespace();
  // A pod its parent's integration suspends is gated for it: no label, no finalizer.
  const bool by_parent = view.HasAnnotation(kPodSuspendingParentAnnotation);
  std::map<std::string, std::string> labels;
  if (!by_parent) {
    if (options.parent_pods_only) return ops;
    if (!context.NamespaceManaged(ns) ||
        ControlledByOneOf(view.meta, options.managed_owner_kinds)) {
      return ops;
    }
    if (view.Label(kQueueNameLabel).empty() && context.DefaultLocalQueueExists(ns)) {
      labels[kQueueNameLabel] = "default";
    }
    if (options.workload_priority_class_defaulting && view.Label(kPriorityClassLabel).empty() &&
        context.DefaultPriorityClassExists()) {
      labels[kPriorityClassLabel] = "default";
    }
    const bool has_queue =
        labels.count(kQueueNameLabel) > 0 || !view.Label(kQueueNameLabel).empty();
    if (!has_queue && !options.manage_jobs_without_queue_name) {
      // Kueue writes the priority class into the pod's own label map, and keeps it for a pod it
      // does not manage only through that map: a pod without labels gets none.
      if (view.labels.is_object()) SetEntries(pod, {"metadata", "labels"}, labels, &ops);
      return ops;
    }
    if (Entry(view.labels, kManagedLabel) != std::optional<std::string>("true")) {
      labels[kManagedLabel] = "true";
    }
  }
  std::vector<nlohmann::json> gates;
  if (!view.HasGate(kAdmissionGate)) gates.push_back({{"name", kAdmissionGate}});
  if (options.topology_aware_scheduling) {
    if (std::optional<std::string> key = Entry(view.annotations, kGroupPodIndexLabelAnnotation)) {
      const std::string index = view.Label(*key);
      if (Entry(view.labels, kGroupPodIndexLabel) != index) labels[kGroupPodIndexLabel] = index;
    }
    if (!view.HasGate(kTopologyGate)) gates.push_back({{"name", kTopologyGate}});
  }
  SetEntries(pod, {"metadata", "labels"}, labels, &ops);
  if (!by_parent && !ListHas(Field(view.meta, "finalizers"), kManagedLabel, nullptr)) {
    AppendToList(pod, {"metadata", "finalizers"}, {kManagedLabel}, &ops);
  }
  AppendToList(pod, {"spec", "schedulingGates"}, gates, &ops);
  if (!view.HasAnnotation(kRoleHashAnnotation)) {
    SetEntries(pod, {"metadata", "annotations"}, {{kRoleHashAnnotation, PodRoleHash(view.spec)}}, &ops);
  }
  return ops;
}

std::vector<FieldError> ValidatePodCreate(const nlohmann::json& pod, JobWebhookContext& context,
                                          const PodWebhookOptions& options,
                                          std::vector<std::string>* warnings) {
  std::vector<FieldError> errs;
  if (!options.integration_enabled) return errs;
  const PodView view(pod, options);
  CheckJobOnCreate(view, options, &errs);
  CheckCommon(view, options, &errs);
  AddManagedOwnerWarning(view, options, warnings);
  return errs;
}

std::vector<FieldError> ValidatePodUpdate(const nlohmann::json& old_pod,
                                          const nlohmann::json& new_pod, JobWebhookContext& context,
                                          const PodWebhookOptions& options,
                                          std::vector<std::string>* warnings) {
  std::vector<FieldError> errs;
  if (!options.integration_enabled) return errs;
  const PodView prev(old_pod, options), next(new_pod, options);

  // jobframework.ValidateJobOnUpdate; a pod is suspended while gated or terminated.
  JobWebhookOptions framework;
  framework.elastic_jobs = options.elastic_jobs;
  framework.admission_gated_by = options.admission_gated_by;
  framework.workload_identifier_annotations = options.workload_identifier_annotations;
  errs = ValidateFrameworkUpdate(old_pod, new_pod, prev.IsSuspended(), next.IsSuspended(), context,
                                 framework);

  // The pod webhook's own rules.
  CheckCommon(next, options, &errs);
  const auto unretriable = [](const PodView& p) {
    return p.Annotation(kRetriableInGroupAnnotation) == "false";
  };
  if (!next.GroupName().empty() && unretriable(prev) && !unretriable(next)) {
    errs.push_back(FieldError::Forbidden(AnnotationPath(kRetriableInGroupAnnotation),
                                         "unretriable pod group can't be converted to retriable"));
  }
  // admitd's: a group's declared sets and a pod's set are fixed once the pod exists.
  if (next.Annotation(kGroupSetsAnnotation) != prev.Annotation(kGroupSetsAnnotation)) {
    errs.push_back(FieldError::Invalid(AnnotationPath(kGroupSetsAnnotation),
                                       GoQuote(next.Annotation(kGroupSetsAnnotation)), kImmutable));
  }
  if (next.Label(kGroupRoleLabel) != prev.Label(kGroupRoleLabel)) {
    errs.push_back(
        FieldError::Invalid(LabelPath(kGroupRoleLabel), GoQuote(next.Label(kGroupRoleLabel)), kImmutable));
  }
  if (const std::string old_group = prev.GroupName(); !old_group.empty()) {
    if (const std::string new_group = next.GroupName(); new_group != old_group) {
      errs.push_back(FieldError::Invalid(next.GroupNamePath(), GoQuote(new_group), kImmutable));
    }
  }
  if (!next.HasAnnotation(kPodSuspendingParentAnnotation)) AddManagedOwnerWarning(next, options, warnings);
  return errs;
}

KindWebhook PodWebhook(JobWebhookContext& context, const PodWebhookOptions& options) {
  KindWebhook webhook{
      .kind = "Pod", .mutate_path = "/mutate--v1-pod", .validate_path = "/validate--v1-pod"};
  webhook.default_create = [&context, options](const nlohmann::json& pod) {
    return DefaultPod(pod, context, options);
  };
  webhook.validate = [&context, options](const nlohmann::json* old_pod, const nlohmann::json& pod,
                                         std::vector<std::string>* warnings, std::string*) {
    return old_pod == nullptr ? ValidatePodCreate(pod, context, options, warnings)
                              : ValidatePodUpdate(*old_pod, pod, context, options, warnings);
  };
  return webhook;
}

WebhookReply AnswerPodReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const PodWebhookOptions& options) {
  return AnswerReview(PodWebhook(context, options), path, body);
}

}  // namespace admitd::shim
