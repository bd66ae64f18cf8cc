// The four things a reconcile talks to, as interfaces small enough to fake (controller-runtime's
// client.Reader / client.Writer / record.EventRecorder, and admitd in the place of the API
// server's Workloads): the informer cache it reads Kubernetes objects from, the API server it
// writes to, the event recorder, and admitd with the link's cache of Workloads. The real ones are
// Informer, KubeClient, EventRecorder and AdmitdLink; framework/testing/fakes.h has in-memory ones
// for unit tests.
//
// Thread safety: every implementation may be called from several reconciles at once.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_INTERFACES_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_INTERFACES_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/objects.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// A local, eventually consistent copy of one Kubernetes collection (an informer's store).
class ObjectCache {
 public:
  virtual ~ObjectCache() = default;
  // The object "namespace/name" (or "name"), nullopt when the cache does not hold it.
  virtual std::optional<nlohmann::json> Get(const std::string& key) const = 0;
  // The cached objects `keep` accepts.
  virtual std::vector<nlohmann::json> Select(
      const std::function<bool(const nlohmann::json&)>& keep) const = 0;
  // The cached objects whose controller owner reference has `uid` (an index, not a scan, in the
  // real informer).
  virtual std::vector<nlohmann::json> ControlledBy(const std::string& uid) const = 0;
  // The cached objects of namespace `ns` whose label `key` is `value` (a scan unless the cache
  // keeps an index of that label).
  virtual std::vector<nlohmann::json> Labelled(const std::string& ns, const std::string& key,
                                               const std::string& value) const {
    return Select([&](const nlohmann::json& object) {
      auto meta = object.find("metadata");
      if (meta == object.end() || !meta->is_object() || meta->value("namespace", "") != ns) {
        return false;
      }
      auto labels = meta->find("labels");
      return labels != meta->end() && labels->is_object() && labels->value(key, "") == value;
    });
  }
  virtual std::vector<std::string> Keys() const = 0;
};

// A cache that holds nothing (for a kind whose reconcile needs no pods).
const ObjectCache& NoObjects();

// The Kubernetes API server, by path (/api/v1/..., /apis/group/version/...), in JSON. Errors as
// KubeClient maps them (NOT_FOUND, ABORTED for a stale resourceVersion, ...).
class KubeApi {
 public:
  virtual ~KubeApi() = default;
  virtual absl::StatusOr<nlohmann::json> Get(const std::string& path) const = 0;
  virtual absl::StatusOr<nlohmann::json> Create(const std::string& path,
                                                const nlohmann::json& body) const = 0;
  virtual absl::StatusOr<nlohmann::json> Update(const std::string& path,
                                                const nlohmann::json& body) const = 0;
  virtual absl::StatusOr<nlohmann::json> Patch(
      const std::string& path, const nlohmann::json& body,
      const std::string& content_type = "application/merge-patch+json") const = 0;
  virtual absl::StatusOr<nlohmann::json> Delete(const std::string& path) const = 0;
  // DELETE only while the object's uid is `uid` (ABORTED otherwise).
  virtual absl::StatusOr<nlohmann::json> DeleteUid(const std::string& path, const std::string& uid,
                                                   const std::string& propagation = "") const = 0;
};

// Kubernetes Events on the objects the shim manages (best effort, never blocks the reconcile).
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Record(const nlohmann::json& object, const std::string& type,
                      const std::string& reason, const std::string& message,
                      const std::string& component) = 0;
};

// admitd as a reconcile sees it: the cached Workloads of this cluster's jobs and the
// ResourceFlavors (read), and the writes, each answered Workload remembered in the cache so a
// reconcile reads its own writes. Errors: the call's gRPC code with "<what>: <message>" (see
// reconcile::FromGrpc), carrying the retry delay admitd advised.
class AdmitdApi {
 public:
  virtual ~AdmitdApi() = default;

  // The cached Workloads whose controller owner is the `kind` named ns/owner_name, oldest first.
  virtual std::vector<v1::Workload> WorkloadsOf(const std::string& kind, const std::string& ns,
                                                const std::string& owner_name) const = 0;
  virtual std::optional<v1::Workload> Workload(const std::string& ns,
                                               const std::string& name) const = 0;
  // "ns/name" of every cached MultiKueue copy.
  virtual std::vector<std::string> CopyKeys() const = 0;
  virtual std::map<std::string, v1::ResourceFlavor> Flavors() const = 0;

  virtual absl::StatusOr<v1::SubmitResponse> Submit(const v1::SubmitRequest& request) = 0;
  virtual absl::StatusOr<v1::ResizeResponse> Resize(const v1::ResizeRequest& request) = 0;
  virtual absl::Status ReleaseQuota(const v1::ReleaseQuotaRequest& request) = 0;
  // Gone already (or another Workload holds the name now): OK. The cache forgets it.
  virtual absl::Status DeleteWorkload(const v1::Workload& workload) = 0;
  virtual absl::StatusOr<v1::Workload> UpdateRemoteJob(
      const v1::UpdateRemoteJobRequest& request) = 0;
  virtual absl::Status ReportPodsReady(const v1::ReportPodsReadyRequest& request) = 0;
  // spec.active of a Workload (deactivating one that holds quota evicts it, Deactivated).
  virtual absl::Status SetActive(const v1::SetActiveRequest& request) = 0;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_INTERFACES_H_
