// The webhook of a kind whose pods are admitted one by one or as a pod group through the pod
// integration, never as a Workload of the kind (Kueue's Deployment and StatefulSet webhooks,
// kueue-jobframework.md §10.2, §11.1):
//
//   - defaulting, on CREATE and UPDATE: the `default` LocalQueue and WorkloadPriorityClass
//     labels, then, when the object is to wait for admission (Kueue's WorkloadShouldBeSuspended),
//     the annotation kueue.x-k8s.io/pod-suspending-parent: <framework> on spec.template (and,
//     when `label_template`, the labels kueue.x-k8s.io/managed, the queue name and the priority
//     class there too). The object itself is never suspended;
//   - validation: the queue name's format, the elastic-job annotation refused, admission-gated-by;
//     on UPDATE the queue name immutable while the old object has ready replicas (or when it is
//     removed), the priority class rules with "suspended" = no ready replicas, then the kind's
//     own checks of a managed object (`check_managed_update`).
//
// An object whose template names another framework as its pods' parent is left alone when
// `yield_to_other_parent` (a LeaderWorkerSet's StatefulSets). With `elastic`, an elastic object
// is gated instead of marked (see below), and its elastic-job annotation may not change.
//
//   KindWebhook webhook = ServingWebhook(spec, context, options, enabled);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_SERVING_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_SERVING_WEBHOOK_H_

#include <functional>
#include <string>
#include <vector>

#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct ServingWebhookSpec {
  std::string api_version, kind;
  std::string framework;  // the pod-suspending-parent value: "deployment", "statefulset"
  std::string mutate_path, validate_path;
  bool label_template = false;
  bool yield_to_other_parent = false;
  // Beyond Kueue: an object with the elastic-job annotation is one Workload resized through
  // slices (framework/serving_job.h): its template is gated (kueue.x-k8s.io/elastic-job) and
  // labelled with its pod set instead of being marked for the pod integration. Otherwise the
  // annotation is refused.
  bool elastic = false;
  // Further errors for an update of an object that is to wait for admission; may be null.
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& new_object,
                     JobWebhookContext& context, std::vector<FieldError>* errs)>
      check_managed_update;
};

std::vector<nlohmann::json> ServingDefault(const ServingWebhookSpec& spec,
                                           const nlohmann::json& object,
                                           JobWebhookContext& context,
                                           const JobWebhookOptions& options);
// `old_object` null: CREATE.
std::vector<FieldError> ServingValidate(const ServingWebhookSpec& spec,
                                        const nlohmann::json* old_object,
                                        const nlohmann::json& object, JobWebhookContext& context,
                                        const JobWebhookOptions& options);
KindWebhook ServingWebhook(ServingWebhookSpec spec, JobWebhookContext& context,
                           const JobWebhookOptions& options, bool enabled);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_SERVING_WEBHOOK_H_
