// The Workload Kueue builds for a batch/v1 Job (job framework §1.6, Job §2.2), built by the shim
// from the Job as the API server returns it: Kueue's generated name, the job-uid label, the Job
// as controller owner, the queue and priority-class labels, the maximum execution time label, the
// provisioning-request annotations, and one pod set "main" of min(parallelism, completions) pods
// (minCount from kueue.x-k8s.io/job-min-parallelism) whose template is the Job's without the
// job-name and controller-uid labels. An elastic Job (kueue.x-k8s.io/elastic-job: "true") gets
// the annotation and a name that includes its generation.
//
//   absl::StatusOr<v1::Workload> wl = WorkloadForJob(job_json, {});
//
// Thread safety: a pure function.
#ifndef ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WORKLOAD_H_
#define ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WORKLOAD_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct JobWorkloadOptions {
  bool partial_admission = true;           // the PartialAdmission gate (β, on)
  bool elastic_jobs = true;                // the ElasticJobsViaWorkloadSlices gate (β, on)
  std::set<std::string> label_keys_to_copy;  // Kueue's labelKeysToCopy
};

// INVALID_ARGUMENT when the Job cannot be read as one (the message names the field).
absl::StatusOr<v1::Workload> WorkloadForJob(const nlohmann::json& job,
                                            const JobWorkloadOptions& options);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_INTEGRATIONS_JOB_JOB_WORKLOAD_H_
