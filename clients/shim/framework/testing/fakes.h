// In-memory stand-ins for what a reconcile talks to (framework/interfaces.h), for unit tests
// that run the generic reconcile without an API server or admitd: controller-runtime's fake
// client and fake recorder, and a fake admitd that keeps Workloads and records every call.
//
//   FakeKube kube;  FakeCache jobs(kube, "/apis/example.com/v1/fakejobs");
//   FakeAdmitd admitd;  FakeEvents events;
//   kube.Put("/apis/example.com/v1/namespaces/ns/fakejobs/a", job);  jobs.Sync();
//   Reconciler r(integration, registry, kube, admitd, jobs, pods, events, {.cluster = "c"});
//   r.Reconcile("ns/a");  admitd.Admit("ns", name, "cq", {{"cpu", "on-demand"}});
//
// Thread safety: each fake is safe for concurrent calls (one mutex).
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_FAKES_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_FAKES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "clients/shim/framework/interfaces.h"

namespace admitd::shim::testing {

// An API server of objects by path. Patches are JSON merge patches; a patch or update that
// carries metadata.resourceVersion must match the object's (ABORTED otherwise); every write
// bumps it. "<path>/status" writes the same object. Each write is recorded.
class FakeKube : public KubeApi {
 public:
  struct Write {
    std::string verb;  // PATCH, CREATE, UPDATE, DELETE
    std::string path;
    nlohmann::json body;
  };

  // Stores `object` at `path` with a new resourceVersion (and a uid when it has none), as a
  // write by someone else would.
  void Put(const std::string& path, nlohmann::json object);
  std::optional<nlohmann::json> Object(const std::string& path) const;
  std::vector<std::string> Paths() const;  // of every object held
  std::vector<Write> writes() const;
  void ClearWrites();
  // The next write to `path` fails with `status` (once).
  void FailNext(const std::string& path, absl::Status status);

  absl::StatusOr<nlohmann::json> Get(const std::string& path) const override;
  absl::StatusOr<nlohmann::json> Create(const std::string& path,
                                        const nlohmann::json& body) const override;
  absl::StatusOr<nlohmann::json> Update(const std::string& path,
                                        const nlohmann::json& body) const override;
  absl::StatusOr<nlohmann::json> Patch(
      const std::string& path, const nlohmann::json& body,
      const std::string& content_type = "application/merge-patch+json") const override;
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) const override;
  absl::StatusOr<nlohmann::json> DeleteUid(const std::string& path, const std::string& uid,
                                           const std::string& propagation = "") const override;

 private:
  absl::Status Injected(const std::string& path) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  mutable std::map<std::string, nlohmann::json> objects_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<Write> writes_ ABSL_GUARDED_BY(mu_);
  mutable std::map<std::string, absl::Status> fail_ ABSL_GUARDED_BY(mu_);
  mutable int64_t version_ ABSL_GUARDED_BY(mu_) = 1;
};

// An informer's cache over a FakeKube collection: Sync copies what the API server holds under
// `collection` (a path prefix) now, as a watch would have delivered it.
class FakeCache : public ObjectCache {
 public:
  FakeCache(const FakeKube& kube, std::string collection);
  void Sync();

  std::optional<nlohmann::json> Get(const std::string& key) const override;
  std::vector<nlohmann::json> Select(
      const std::function<bool(const nlohmann::json&)>& keep) const override;
  std::vector<nlohmann::json> ControlledBy(const std::string& uid) const override;
  std::vector<std::string> Keys() const override;

 private:
  const FakeKube& kube_;
  const std::string collection_;
  mutable absl::Mutex mu_;
  std::map<std::string, nlohmann::json> objects_ ABSL_GUARDED_BY(mu_);  // "ns/name"
};

class FakeEvents : public EventSink {
 public:
  struct Event {
    std::string object;  // "namespace/name"
    std::string type, reason, message, component;
  };
  void Record(const nlohmann::json& object, const std::string& type, const std::string& reason,
              const std::string& message, const std::string& component) override;
  std::vector<Event> events() const;
  // The reasons recorded, in order.
  std::vector<std::string> reasons() const;
  void Clear();

 private:
  mutable absl::Mutex mu_;
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
};

// admitd's Workloads in memory. Submit stores the Workload (pending: no conditions), unless one
// of that name exists (then `created` is false). The test moves Workloads through their life
// with Admit, Evict and the other setters; the reconcile's writes apply what admitd would (a
// finished release sets Finished, a stopped one drops the reservation, ...). Every write is
// recorded by its method's name.
class FakeAdmitd : public AdmitdApi {
 public:
  struct Call {
    std::string method;  // Submit, Resize, ReleaseQuota, DeleteWorkload, UpdateRemoteJob, ...
    std::string workload;  // "ns/name" (Resize: the job's)
    std::string request;   // the request, as text
  };

  void SetFlavor(const v1::ResourceFlavor& flavor);
  // QuotaReserved and Admitted, in `cluster_queue`, every pod set on `flavors` (resource ->
  // flavor) with its whole count.
  void Admit(const std::string& ns, const std::string& name, const std::string& cluster_queue,
             const std::map<std::string, std::string>& flavors);
  // Evicted=True with `message`; the reservation stays until the quota is released.
  void Evict(const std::string& ns, const std::string& name, const std::string& message);
  void SetCondition(const std::string& ns, const std::string& name, const std::string& type,
                    const std::string& status, const std::string& reason = "");
  void Put(const v1::Workload& workload);
  std::vector<Call> calls() const;
  std::vector<std::string> methods() const;  // the calls' methods, in order
  void ClearCalls();
  // The next call of `method` fails with `status` (once).
  void FailNext(const std::string& method, absl::Status status);

  std::vector<v1::Workload> WorkloadsOf(const std::string& kind, const std::string& ns,
                                        const std::string& owner_name) const override;
  std::optional<v1::Workload> Workload(const std::string& ns,
                                       const std::string& name) const override;
  std::vector<std::string> CopyKeys() const override;
  std::map<std::string, v1::ResourceFlavor> Flavors() const override;
  absl::StatusOr<v1::SubmitResponse> Submit(const v1::SubmitRequest& request) override;
  absl::StatusOr<v1::ResizeResponse> Resize(const v1::ResizeRequest& request) override;
  absl::Status ReleaseQuota(const v1::ReleaseQuotaRequest& request) override;
  absl::Status DeleteWorkload(const v1::Workload& workload) override;
  absl::StatusOr<v1::Workload> UpdateRemoteJob(const v1::UpdateRemoteJobRequest& request) override;
  absl::Status ReportPodsReady(const v1::ReportPodsReadyRequest& request) override;
  // spec.active; deactivating a Workload that holds quota evicts it (Deactivated).
  absl::Status SetActive(const v1::SetActiveRequest& request) override;

 private:
  // Records the call; the injected failure for `method`, if any.
  absl::Status Begin(const std::string& method, const std::string& workload,
                     const google::protobuf::Message& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Workload* Find(const std::string& ns, const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, v1::Workload> workloads_ ABSL_GUARDED_BY(mu_);  // "ns/name"
  std::map<std::string, v1::ResourceFlavor> flavors_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> fail_ ABSL_GUARDED_BY(mu_);
  int64_t next_uid_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t clock_ ABSL_GUARDED_BY(mu_) = 1000;  // creation times, one second apart
};

// Sets (or replaces) the condition `type` of `workload`.
void SetWorkloadCondition(v1::Workload* workload, const std::string& type,
                          const std::string& status, const std::string& reason = "",
                          const std::string& message = "");

}  // namespace admitd::shim::testing

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_FAKES_H_
