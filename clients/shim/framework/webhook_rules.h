// The admission webhook rules every integration shares (Kueue's jobframework webhook,
// kueue-jobframework.md §1.3, §1.4): the context they ask of admitd and the cluster, the options
// (Kueue's configuration and feature gates), a view of an object's metadata, the CREATE
// defaulting (the `default` LocalQueue and WorkloadPriorityClass, spec.suspend) and the checks of
// ValidateJobOnCreate and ValidateJobOnUpdate, with Kueue's field error texts (field_errors.h).
// Each integration's webhook adds its own rules to these.
//
//   std::vector<nlohmann::json> ops = DefaultFramework(object, context, options);
//   std::vector<FieldError> errs = ValidateFrameworkUpdate(old_object, object, context, options);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_WEBHOOK_RULES_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_WEBHOOK_RULES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clients/shim/kube/json_fields.h"
#include "clients/shim/webhook/field_errors.h"
#include "clients/shim/webhook/webhook_context.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The common CREATE defaulting of any integration's object (§1.3 steps 1 to 3, which Kueue's Job
// and RayCluster webhooks share): the `default` LocalQueue and WorkloadPriorityClass labels, and
// spec.suspend for an object that is to wait for admission; as JSON Patch operations.
std::vector<nlohmann::json> DefaultFramework(const nlohmann::json& object,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options);
// The same, for a kind whose suspend switch is elsewhere than spec.suspend (a Kubeflow job's
// spec.runPolicy.suspend): `suspend_path`, a path of fields.
std::vector<nlohmann::json> DefaultFramework(const nlohmann::json& object,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options,
                                             const std::vector<std::string>& suspend_path);

// §1.3 steps 1 and 2 alone: the labels an object is to get (the `default` LocalQueue's name, the
// `default` WorkloadPriorityClass), none for an object a managed kind controls.
std::map<std::string, std::string> DefaultLabels(const nlohmann::json& object,
                                                 JobWebhookContext& context,
                                                 const JobWebhookOptions& options);
// Kueue's WorkloadShouldBeSuspended (deleting objects tolerated: not suspended) for `object` once
// it has the labels `defaults` adds: not controlled by a managed kind, and a queue name (or
// manageJobsWithoutQueueName in a managed namespace).
bool ShouldBeSuspended(const nlohmann::json& object,
                       const std::map<std::string, std::string>& defaults,
                       JobWebhookContext& context, const JobWebhookOptions& options);

// jobframework.ValidateJobOnCreate on any integration's object (its metadata: the queue name,
// prebuilt Workload name, maximum execution time and admission gates).
std::vector<FieldError> ValidateFrameworkCreate(const nlohmann::json& object,
                                                const JobWebhookOptions& options);

// jobframework.ValidateJobOnUpdate (what may not change: the queue name while running, the
// prebuilt Workload, the maximum execution time, the priority class, the elastic annotation, the
// admission gates). The object counts as suspended when spec.suspend is true and it is not being
// stopped.
std::vector<FieldError> ValidateFrameworkUpdate(const nlohmann::json& old_object,
                                                const nlohmann::json& new_object,
                                                JobWebhookContext& context,
                                                const JobWebhookOptions& options);

// The same rules, for a kind whose own notion of "suspended" is not spec.suspend (a pod: gated or
// terminated): `old_suspended` and `new_suspended` are the objects' states.
std::vector<FieldError> ValidateFrameworkUpdate(const nlohmann::json& old_object,
                                                const nlohmann::json& new_object,
                                                bool old_suspended, bool new_suspended,
                                                JobWebhookContext& context,
                                                const JobWebhookOptions& options);

// §1.3 step 4: an object for a MultiKueue manager's queue (its queue, or the `default` one step 1
// gives it) is managed by MultiKueue: `managed_by` (a path of fields, e.g. {"spec", "managedBy"})
// set to kueue.x-k8s.io/multikueue, unless the object is owned by a managed kind or another
// controller than `own_controller` (the kind's own, e.g. kubernetes.io/job-controller) manages it.
// Appends the JSON Patch operation to `ops`.
void DefaultMultiKueueManagedBy(const nlohmann::json& object, JobWebhookContext& context,
                                const JobWebhookOptions& options,
                                const std::vector<std::string>& managed_by,
                                const std::string& own_controller,
                                std::vector<nlohmann::json>* ops);

// jobframework.ValidateUpdateForWorkloadPriorityClassName: a priority class may be added only
// while `suspended`, and never removed.
void CheckPriorityClassUpdate(const nlohmann::json& old_object, const nlohmann::json& new_object,
                              bool suspended, std::vector<FieldError>* errs);

// The error for an elastic-job annotation on a kind that is not elastic ("elastic job is not
// supported for \"<group/version>, Kind=<kind>\"").
FieldError ElasticNotSupported(const std::string& api_version, const std::string& kind);

// An object's metadata and spec as the webhook rules read them (no copies: views into the JSON).
struct ObjectView {
  explicit ObjectView(const nlohmann::json& object);
  std::string Label(const std::string& k) const;
  std::string Annotation(const std::string& k) const;
  std::string Namespace() const;
  std::optional<int64_t> SpecInt(const char* key) const;
  bool SuspendField() const { return Field(spec, "suspend") == true; }
  // Kueue's IsSuspended of a job with spec.suspend: suspended and not being stopped.
  bool IsSuspended() const;

  const nlohmann::json& meta;
  const nlohmann::json& labels;
  const nlohmann::json& annotations;
  const nlohmann::json& spec;
  const nlohmann::json& template_annotations;  // spec.template.metadata.annotations
};

// The elastic-job annotation, with the gate on.
bool Elastic(const ObjectView& object, const JobWebhookOptions& options);
// The prebuilt Workload's name and where it was read (the annotation with
// WorkloadIdentifierAnnotations, or when the value cannot be a label; else the label).
std::string PrebuiltName(const ObjectView& object, const JobWebhookOptions& options);
std::string PrebuiltPath(const ObjectView& object, const JobWebhookOptions& options);
void CheckPrebuiltName(const ObjectView& object, const JobWebhookOptions& options,
                       std::vector<FieldError>* errs);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_WEBHOOK_RULES_H_
