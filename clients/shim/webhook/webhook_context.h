// What an integration's webhook rules may ask of the cluster and admitd (JobWebhookContext; the
// shim's answers come from admitd_webhook_context.h, tests' from a fake), and Kueue's
// configuration and feature gates that change them (JobWebhookOptions).
//
// Thread safety: a context is called from the webhook's request threads.
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_CONTEXT_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_CONTEXT_H_

#include <string>
#include <vector>

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

// Kueue's configuration and feature gates that change the webhooks (defaults: Kueue's).
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

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_CONTEXT_H_
