// MultiKueue for pods and pod groups (Kueue's pod adapter), and so for the pods of Deployments
// and StatefulSets (docs/multikueue.md, "Pods, Deployments and StatefulSets").
//
// Manager cluster: admitd composes a pod Workload from the reported pods as usual, and with a
// MultiKueue check dispatches it while the pods stay gated here. PodMultiKueue hands admitd the
// pods' manifests once the Workload is dispatched (remote_job.manifest: a v1 List of Pods, again
// whenever its pods change: a serving group's later pods join it) and
// gives each local pod the status its worker copy reports (remote_job.status, written by the
// worker's admitd from its pods: phase, message, conditions), so that the pods here show what runs
// there and the Workload finishes when they do.
//
// Worker cluster: MultiKueueWorker creates the pods of a winning copy (WorkerPodsFor), gated as
// they were, with the manager's origin label and the copy as their prebuilt Workload; the worker's
// admitd makes them the copy's pods, ungates them, and deletes them once the copy is gone.
//
//   PodMultiKueue mk(kube, admitd, managed_pods, "manager");
//   if (PodMultiKueue::Concerns(wl, "manager")) queue.Add(ns + "/" + name);
//   absl::Status s = mk.Reconcile("ns/workload");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_MULTIKUEUE_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_MULTIKUEUE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/framework/interfaces.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The remote_job manifest of a pod Workload: {"apiVersion": "v1", "kind": "List", "items": [...]}
// with each pod's name, namespace, labels, annotations and spec (its node name dropped).
nlohmann::json PodsManifest(const std::vector<nlohmann::json>& pods);

// Whether a copy's manifest is a list of pods (PodsManifest's shape).
bool IsPodsManifest(const nlohmann::json& manifest);

// The pods a worker cluster's shim creates for `copy`, whose manifest is PodsManifest's: in the
// copy's namespace, with the copy's origin label and the copy as their prebuilt Workload.
// INVALID_ARGUMENT when the manifest is not a list of pods or the copy has no origin label.
absl::StatusOr<std::vector<nlohmann::json>> WorkerPodsFor(const v1::Workload& copy);

// The merge patch of a local pod's /status that makes its phase, message and conditions the
// remote pod's (`remote`: one entry of remote_job.status's "pods"), nullopt when they are the
// same. While the local pod is gated and the remote one is not scheduled, the local
// PodScheduled condition stays (Kueue keeps SchedulingGated there).
std::optional<nlohmann::json> PodStatusPatch(const nlohmann::json& local,
                                             const nlohmann::json& remote);

class PodMultiKueue {
 public:
  PodMultiKueue(const KubeApi& kube, AdmitdApi& admitd, const ObjectCache& pods,
                std::string cluster);

  // A pod Workload of `cluster` (not a worker's copy) that MultiKueue dispatches or dispatched.
  static bool Concerns(const v1::Workload& wl, const std::string& cluster);

  // One reconcile of the Workload "namespace/name": its manifest handed over, its pods' status.
  absl::Status Reconcile(const std::string& key);

  int64_t handed_over() const { return handed_over_.load(); }
  int64_t mirrored() const { return mirrored_.load(); }

 private:
  const KubeApi& kube_;
  AdmitdApi& admitd_;
  const ObjectCache& pods_;
  const std::string cluster_;
  std::atomic<int64_t> handed_over_{0};
  std::atomic<int64_t> mirrored_{0};
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_MULTIKUEUE_H_
