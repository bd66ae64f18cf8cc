// The admission webhook's rules for StatefulSets (apps/v1; kueue-jobframework.md §11.1): the
// serving webhook (framework/serving_webhook.h) with the template annotation
// kueue.x-k8s.io/pod-suspending-parent: statefulset, leaving a StatefulSet whose template names
// another parent alone, and, on UPDATE of a managed StatefulSet:
//
//   - its pods' shape may not change (Kueue's ValidateImmutablePodGroupPodSpec: the containers'
//     and init containers' requests and ports, nodeSelector, affinity, tolerations,
//     runtimeClassName, priority, topologySpreadConstraints, overhead, resourceClaims, pod-level
//     requests), each difference an error at spec.template.spec.<field>, in field order;
//   - replicas change only to or from 0; scaling up from 0 waits until every old pod is gone
//     (`scaling down is still in progress`).
//
//   KindWebhook webhook = StatefulSetWebhook(context, options, /*enabled=*/true);
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_WEBHOOK_H_

#include <vector>

#include "clients/shim/framework/serving_webhook.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

ServingWebhookSpec StatefulSetWebhookSpec();
KindWebhook StatefulSetWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                               bool enabled);

// The shape rule alone: the errors for `new_spec` against `old_spec` (pod specs).
std::vector<FieldError> PodShapeChanges(const nlohmann::json& old_spec,
                                        const nlohmann::json& new_spec);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_STATEFULSET_STATEFULSET_WEBHOOK_H_
