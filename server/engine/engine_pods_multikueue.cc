// Engine: MultiKueue for pods and pod groups (Kueue's pod adapter). In a manager, a pod
// Workload with a MultiKueue check is admitted but its pods stay gated: they run in a worker.
// In a worker, the copy the manager dispatched takes the pods the worker's shim made from it
// (they carry its name as their prebuilt Workload), and carries their status back to the
// manager; pods whose copy is gone are deleted (engine_pod_directives.cc).
#include <string>
#include <vector>

#include "server/engine/engine_impl.h"
#include "server/pods/multikueue_pods.h"

namespace admitd::engine {

bool Engine::Impl::TakeCopyForPods(WorkloadEntry& entry,
                                   const std::vector<v1::PodObservation>& pods, bool is_group) {
  if (pods.empty() || !pods::AwaitsWorkerPods(entry.object())) return false;
  for (const v1::PodObservation& p : pods) {
    if (pods::PrebuiltWorkloadName(p) != entry.object().metadata().name()) return false;
  }
  IndexChain(entry, /*add=*/false);
  v1::Workload& wl = entry.mutable_object();
  (*wl.mutable_metadata()->mutable_labels())[kPodClusterLabel] = pods.front().cluster();
  if (is_group) (*wl.mutable_metadata()->mutable_annotations())[kIsGroupWorkloadAnnotation] = "true";
  for (const v1::PodObservation& p : pods) {
    v1::OwnerReference* ref = wl.mutable_metadata()->add_owner_references();
    ref->set_api_version("v1");
    ref->set_kind("Pod");
    ref->set_name(p.name());
    ref->set_uid(p.uid());
    ref->set_controller(!is_group);
  }
  IndexChain(entry, /*add=*/true);
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "OwnerReferencesAdded",
               "taken by the pods made from this copy");
  return true;
}

void Engine::Impl::ReportPodsToManager(WorkloadEntry& entry,
                                       const std::vector<v1::PodObservation>& pods) {
  const v1::Workload& wl = entry.object();
  if (wl.metadata().labels().count(kMultiKueueOriginLabel) == 0 || pods.empty() ||
      !pods::IsMultiKueueWorkerPod(pods.front())) {
    return;
  }
  std::string status = pods::RemotePodsStatus(pods);
  if (wl.remote_job().status() == status) return;
  entry.mutable_object().mutable_remote_job()->set_status(std::move(status));
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Updated", "");
}

bool Engine::Impl::RunsElsewhere(const v1::Workload& wl) const {
  for (const v1::AdmissionCheckState& s : wl.status().admission_checks()) {
    if (IsMultiKueueCheck(s.name())) return true;
  }
  return false;
}

}  // namespace admitd::engine
