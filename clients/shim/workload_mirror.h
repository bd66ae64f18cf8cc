// Mirrors admitd's Workloads of this cluster as read-only `kueue.x-k8s.io/v1beta2` Workload
// objects in the cluster (admitd-shim --mirror-workloads), so that Kueue's habits work:
// `kubectl get workloads`, `kubectl describe workload` (with Kueue's events on it). admitd stays
// the source of truth: each change admitd reports is written (created, spec replaced, status
// through /status), a Workload gone from admitd is deleted, and mirrored objects admitd no longer
// has are deleted on a resync. Mirrored objects carry the label admitd.io/mirror: "true".
//
//   WorkloadMirror mirror(kube, events);
//   mirror.OnWorkload(wl, /*deleted=*/false);   // from the AdmitdLink handler
//   std::thread t([&] { mirror.Run(); });  ...  mirror.Stop(); t.join();
//
// Thread safety: OnWorkload, OnEvent, Resync and Stop from any thread; Run on one.
#ifndef ADMITD_CLIENTS_SHIM_WORKLOAD_MIRROR_H_
#define ADMITD_CLIENTS_SHIM_WORKLOAD_MIRROR_H_

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "admitd/v1/objects.pb.h"
#include "clients/shim/kube/event_recorder.h"
#include "clients/shim/kube/kube_client.h"
#include "clients/shim/kube/work_queue.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

inline constexpr char kMirrorLabel[] = "admitd.io/mirror";

// The Kueue Workload object (apiVersion, kind, metadata, spec, status) for an admitd Workload, as
// the cluster stores it: Kueue's field names, integers as numbers, times as RFC 3339.
nlohmann::json KueueWorkloadJson(const v1::Workload& workload);

class WorkloadMirror {
 public:
  WorkloadMirror(const KubeClient& kube, EventRecorder& events);

  void OnWorkload(const v1::Workload& workload, bool deleted);
  // Kueue's event on a Workload, recorded on its mirror.
  void OnEvent(const v1::Event& event);
  // Deletes the mirrors of Workloads this mirror has not been given (call once it has been given
  // every Workload admitd has for this cluster: after the AdmitdLink's list).
  absl::Status Resync();
  void Run();
  void Stop();

  int64_t writes() const { return writes_.load(); }

 private:
  absl::Status Apply(const std::string& key);

  const KubeClient& kube_;
  EventRecorder& events_;
  WorkQueue queue_;
  std::atomic<int64_t> writes_{0};
  absl::Mutex mu_;
  std::map<std::string, std::optional<v1::Workload>> latest_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> uids_ ABSL_GUARDED_BY(mu_);  // of the mirrored objects
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WORKLOAD_MIRROR_H_
