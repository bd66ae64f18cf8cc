// The admission webhook's rules for batch/v1 Jobs (job framework §1.3, §1.4; Job §2.1), as pure
// functions over the Job's JSON: the defaulting Kueue's `mjob.kb.io` applies on CREATE (the
// default LocalQueue and WorkloadPriorityClass labels, spec.suspend, the elastic-job scheduling
// gate), returned as RFC 6902 JSON Patch operations, and the checks `vjob.kb.io` runs on CREATE
// and UPDATE, returned as field errors whose texts are Kueue's (apimachinery's format:
// `<path>: <Type>[: <value>][: <detail>]`, aggregated as `[e1, e2]`; see field_errors.h).
//
//   FakeContext ctx;  // a JobWebhookContext
//   std::vector<nlohmann::json> ops = DefaultJob(job, ctx, {});
//   nlohmann::json defaulted = job.patch(nlohmann::json(ops));
//   std::vector<FieldError> errs = ValidateJobCreate(defaulted, ctx, {});
//   if (!errs.empty()) deny(AggregateErrors(errs));
//
// Kueue's walk up the owner chain is approximated by the controller owner's kind: a Job whose
// controller owner is of a kind in `JobWebhookOptions::managed_owner_kinds` is not defaulted.
// The managedBy defaulting for MultiKueue (§1.3 step 4) is done for Jobs (a queue whose
// ClusterQueue has a MultiKueue check), not for RayClusters: admitd's MultiKueue runs Jobs only.
//
// Thread safety: pure functions; the context is called from the calling thread.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WEBHOOK_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WEBHOOK_H_

#include <string>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// What the webhook needs to know about the cluster and admitd. Implementations may cache.
class JobWebhookContext {
 public:
  virtual ~JobWebhookContext() = default;
  // Whether a LocalQueue named `default` exists in namespace `ns`.
  virtual bool DefaultLocalQueueExists(const std::string& ns) = 0;
  // Whether a WorkloadPriorityClass named `default` exists.
  virtual bool DefaultPriorityClassExists() = 0;
  // Whether `ns` matches managedJobsNamespaceSelector (jobs there are managed).
  virtual bool NamespaceManaged(const std::string& ns) = 0;
  // Whether LocalQueue `ns`/`name` feeds a ClusterQueue with a kueue.x-k8s.io/multikueue
  // AdmissionCheck (a MultiKueue manager's queue).
  virtual bool LocalQueueUsesMultiKueue(const std::string& ns, const std::string& name) {
    (void)ns;
    (void)name;
    return false;
  }
};

// An owner reference's apiVersion and kind.
struct OwnerKind {
  std::string api_version;
  std::string kind;
};

// Kueue's configuration and feature gates that change the Job webhook (defaults: Kueue's).
struct JobWebhookOptions {
  bool manage_jobs_without_queue_name = false;
  bool elastic_jobs = true;  // ElasticJobsViaWorkloadSlices
  bool workload_priority_class_defaulting = true;
  bool topology_aware_scheduling = true;        // TopologyAwareScheduling
  bool tas_multi_layer_topology = true;         // TASMultiLayerTopology
  bool admission_gated_by = true;               // AdmissionGatedBy
  bool workload_identifier_annotations = true;  // WorkloadIdentifierAnnotations
  // Kinds of the integrations the shim manages: a Job controlled by one of them belongs to its
  // owner's Workload and is not defaulted.
  std::vector<OwnerKind> managed_owner_kinds = {
      {"batch/v1", "Job"}, {"v1", "Pod"}, {"ray.io/v1", "RayCluster"}};
};

// The common CREATE defaulting of any integration's object (§1.3 steps 1 to 3, which Kueue's Job
// and RayCluster webhooks share): the `default` LocalQueue and WorkloadPriorityClass labels, and
// spec.suspend for an object that is to wait for admission; as JSON Patch operations.
std::vector<nlohmann::json> DefaultFramework(const nlohmann::json& object,
                                             JobWebhookContext& context,
                                             const JobWebhookOptions& options);

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

// The JSON Patch operations (RFC 6902 objects {"op","path","value"}) that apply Kueue's CREATE
// defaulting to `job`; empty when nothing changes. Missing maps and lists are added whole, so
// the operations apply to `job` as given. The namespace is the Job's metadata.namespace.
std::vector<nlohmann::json> DefaultJob(const nlohmann::json& job, JobWebhookContext& context,
                                       const JobWebhookOptions& options);

// The errors `vjob.kb.io` reports for a Job being created, in Kueue's order; empty: allowed.
std::vector<FieldError> ValidateJobCreate(const nlohmann::json& job, JobWebhookContext& context,
                                          const JobWebhookOptions& options);

// The errors `vjob.kb.io` reports for an update from `old_job` to `new_job`.
std::vector<FieldError> ValidateJobUpdate(const nlohmann::json& old_job,
                                          const nlohmann::json& new_job, JobWebhookContext& context,
                                          const JobWebhookOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WEBHOOK_H_
