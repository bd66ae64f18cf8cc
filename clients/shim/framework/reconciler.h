// The one reconcile of a job of any integration against its Workloads in admitd (Kueue's
// jobframework reconciler, kueue-jobframework.md §1.7): submit the Workload the job asks for;
// start the job when its Workload is admitted (with the admission's pod set info); stop it when
// the Workload is evicted or loses its admission (suspend, restore the templates) and give the
// quota back once no pod is active; finish the Workload when the job finishes; report
// reclaimable pods and pod readiness; replace a Workload the job no longer matches (§1.8); resize
// an elastic job's Workload when its counts change and ungate the pods its admitted slice has
// room for; adopt a prebuilt Workload (a MultiKueue worker's copy among them) and report the
// job's status to it; mirror a MultiKueue manager's job from its worker; delete the Workloads of
// a deleted job. What differs between kinds is asked of the GenericJob the integration wraps the
// object in.
//
// Every step reads the caches (the kind's informers, admitd's) and writes at most what the step
// needs, so a reconcile can be repeated at any time and after any restart.
//
//   Reconciler r(*registry.Find("batch/job"), registry, kube, admitd, jobs, pods, events, options);
//   absl::Status s = r.Reconcile("ns/job");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys (a WorkQueue never
// hands the same key to two workers).
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_RECONCILER_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_RECONCILER_H_

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/integration.h"
#include "clients/shim/framework/interfaces.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The annotation on a job's Workload with the digest of its pod sets' containers and init
// containers (what Kueue's equivalence compares, §1.8, beyond what a Workload keeps of them).
inline constexpr char kContainersDigestAnnotation[] = "admitd.io/job-containers-digest";

struct ReconcilerCounters {
  std::atomic<int64_t> reconciles{0}, submits{0}, starts{0}, stops{0}, releases{0}, deletes{0},
      resizes{0}, ungated{0},
      mirrored{0},   // MultiKueue manager: statuses set from the worker's job
      reported{0},   // MultiKueue worker: statuses reported to the copy
      withdrawn{0};  // MultiKueue worker: jobs deleted because the manager withdrew the copy
};

class Reconciler {
 public:
  // `objects` caches integration.CollectionPath(); `pods` its pods_path and `children` its
  // children_path (NoObjects() when it has none).
  Reconciler(const Integration& integration, const IntegrationRegistry& registry,
             const KubeApi& kube, AdmitdApi& admitd, const ObjectCache& objects,
             const ObjectCache& pods, EventSink& events, FrameworkOptions options,
             const ObjectCache& children = NoObjects());

  // One reconcile of the object "namespace/name" (present or deleted). An error means "retry".
  absl::Status Reconcile(const std::string& key);

  const ReconcilerCounters& counters() const { return counters_; }
  const Integration& integration() const { return integration_; }

 private:
  absl::Status Finalize(const std::string& key, const std::vector<v1::Workload>& workloads);
  // ---- reconciler_children.cc ----
  // The top-level managed ancestor of an object (Kueue's FindAncestorJobManagedByKueue, §1.2
  // step 4): up its controller references through the enabled kinds (and ReplicaSets, with
  // Deployments), each read from the API server and matching the reference's uid, the topmost
  // one of a kind with a GenericJob and a queue name (any, with manage_jobs_without_queue_name).
  // nullopt: the object is top-level. NOT_FOUND when an owner is gone; FAILED_PRECONDITION on a cycle;
  // RESOURCE_EXHAUSTED past kManagedOwnersChainLimit hops.
  struct Ancestor {
    const Integration* integration = nullptr;
    nlohmann::json object;
  };
  absl::StatusOr<std::optional<Ancestor>> FindManagedAncestor(const nlohmann::json& object) const;
  // What a failed walk means for the reconcile: an owner that is gone leaves the object to the
  // garbage collector (OK); too deep a chain records JobNestingTooDeep; the rest is retried.
  absl::Status ReportAncestorError(const nlohmann::json& object, const absl::Status& error);
  // A child of a managed object (Kueue's non-top-level job, §1.2 step 6): it never gets a
  // Workload; running while its ancestor has no unfinished Workload, or one not admitted (an
  // elastic one: evicted), it is suspended ("Kueue managed child job suspended").
  absl::Status ReconcileChild(const nlohmann::json& object, const Ancestor& ancestor);
  // The object's pods in the pods cache: those it controls, or those its kind's label names it
  // in (IntegrationInfo::pods_by_label); none for a kind without a pods_path. Its children.
  std::vector<nlohmann::json> PodsOf(const nlohmann::json& object) const;
  Related RelatedOf(const nlohmann::json& object) const;
  // A job with a prebuilt Workload: adopts it, reports the job's status on a MultiKueue copy,
  // finishes it OutOfSync when the job no longer matches, then reconciles as usual.
  absl::Status ReconcilePrebuilt(const GenericJob& job, const std::string& prebuilt);
  // Whether a cached, unfinished MultiKueue copy replaces ns/name (an elastic scale-up slice).
  bool HasReplacement(const std::string& ns, const std::string& name) const;
  // Whether the API server holds the object ns/name with `uid` now and is not deleting it: a
  // live read, not the informer's cache.
  absl::StatusOr<bool> IsCurrent(const std::string& ns, const std::string& name,
                                 const std::string& uid) const;
  // The ordinary path: one Workload that matches the job, the others replaced (§1.7 step 1).
  absl::Status ReconcileMatching(const GenericJob& job, const v1::Workload& built,
                                 const std::vector<v1::Workload>& owned);
  absl::Status ReconcileElastic(const GenericJob& job, const v1::Workload& built,
                                const std::vector<v1::Workload>& owned);
  absl::Status ReconcileWith(const GenericJob& job, const v1::Workload& built,
                             const v1::Workload* workload, bool elastic);
  // Records CreatedWorkload when it created one and `record_created`.
  absl::Status Submit(const GenericJob& job, const v1::Workload& built,
                      bool record_created = true);
  absl::Status Resize(const GenericJob& job, const v1::Workload& built);
  absl::Status DeleteWorkload(const v1::Workload& workload);
  absl::Status ReleaseQuota(const v1::ReleaseQuotaRequest& request);
  absl::Status Start(const GenericJob& job, const v1::Workload& workload, bool elastic);
  // Stops the job (its StopPlan, step by step), restoring the templates of `workload` (none:
  // only suspends); records Stopped with `message` when it suspended the job now.
  absl::Status Stop(const GenericJob& job, const v1::Workload* workload,
                    const std::string& message);
  absl::Status Ungate(const GenericJob& job, const v1::Workload& slice);
  // A merge patch of the object carrying its resourceVersion (409: retry), skipped when it would
  // change nothing; the object as the API server answered.
  absl::StatusOr<nlohmann::json> PatchObject(const nlohmann::json& object, nlohmann::json patch,
                                             bool status = false);
  bool Equivalent(const v1::Workload& built, const v1::Workload& workload) const;
  // The Workload the job makes (with the shim's label and digest), built once per version.
  absl::StatusOr<v1::Workload> Build(const std::string& key, const GenericJob& job);
  void RecordEvent(const GenericJob& job, const std::string& reason, const std::string& message);

  const Integration& integration_;
  const IntegrationRegistry& registry_;
  const KubeApi& kube_;
  AdmitdApi& admitd_;
  const ObjectCache& objects_;
  const ObjectCache& pods_;
  const ObjectCache& children_;
  EventSink& events_;
  const FrameworkOptions options_;
  ReconcilerCounters counters_;
  struct Built {
    std::string uid, resource_version;
    v1::Workload workload;
  };
  absl::Mutex built_mu_;
  std::map<std::string, Built> built_ ABSL_GUARDED_BY(built_mu_);  // by "ns/name"
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_RECONCILER_H_
