// The reconcile of a kind whose pods are admitted through the pod integration and get labels
// from their controller (Kueue's StatefulSet pod reconciler, kueue-jobframework.md §11.3): for
// one object, every pod it controls is patched as the integration's PodPatchFn says, each patch
// carrying the pod's resourceVersion (a pod changed meanwhile is patched again on the retry).
//
//   PodParentReconciler r(*registry.Find("statefulset"), kube, statefulsets, pods, options);
//   absl::Status s = r.Reconcile("ns/sts");  // error: retry later
//
// Thread safety: Reconcile may run on several threads for different keys.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_POD_PARENT_RECONCILER_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_POD_PARENT_RECONCILER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "clients/shim/framework/integration.h"
#include "clients/shim/framework/interfaces.h"

namespace admitd::shim {

class PodParentReconciler {
 public:
  // `integration` has a pod_patch; `objects` caches its objects, `pods` its pods_path.
  PodParentReconciler(const Integration& integration, const KubeApi& kube,
                      const ObjectCache& objects, const ObjectCache& pods,
                      FrameworkOptions options);

  // Patches the pods of the object "namespace/name"; nothing when it is gone (its pods go with
  // it). An error means "retry".
  absl::Status Reconcile(const std::string& key);

  int64_t patched() const { return patched_.load(); }

 private:
  const Integration& integration_;
  const KubeApi& kube_;
  const ObjectCache& objects_;
  const ObjectCache& pods_;
  const FrameworkOptions options_;
  std::atomic<int64_t> patched_{0};
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_POD_PARENT_RECONCILER_H_
