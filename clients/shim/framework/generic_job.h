// What an integration tells the generic reconcile about one of its objects (Kueue's
// jobframework.GenericJob, kueue-jobframework.md §1): a GenericJob wraps the object as the cache
// holds it, with the pods it controls, and answers the reconcile's questions (suspended? active?
// finished? pods ready?) and makes the patches it asks for (start with the admission's pod set
// info, stop and restore). Kueue's optional interfaces (JobWithReclaimablePods, the MultiKueue
// adapter, elastic scaling) are virtual methods with "nothing to do" defaults.
//
// An Integration is the kind's adapter type, registered once (framework/integration.h): its
// identity (name, apiVersion, kind, resource), where its objects and pods are listed, and the
// factory of GenericJobs.
//
//   std::unique_ptr<GenericJob> job = integration.Wrap(object, pods, options);
//   if (job->IsSuspended() && Admitted(wl)) patch = job->StartPatch(infos, job->IsElastic());
//
// Thread safety: a GenericJob is used by one reconcile; an Integration is immutable and shared.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_GENERIC_JOB_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_GENERIC_JOB_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/podset_info.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// How a job ended (Kueue's Finished: the condition's message, and whether it succeeded).
struct JobFinish {
  bool succeeded = false;
  std::string message;
};

// Stopping a job (job framework §1.10) as up to three writes, so that a job left half-stopped
// still reads as running and is stopped again.
struct StopPlan {
  // Merge patch that suspends the job (a `Stopped` event goes with it); null when it is
  // suspended already.
  nlohmann::json suspend;
  // Merge patch of the status subresource to apply before the templates may change (a Job's
  // status.startTime cleared); null when none.
  nlohmann::json status;
  // Merge patch restoring the templates to the Workload's stored pod sets (Kueue's
  // RestorePodSetsInfo); null when there is nothing to restore.
  nlohmann::json restore;
  // Pods to delete (a kind that cannot be suspended stops by deleting its running pods, which
  // its controller makes again, gated).
  std::vector<nlohmann::json> delete_pods;
};

// What the reconcile hands a GenericJob besides its object: its pods (from its integration's
// pods_path) and its children (from children_path: the objects it controls, a RayJob's
// RayCluster).
struct Related {
  Related() = default;
  Related(std::vector<nlohmann::json> p) : pods(std::move(p)) {}  // NOLINT: pods alone
  std::vector<nlohmann::json> pods;
  std::vector<nlohmann::json> children;
};

// The switches every integration reads (the shim's flags).
struct FrameworkOptions {
  std::string cluster;  // the shim's --cluster: the label on every Workload it submits
  // Namespaces whose jobs are never managed (Kueue's managedJobsNamespaceSelector default).
  std::set<std::string> excluded_namespaces;
  bool manage_jobs_without_queue_name = false;
  bool elastic_jobs = true;       // the ElasticJobsViaWorkloadSlices gate (β, on)
  bool partial_admission = true;  // the PartialAdmission gate (β, on)
  std::set<std::string> label_keys_to_copy;  // Kueue's labelKeysToCopy
  // The integrations enabled (--integrations names): a child of an enabled kind's object runs
  // only while its parent's Workload is admitted.
  std::set<std::string> enabled;
};

class GenericJob {
 public:
  virtual ~GenericJob() = default;

  // The object as the cache holds it (apiVersion, kind, metadata, spec, status).
  virtual const nlohmann::json& Object() const = 0;
  // Kueue's Skip: the framework leaves the object alone (no Workload, no suspension), e.g. a
  // RayJob that runs on an existing cluster.
  virtual bool Skip() const { return false; }
  // Kueue's JobWithOnHold: the job waits on something outside admission (a RayJob KubeRay found
  // invalid) and must not hold quota meanwhile.
  virtual bool IsOnHold() const { return false; }
  // A kind that is never suspended (an elastic StatefulSet or Deployment): it starts as its pods
  // are ungated, each taking the admission's pod set info (node selector, labels, annotations,
  // tolerations) in the patch that removes its gate; StartPatch is never asked for.
  virtual bool StartsByUngating() const { return false; }
  // A merge patch the object needs before its Workload is built (an elastic RayJob's
  // kueue.x-k8s.io/raycluster-generation annotation); nullopt when none.
  virtual std::optional<nlohmann::json> PreparePatch() const { return std::nullopt; }
  // Kueue's IsSuspended.
  virtual bool IsSuspended() const = 0;
  // Kueue's IsActive: pods run whose quota the Workload must hold until they are gone.
  virtual bool IsActive() const = 0;
  // Kueue's Finished: set once the job completed or failed for good; never, for a kind that
  // does not finish (RayCluster).
  virtual std::optional<JobFinish> Finished() const = 0;
  // Kueue's PodsReady (waitForPodsReady).
  virtual bool PodsReady() const = 0;
  // An elastic job (the gate on and kueue.x-k8s.io/elastic-job: "true"): resized through
  // workload slices instead of being replaced.
  virtual bool IsElastic() const = 0;

  // The Workload the job asks for (Kueue's ConstructWorkload: name, owner, labels, queue,
  // priority, pod sets). INVALID_ARGUMENT, naming the field, when the object cannot be read as
  // its kind.
  virtual absl::StatusOr<v1::Workload> NewWorkload() const = 0;
  // The pod sets' templates as the object has them, in the Workload's order.
  virtual absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const = 0;
  // What of the templates a Workload's equivalence compares beyond what the Workload keeps
  // (§1.8): the containers and init containers of every pod set, as one digest (hex).
  virtual absl::StatusOr<std::string> ContainersDigest() const;

  // Kueue's RunWithPodSetsInfo: the merge patch that starts the job with the admission's pod
  // set info (one per pod set, in order). FAILED_PRECONDITION with Kueue's text when they do
  // not fit (the Workload is then finished FailedToStart).
  virtual absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>& infos,
                                                    bool elastic) const = 0;
  // Kueue's Stop: suspend, then restore the templates to `workload`'s (null: only suspend).
  virtual StopPlan PlanStop(const v1::Workload* workload) const = 0;

  // JobWithReclaimablePods: pods per pod set that no longer need their quota.
  virtual std::map<std::string, int> ReclaimablePods() const { return {}; }
  // MultiKueue, on a manager: the merge patch of the object's status subresource that mirrors
  // the worker's copy (its status JSON); nullopt when nothing is to change.
  virtual std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& remote) const {
    (void)remote;
    return std::nullopt;
  }
  // Elastic on a MultiKueue worker: the merge patch that gives the object `workload`'s counts
  // (the manager resized the copy); nullopt when they are the object's already.
  virtual std::optional<nlohmann::json> ScalePatch(const v1::Workload& workload) const {
    (void)workload;
    return std::nullopt;
  }
};

// Digest (hex) of the containers and init containers in `pod_template` ({"spec": {...}}).
std::string ContainersDigestOf(const nlohmann::json& pod_template);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_GENERIC_JOB_H_
