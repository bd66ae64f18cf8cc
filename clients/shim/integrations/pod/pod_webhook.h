// The admission webhook's rules for plain pods and pod groups (job framework §1.3, §1.4, §3.1 to
// §3.3; KEP-976), as pure functions over the pod's JSON, like job_webhook.h for Jobs: the
// mutation Kueue's `mpod.kb.io` applies on CREATE, returned as RFC 6902 JSON Patch operations,
// and the checks `vpod.kb.io` runs on CREATE and UPDATE, returned as field errors with Kueue's
// texts (see field_errors.h).
//
// A pod is managed when its namespace is managed, its controller owner is not of a kind the shim
// integrates, and it has a queue name (the namespace's `default` LocalQueue gives it one) or
// `manage_jobs_without_queue_name` is set. A managed pod gets the label `kueue.x-k8s.io/managed:
// "true"`, the finalizer `kueue.x-k8s.io/managed`, the scheduling gate
// `kueue.x-k8s.io/admission` (and `kueue.x-k8s.io/topology` with TopologyAwareScheduling on) and
// the annotation `kueue.x-k8s.io/role-hash`. A pod with `kueue.x-k8s.io/pod-suspending-parent`
// belongs to its parent's integration: it is gated and hashed, nothing else.
//
//   FakeContext ctx;  // a JobWebhookContext
//   PodWebhookOptions options{.integration_enabled = true};
//   nlohmann::json defaulted = pod.patch(nlohmann::json(DefaultPod(pod, ctx, options)));
//   std::vector<FieldError> errs = ValidatePodCreate(defaulted, ctx, options);
//   if (!errs.empty()) deny(AggregateErrors(errs));
//
// Validation covers every pod, managed or not (the webhook configuration's namespace selector
// keeps system namespaces out), as Kueue's does. Besides Kueue's rules it refuses what admitd
// refuses when the pod is reported (docs/shim-protocol.md §5) for groups that declare their pod
// sets: a malformed `kueue.x-k8s.io/pod-group-sets` annotation, a set or a
// `kueue.x-k8s.io/pod-group-role` label without a group name, and either one changed later.
//
// Kueue's walk up the owner chain is approximated by the controller owner's kind, as for Jobs.
// With `integration_enabled` off every function returns nothing, as Kueue's no-op webhook
// answers when the pod integration is not enabled.
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_WEBHOOK_H_

#include <string>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// Kueue's configuration and feature gates that change the pod webhook (defaults: Kueue's).
struct PodWebhookOptions {
  // The `pod` framework is in integrations.frameworks (it is not by default).
  bool integration_enabled = false;
  // The pod integration enabled only by a kind admitted as pods (Deployment, StatefulSet): only
  // the pods such a kind marks (kueue.x-k8s.io/pod-suspending-parent) are defaulted.
  bool parent_pods_only = false;
  bool manage_jobs_without_queue_name = false;
  bool topology_aware_scheduling = true;  // TopologyAwareScheduling: the topology gate
  bool tas_multi_layer_topology = true;   // TASMultiLayerTopology
  bool workload_priority_class_defaulting = true;
  bool elastic_jobs = true;                     // ElasticJobsViaWorkloadSlices
  bool admission_gated_by = true;               // AdmissionGatedBy
  bool workload_identifier_annotations = true;  // WorkloadIdentifierAnnotations
  // The most pod sets a `kueue.x-k8s.io/pod-group-sets` annotation may declare (admitd's
  // pod_group_max_roles, 18 unless configured lower).
  int max_pod_sets = 18;
  // Kinds of the integrations the shim manages: a pod controlled by one of them belongs to its
  // owner's Workload and is not mutated.
  std::vector<OwnerKind> managed_owner_kinds = {
      {"batch/v1", "Job"}, {"v1", "Pod"}, {"ray.io/v1", "RayCluster"}};
};

// The JSON Patch operations (RFC 6902 objects {"op","path","value"}) that apply Kueue's CREATE
// mutation to `pod`; empty when nothing changes. Missing maps and lists are added whole, so the
// operations apply to `pod` as given. The namespace is the pod's metadata.namespace.
std::vector<nlohmann::json> DefaultPod(const nlohmann::json& pod, JobWebhookContext& context,
                                       const PodWebhookOptions& options);

// The errors `vpod.kb.io` reports for a pod being created, in Kueue's order; empty: allowed.
// `warnings`, when given, receives the admission warnings Kueue adds (a managed pod whose owner
// is of a managed kind).
std::vector<FieldError> ValidatePodCreate(const nlohmann::json& pod, JobWebhookContext& context,
                                          const PodWebhookOptions& options,
                                          std::vector<std::string>* warnings = nullptr);

// The errors `vpod.kb.io` reports for an update from `old_pod` to `new_pod`.
std::vector<FieldError> ValidatePodUpdate(const nlohmann::json& old_pod,
                                          const nlohmann::json& new_pod, JobWebhookContext& context,
                                          const PodWebhookOptions& options,
                                          std::vector<std::string>* warnings = nullptr);

// The pod webhook (mpod.kb.io, vpod.kb.io) on Kueue's paths /mutate--v1-pod and
// /validate--v1-pod; with `options.integration_enabled` off it allows every pod unchanged, as
// Kueue's no-op webhook does. `context` must outlive it.
KindWebhook PodWebhook(JobWebhookContext& context, const PodWebhookOptions& options);
// One AdmissionReview of the pod webhook (admission_review.h).
WebhookReply AnswerPodReview(const std::string& path, const std::string& body,
                             JobWebhookContext& context, const PodWebhookOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_WEBHOOK_H_
