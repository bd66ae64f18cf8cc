// MultiKueueWorker: the worker cluster's side of MultiKueue in the shim (docs/multikueue.md).
//
// A manager admitd dispatches copies of a Workload to this cluster's admitd; the copy that wins
// receives the job's manifest (Workload.remote_job.manifest). For such a copy this creates the
// object in this cluster, of any kind with a MultiKueue adapter whose integration is enabled
// here (a Job, JobSet, RayJob, RayCluster, PyTorchJob), or the pods of a pod Workload (a plain
// pod, a pod group, a Deployment's or StatefulSet's pods; integrations/pod/pod_multikueue.h) when
// the pod integration runs here: suspended (pods: gated), without managedBy, with the
// manager's origin label and the copy as its prebuilt Workload (WorkerObjectFor). From then on
// the kind's reconciler owns it: it adopts the copy, starts the object, reports its status back
// and deletes it when the manager withdraws the copy. An elastic object moves to the scale-up
// slice that replaces its copy once that slice is admitted here (its prebuilt Workload, then its
// counts: a Job's parallelism in the same write, another kind's by its reconcile). Enabled by --multikueue-worker: without it the shim never creates an object it
// was not given by a user.
//
//   MultiKueueWorker worker(kube, link, registry, objects_of);
//   absl::Status s = worker.Reconcile("ns/workload");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys.
#ifndef ADMITD_CLIENTS_SHIM_MULTIKUEUE_WORKER_H_
#define ADMITD_CLIENTS_SHIM_MULTIKUEUE_WORKER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include <functional>

#include "clients/shim/admitd_link.h"
#include "clients/shim/framework/integration.h"
#include "clients/shim/kube/informer.h"
#include "clients/shim/kube/kube_client.h"

namespace admitd::shim {

class MultiKueueWorker {
 public:
  // The cache of an enabled integration's objects, nullptr when it is not enabled here.
  using ObjectsOf = std::function<const ObjectCache*(const Integration& integration)>;

  // `pods`: the managed pods' cache, nullptr without the pod integration.
  MultiKueueWorker(const KubeClient& kube, const AdmitdLink& admitd,
                   const IntegrationRegistry& registry, ObjectsOf objects_of,
                   const ObjectCache* pods);

  // One reconcile of the copy "namespace/name": creates its object when it carries a manifest
  // of an enabled kind and the object does not exist yet.
  absl::Status Reconcile(const std::string& key);

  // The keys of every cached copy a manager dispatched here (for a resync).
  std::vector<std::string> Keys() const;

  int64_t created() const { return created_.load(); }  // objects of any kind
  int64_t moved() const { return moved_.load(); }  // Jobs moved to a scale-up slice

 private:
  // The elastic object running on the copy `replaced` (ns/name) moves to `copy`: true when one
  // did.
  absl::StatusOr<bool> MoveToSlice(const v1::Workload& copy, const std::string& replaced);
  // The pods of a copy whose manifest is a list of pods, those not created yet.
  absl::Status CreatePods(const v1::Workload& copy);

  const KubeClient& kube_;
  const AdmitdLink& admitd_;
  const IntegrationRegistry& registry_;
  const ObjectsOf objects_of_;
  const ObjectCache* const pods_;
  std::atomic<int64_t> created_{0};
  std::atomic<int64_t> moved_{0};
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_MULTIKUEUE_WORKER_H_
