// Validation of admitd's objects with Kueue's rules (§1 of the semantics), reporting every
// violation at once with Kubernetes-style field paths ("spec.podSets[0].count") and messages
// ("Invalid value: -1: must be greater than or equal to 0").
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_ENGINE_VALIDATION_H_
#define ADMITD_SERVER_ENGINE_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "admitd/v1/objects.pb.h"
#include "common/status.h"
#include "server/engine/resources.h"

namespace admitd::engine {

using Violations = std::vector<FieldViolation>;

Violations ValidateResourceFlavor(const v1::ResourceFlavor& flavor);
Violations ValidateCohort(const v1::Cohort& cohort);
Violations ValidateClusterQueue(const v1::ClusterQueue& cq);
Violations ValidateLocalQueue(const v1::LocalQueue& lq);
Violations ValidateWorkloadPriorityClass(const v1::WorkloadPriorityClass& wpc);
Violations ValidateAdmissionCheck(const v1::AdmissionCheck& check);
Violations ValidateNamespace(const v1::Namespace& ns);
Violations ValidateMultiKueueConfig(const v1::MultiKueueConfig& config);
Violations ValidateMultiKueueCluster(const v1::MultiKueueCluster& cluster);
// When `per_pod` is given and the workload is valid, it receives each pod set's per-pod request
// (PodRequestsExact), which the totals check computes anyway.
Violations ValidateWorkload(const v1::Workload& workload, int max_pod_sets,
                            std::vector<ResourceAmounts>* per_pod = nullptr);

// Whether the workload's requests can be represented: per resource, each pod set's per-pod
// request × count and their sum over the pod sets must be a quantity (at most 2^63-1 canonical
// units). Part of ValidateWorkload; Resize checks it with the new counts.
// `per_pod`, when given, receives each pod set's per-pod request.
Violations ValidateWorkloadTotals(const v1::WorkloadSpec& spec,
                                  std::vector<ResourceAmounts>* per_pod = nullptr);

// A MultiKueue document of Workload.remote_job (manifest, status): empty, or a JSON object of
// at most 1 MiB. Reported at `field`.
void CheckRemoteJobDocument(Violations* out, absl::string_view field, const std::string& text);

// Name checks shared with the API layer.
bool IsDnsSubdomain(const std::string& name);
bool IsDnsLabel(const std::string& name);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_VALIDATION_H_
