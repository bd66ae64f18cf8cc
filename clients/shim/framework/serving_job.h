// An elastic StatefulSet or Deployment as a GenericJob (beyond Kueue, which admits their pods one
// by one or as a pod group and refuses the elastic-job annotation): one Workload, resized through
// workload slices as `spec.replicas` changes, for a kind that is never suspended. Its pods are
// created gated (the webhook gates the template) and start as they are ungated, each taking the
// admission's pod set info then (GenericJob::StartsByUngating); it stops by deleting its running
// pods, which its controller makes again, gated. A non-elastic object of the kind is skipped:
// the pod integration admits its pods.
//
//   std::unique_ptr<GenericJob> job = NewServingJob("apps/v1", "StatefulSet", sts, related, opts);
//
// Thread safety: used by one reconcile.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_SERVING_JOB_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_SERVING_JOB_H_

#include <memory>
#include <string>

#include "clients/shim/framework/generic_job.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The pod set of a serving object's Workload, also the label its template's pods carry.
inline constexpr char kServingPodSet[] = "main";

// `api_version` and `kind` must outlive the job; `related.pods` are the object's pods.
std::unique_ptr<GenericJob> NewServingJob(const std::string& api_version, const std::string& kind,
                                          const nlohmann::json& object, Related related,
                                          const FrameworkOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_SERVING_JOB_H_
