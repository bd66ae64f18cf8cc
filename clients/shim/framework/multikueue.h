// MultiKueue, the part every kind shares (docs/multikueue.md; Kueue's MultiKueueAdapter): where a
// kind keeps its managedBy and suspend switches, the remote_job a manager cluster's shim submits
// with the Workload of an object MultiKueue manages (its manifest: name, namespace, labels,
// annotations, spec), the object a worker cluster's shim creates from the winning copy, and the
// manager object's status mirrored from the worker's. Pure functions over JSON.
//
//   MultiKueueAdapter jobset;                                    // spec.managedBy, spec.suspend
//   v1::RemoteJob r = RemoteJobFor(object, jobset);               // manager: at Submit
//   absl::StatusOr<nlohmann::json> o = WorkerObjectFor(copy, jobset);  // worker: to create
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_MULTIKUEUE_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_MULTIKUEUE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct MultiKueueAdapter {
  std::vector<std::string> managed_by = {"spec", "managedBy"};
  std::vector<std::string> suspend = {"spec", "suspend"};
  // What of the manager's spec the worker's object must not carry (a Job's selector and the
  // labels its controller puts on the template); may be null.
  std::function<void(nlohmann::json* spec)> clean_spec;
};

// The object's managedBy is kueue.x-k8s.io/multikueue.
bool ManagedByMultiKueue(const nlohmann::json& object, const MultiKueueAdapter& adapter);

// The name of the Workload an object uses instead of one of its own (annotation, else label),
// or "".
std::string PrebuiltWorkloadName(const nlohmann::json& object);

// An object a manager created in this (worker) cluster for its Workload: origin label and
// prebuilt Workload name.
bool IsMultiKueueWorkerJob(const nlohmann::json& object);

// The remote_job of `object`'s Workload: its apiVersion, kind, managedBy, and a manifest with its
// name, namespace, labels, annotations and spec.
v1::RemoteJob RemoteJobFor(const nlohmann::json& object, const MultiKueueAdapter& adapter);

// The name the manifest of `copy` gives its object, or "".
std::string RemoteJobName(const v1::Workload& copy);

// The object a worker cluster's shim creates for `copy`, a winning copy carrying a manifest of
// `api_version` `kind`: the manifest's metadata and spec, managedBy dropped (and what
// `clean_spec` drops), suspended (the worker's shim starts it once it adopted the admitted copy),
// with the copy's origin label and the copy as its prebuilt Workload. INVALID_ARGUMENT when the
// manifest is not one of that kind or the copy has no origin label.
absl::StatusOr<nlohmann::json> WorkerObjectFor(const v1::Workload& copy,
                                               const std::string& api_version,
                                               const std::string& kind,
                                               const MultiKueueAdapter& adapter);

// The merge patch of the manager object's /status that makes it the worker's `remote` status
// (Kueue's adapters for JobSet, Kubeflow and Ray jobs copy it whenever it differs); nullopt when
// it is the same.
std::optional<nlohmann::json> MirrorRemoteStatus(const nlohmann::json& local,
                                                 const nlohmann::json& remote_status);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_MULTIKUEUE_H_
