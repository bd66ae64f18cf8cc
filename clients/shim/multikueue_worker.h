// MultiKueueWorker: the worker cluster's side of MultiKueue in the shim (docs/multikueue.md).
//
// A manager admitd dispatches copies of a Workload to this cluster's admitd; the copy that wins
// receives the job's manifest (Workload.remote_job.manifest). For such a copy this creates the
// Job in this cluster: suspended, without managedBy, with the manager's origin label and the
// copy as its prebuilt Workload (WorkerJobFor). From then on the Job reconciler owns the Job: it
// adopts the copy, starts the Job, reports its status back and deletes the Job when the manager
// withdraws the copy. An elastic Job moves to the scale-up slice that replaces its copy once
// that slice is admitted here (its prebuilt Workload and parallelism follow it). Enabled by
// --multikueue-worker: without it the shim never creates a Job it was not given by a user.
//
//   MultiKueueWorker worker(kube, link, jobs);
//   absl::Status s = worker.Reconcile("ns/workload");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_MULTIKUEUE_WORKER_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_MULTIKUEUE_WORKER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/informer.h"
#include "clients/shim/kube/kube_client.h"

namespace admitd::shim {

class MultiKueueWorker {
 public:
  MultiKueueWorker(const KubeClient& kube, const AdmitdLink& admitd, const Informer& jobs);

  // One reconcile of the copy "namespace/name": creates its Job when it carries a manifest and
  // the Job does not exist yet.
  absl::Status Reconcile(const std::string& key);

  // The keys of every cached copy a manager dispatched here (for a resync).
  std::vector<std::string> Keys() const;

  int64_t created() const { return created_.load(); }
  int64_t moved() const { return moved_.load(); }  // Jobs moved to a scale-up slice

 private:
  const KubeClient& kube_;
  const AdmitdLink& admitd_;
  const Informer& jobs_;
  std::atomic<int64_t> created_{0};
  std::atomic<int64_t> moved_{0};
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_MULTIKUEUE_WORKER_H_
