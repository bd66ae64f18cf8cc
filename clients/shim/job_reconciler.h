// The reconcile of one batch/v1 Job against its Workloads in admitd (job framework §1.7, Job §2):
// submit the Workload built from the Job; start the Job when its Workload is admitted; stop it
// when the Workload is evicted and give the quota back once no pod is active; finish the Workload
// when the Job finishes; report reclaimable pods; replace a Workload the Job no longer matches
// (§1.8); resize an elastic Job's Workload when its parallelism changes and ungate the pods its
// admitted slice has room for; delete the Workloads of a deleted Job. MultiKueue (docs/
// multikueue.md): a manager's Job carries its manifest in its Workload and mirrors the worker's
// status; a worker's Job adopts the copy it was made for and reports its status. Every step reads the
// caches (the Job and Pod informers, the AdmitdLink) and writes at most what the step needs, so
// a reconcile can be repeated at any time and after any restart.
//
//   JobReconciler r(kube, link, jobs, pods, events, options);
//   absl::Status s = r.Reconcile("ns/job");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys (a WorkQueue never
// hands the same key to two workers).
#ifndef ADMITD_CLIENTS_SHIM_JOB_RECONCILER_H_
#define ADMITD_CLIENTS_SHIM_JOB_RECONCILER_H_

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/event_recorder.h"
#include "clients/shim/informer.h"
#include "clients/shim/job_workload.h"
#include "clients/shim/kube_client.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The reportingComponent of the events the shim records on Jobs (Kueue's).
inline constexpr char kJobController[] = "batch/job-kueue-controller";
// The annotation on a Job's Workload with a digest of the Job's containers and init containers
// (what Kueue's equivalence compares, §1.8, beyond what a Workload keeps of them).
inline constexpr char kContainersDigestAnnotation[] = "admitd.io/job-containers-digest";

struct JobReconcilerOptions {
  std::string cluster;
  // Namespaces whose Jobs are never managed (Kueue's managedJobsNamespaceSelector default:
  // kube-system and the shim's own namespace).
  std::set<std::string> excluded_namespaces;
  bool manage_jobs_without_queue_name = false;
  JobWorkloadOptions workload;
};

struct JobReconcilerCounters {
  std::atomic<int64_t> reconciles{0}, submits{0}, starts{0}, stops{0}, releases{0}, deletes{0},
      resizes{0}, ungated{0}, mirrored{0}, reported{0},
      withdrawn{0};  // MultiKueue: statuses mirrored, statuses reported, worker Jobs deleted
};

class JobReconciler {
 public:
  JobReconciler(const KubeClient& kube, AdmitdLink& admitd, const Informer& jobs,
                const Informer& pods, EventRecorder& events, JobReconcilerOptions options);

  // One reconcile of the Job "namespace/name" (present or deleted). An error means "retry".
  absl::Status Reconcile(const std::string& key);

  const JobReconcilerCounters& counters() const { return counters_; }

 private:
  absl::Status Finalize(const std::string& ns, const std::string& name,
                        const std::vector<v1::Workload>& workloads);
  // A Job with a prebuilt Workload (a MultiKueue worker's Job among them): adopts it, reports
  // the Job's status on a MultiKueue copy, finishes it OutOfSync when the Job no longer
  // matches, then reconciles as usual.
  absl::Status ReconcilePrebuilt(const nlohmann::json& job, const std::string& prebuilt);
  // Whether a cached, unfinished MultiKueue copy replaces ns/name (an elastic scale-up slice).
  bool HasReplacement(const std::string& ns, const std::string& name) const;
  // Whether the API server holds Job ns/name with `uid` now and is not deleting it: a live read,
  // not the informer's cache.
  absl::StatusOr<bool> IsCurrent(const std::string& ns, const std::string& name,
                                 const std::string& uid) const;
  absl::Status ReconcileElastic(const nlohmann::json& job, const v1::Workload& built,
                                std::vector<v1::Workload> owned);
  absl::Status ReconcileWith(const nlohmann::json& job, const v1::Workload& built,
                             const v1::Workload* workload, bool elastic);
  // Records CreatedWorkload when it created one and `record_created`.
  absl::Status Submit(const nlohmann::json& job, const v1::Workload& built,
                      bool record_created = true);
  absl::Status DeleteWorkload(const v1::Workload& workload);
  absl::Status Start(const nlohmann::json& job, const v1::Workload& workload, bool elastic);
  // Stops the Job (three steps, §2.3), restoring the templates of `workload` (none: only
  // suspends); records Stopped with `message` when it suspended the Job now.
  absl::Status Stop(const nlohmann::json& job, const v1::Workload* workload,
                    const std::string& message);
  absl::Status Ungate(const nlohmann::json& job, const std::vector<v1::Workload>& slices);
  absl::Status ReleaseQuota(const v1::ReleaseQuotaRequest& request);
  // A merge patch of the Job carrying its resourceVersion (409 → retry), skipped when it would
  // change nothing.
  absl::Status PatchJob(const nlohmann::json& job, nlohmann::json patch, bool status = false);
  bool Equivalent(const nlohmann::json& job, const v1::Workload& built,
                  const v1::Workload& workload) const;
  // The Workload the Job makes (with the shim's label and digest), built once per Job version.
  absl::StatusOr<v1::Workload> Build(const std::string& key, const nlohmann::json& job);

  const KubeClient& kube_;
  AdmitdLink& admitd_;
  const Informer& jobs_;
  const Informer& pods_;
  EventRecorder& events_;
  const JobReconcilerOptions options_;
  JobReconcilerCounters counters_;
  struct Built {
    std::string uid, resource_version;
    v1::Workload workload;
  };
  absl::Mutex built_mu_;
  std::map<std::string, Built> built_ ABSL_GUARDED_BY(built_mu_);  // by "ns/name"
};

// Digest of a Job template's containers and initContainers (hex).
std::string ContainersDigest(const nlohmann::json& pod_template);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_JOB_RECONCILER_H_
