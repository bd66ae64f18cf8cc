// The shim's side of admitd's plain-pod integration (KEP-976, docs/shim-protocol.md): reports the
// cluster's managed pods to PodService as they change (in batches; a full snapshot when it starts
// leading), and applies admitd's directives to them idempotently — UNGATE (the node selector
// merged and the gate removed in one patch, as Kubernetes requires of a gated pod), DELETE (after
// the TerminationTarget condition), REMOVE_FINALIZER — from report answers, from ListDirectives
// and from the directive watch, each once per version of its pod however often it is delivered;
// and records the events admitd's pod reconciles produce, and admitd's refusals of pods
// (Warning PodRefused).
//
//   PodSync sync(kube, link, managed_pods_informer, events, "c1");
//   informer handler: sync.OnPod(type, pod);
//   leader: std::thread t([&] { sync.Run(); });  ... sync.Stop(); t.join();
//
// Thread safety: OnPod from any thread; Run on one; Stop from any (it cancels the calls to admitd
// in flight).
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_SYNC_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_SYNC_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/event_recorder.h"
#include "clients/shim/kube/informer.h"
#include "clients/shim/kube/kube_client.h"

namespace admitd::shim {

// The reportingComponent of the events recorded on pods (Kueue's).
inline constexpr char kPodController[] = "pod-kueue-controller";
// The reason of the Warning event on a pod admitd refused (what Kueue's webhook would have refused
// at creation had it been called: the pod stays gated). The message is admitd's.
inline constexpr char kPodRefusedReason[] = "PodRefused";

struct PodSyncCounters {
  std::atomic<int64_t> reports{0}, reported_pods{0}, report_errors{0}, ungated{0}, deleted{0},
      finalizers_removed{0}, directive_errors{0};
};

class PodSync {
 public:
  PodSync(const KubeClient& kube, AdmitdLink& admitd, const Informer& pods, EventRecorder& events,
          std::string cluster);

  // Every change the managed-pod informer applies.
  void OnPod(const std::string& type, const nlohmann::json& pod);
  // Until Stop: a full snapshot, then the directives listed and watched (listing again after any
  // break), and the changed pods reported every 20 ms.
  void Run();
  void Stop();

  // One directive (also for tests). OK when done or not applicable any more.
  absl::Status Apply(const v1::PodDirective& directive);

  const PodSyncCounters& counters() const { return counters_; }

 private:
  absl::Status ReportAll();
  absl::Status ReportChanged();
  absl::Status Send(v1::ReportPodsRequest& request);
  void WatchDirectives();  // the directive stream, on its own thread
  void Record(const v1::PodEvent& event);
  // Logs admitd's refusal of a pod and, once per pod and message, records it on the pod.
  void RecordRefusal(const v1::PodReportError& error);
  // Apply; on failure, count it and report the pod again in a second (its answer lists the
  // directive again while it is outstanding).
  void ApplyOrRetry(const v1::PodDirective& directive);
  // An RPC in flight, for Stop to cancel: false (and not registered) once stopping.
  bool Track(grpc::ClientContext* ctx);
  void Untrack(grpc::ClientContext* ctx);

  const KubeClient& kube_;
  AdmitdLink& admitd_;
  const Informer& pods_;
  EventRecorder& events_;
  const std::string cluster_;
  std::unique_ptr<v1::PodService::Stub> stub_;
  std::atomic<bool> stopped_{false};
  PodSyncCounters counters_;

  absl::Mutex mu_;
  // Pods changed since the last report: key -> the uid of a deleted pod (nullopt: present).
  std::map<std::string, std::optional<std::string>> changed_ ABSL_GUARDED_BY(mu_);
  // Pods whose directive failed: reported again (from the cache) once the time passes.
  std::map<std::string, absl::Time> retry_ ABSL_GUARDED_BY(mu_);
  // The calls in flight (reports, lists, the watch): Stop cancels them, so that a stop does not
  // wait out a slow or hung admitd.
  std::set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(mu_);
  // Directives applied, by "<pod uid>/<action>/<gate>" (until the pod is deleted): the newest
  // resourceVersion of the pod their writes made (a cached pod not newer has seen the directive
  // applied already), and whether a thread is applying it now.
  struct Applied {
    int64_t version = 0;
    bool busy = false;
  };
  std::map<std::string, Applied> applied_ ABSL_GUARDED_BY(mu_);
  // The last refusal recorded on each pod, by uid (until the pod is deleted).
  std::map<std::string, std::string> refused_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_POD_POD_SYNC_H_
