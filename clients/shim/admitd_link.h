// The cluster shim's side of admitd: one gRPC channel with keepalive, and a cache of what the shim
// reads from admitd (the Workloads of this cluster's Jobs, RayClusters and pods, the
// ResourceFlavors) kept current by
// listing, then watching from the list's revision; a broken watch resumes from the last revision
// seen, and one the server cannot resume (OUT_OF_RANGE) lists again. While admitd cannot be
// reached the link says so (Reachable, LastError) and retries with a backoff (0.5 s doubling to
// 30 s); a list an overloaded admitd refused is retried after the delay admitd advised (and the
// link stays reachable). Workload events (Kueue's, kind OBJECT_KIND_EVENT) and Namespace
// deletions are passed on as they arrive.
//
//   AdmitdLink link({.admitd = {.target = "admitd:50051"}, .cluster = "c1"}, on_workload,
//                   on_event);
//   std::thread t([&] { link.Run(); });
//   for (const v1::Workload& wl : link.WorkloadsOf("Job", "ns", "job")) ...
//
// Thread safety: Run on one thread; everything else from any.
#ifndef ADMITD_CLIENTS_SHIM_ADMITD_LINK_H_
#define ADMITD_CLIENTS_SHIM_ADMITD_LINK_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/queue_service.grpc.pb.h"
#include "clients/shim/framework/interfaces.h"
#include "common/connection.h"
#include "common/kueue_keys.h"

namespace admitd::shim {

// The label the shim puts on the Workloads of its cluster's Jobs and RayClusters: which cluster
// they belong to.
// The label admitd puts on the Workloads of a cluster's pods and pod groups.

// The owner kinds of the Job and RayCluster integrations (the kinds a link caches unless told
// others: AdmitdLinkOptions::owner_kinds).
inline constexpr char kJobOwnerKind[] = "Job";
inline constexpr char kRayClusterOwnerKind[] = "RayCluster";

struct AdmitdLinkOptions {
  ConnectionOptions admitd;  // address and credentials (Connect must accept them)
  std::string cluster;  // Workloads labelled with another cluster are not cached
  absl::Duration max_backoff = absl::Seconds(30);
  // Also cache the pod Workloads of this cluster (label admitd.io/pod-cluster): their events go
  // on their pods, and they are mirrored.
  bool pod_workloads = false;
  // Called with the name of every Namespace object deleted in admitd (by this shim or by the
  // shim of another cluster that shares admitd), from the watch's thread.
  std::function<void(const std::string& name)> on_namespace_deleted;
  // The controller owners (apiVersion, kind) whose Workloads are cached: the shim's integrations.
  std::set<std::pair<std::string, std::string>> owner_kinds = {{"batch/v1", kJobOwnerKind},
                                                               {"ray.io/v1", kRayClusterOwnerKind}};
};

class AdmitdLink : public AdmitdApi {
 public:
  // Called for every Workload change the link applies (after the cache has it); `deleted` when it
  // is gone.
  using WorkloadHandler = std::function<void(const v1::Workload& workload, bool deleted)>;
  using EventHandler = std::function<void(const v1::Event& event)>;

  AdmitdLink(AdmitdLinkOptions options, WorkloadHandler on_workload, EventHandler on_event);
  ~AdmitdLink();

  // List, then watch, until Stop.
  void Run();
  void Stop();

  v1::AdmissionService::Stub& admission() { return *admission_; }
  v1::QueueService::Stub& queues() { return *queues_; }
  // The channel, for other services' stubs (PodService).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

  // True once the first list completed.
  bool Synced() const { return synced_.load(); }
  // False from a failed call until the next successful one.
  bool Reachable() const { return reachable_.load(); }
  // "" when reachable; else why not and since when.
  std::string UnreachableReason() const;
  // Reports the outcome of any call to admitd (the watch's, or a write's): whether it reached it.
  void ReportCall(const grpc::Status& status);

  // The cached Workloads whose controller owner is the `kind` (Job, RayCluster) named
  // `ns`/`owner_name`, oldest first (creation time, then name). A Job and a RayCluster of the
  // same name have Workloads of their own.
  std::vector<v1::Workload> WorkloadsOf(const std::string& kind, const std::string& ns,
                                        const std::string& owner_name) const override;
  std::optional<v1::Workload> Workload(const std::string& ns,
                                       const std::string& name) const override;
  // "ns/name" of every owner of `kind` that owns a cached Workload.
  std::vector<std::string> OwnerKeys(const std::string& kind) const;
  // "ns/name" of every cached MultiKueue copy (a manager's copy, labelled with this cluster:
  // cached with or without an owner).
  std::vector<std::string> CopyKeys() const override;
  std::map<std::string, v1::ResourceFlavor> Flavors() const override;

  // The writes of AdmitdApi (admitd_link_writes.cc): each with a deadline and the reconcile's
  // traceparent (reconcile::SetDeadline), its outcome reported (ReportCall) and its answer
  // remembered.
  absl::StatusOr<v1::SubmitResponse> Submit(const v1::SubmitRequest& request) override;
  absl::StatusOr<v1::ResizeResponse> Resize(const v1::ResizeRequest& request) override;
  absl::Status ReleaseQuota(const v1::ReleaseQuotaRequest& request) override;
  absl::Status DeleteWorkload(const v1::Workload& workload) override;
  absl::StatusOr<v1::Workload> UpdateRemoteJob(const v1::UpdateRemoteJobRequest& request) override;
  absl::Status ReportPodsReady(const v1::ReportPodsReadyRequest& request) override;
  absl::Status SetActive(const v1::SetActiveRequest& request) override;
  // Applies the Workload a write answered, unless the cache already has a newer version or the
  // watch has gone past it and it is not cached (deleted since): read your writes before the
  // watch delivers them, never bring a deleted Workload back.
  void Remember(const v1::Workload& workload);
  // Drops the cached Workload ns/name if it is the one with `uid` (a Workload of the same name
  // made since stays).
  void Forget(const std::string& ns, const std::string& name, const std::string& uid);

  uint64_t revision() const;
  int lists() const { return lists_.load(); }

 private:
  absl::Status List();
  // One watch from the last revision until it breaks (OUT_OF_RANGE: list again).
  absl::Status WatchOnce();
  bool Cached(const v1::Workload& workload) const;  // of this cluster's Jobs and RayClusters
  // A watch event, or with `answered` a write's answer (Remember).
  void ApplyWorkload(const v1::Workload& workload, bool deleted, bool answered);
  void IndexLocked(const v1::Workload& workload, bool add) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AdmitdLinkOptions options_;
  const WorkloadHandler on_workload_;
  const EventHandler on_event_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
  std::unique_ptr<v1::QueueService::Stub> queues_;

  std::atomic<bool> stopped_{false};
  std::atomic<bool> synced_{false};
  std::atomic<bool> reachable_{true};
  std::atomic<int> lists_{0};

  mutable absl::Mutex mu_;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;  // to cancel on Stop
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, v1::Workload> workloads_ ABSL_GUARDED_BY(mu_);  // "ns/name"
  // "kind/ns/owner name" -> the keys of the Workloads that owner controls.
  std::map<std::string, std::set<std::string>> by_owner_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::ResourceFlavor> flavors_ ABSL_GUARDED_BY(mu_);
  std::string unreachable_reason_ ABSL_GUARDED_BY(mu_);
  absl::Time unreachable_since_ ABSL_GUARDED_BY(mu_);
};

// Helpers over a Workload's status.
bool ConditionTrue(const v1::Workload& workload, const std::string& type);
const v1::Condition* FindCondition(const v1::Workload& workload, const std::string& type);
// The controller owner reference (or the first), nullptr when none.
const v1::OwnerReference* ControllerOwner(const v1::Workload& workload);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_ADMITD_LINK_H_
