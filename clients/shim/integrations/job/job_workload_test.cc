#include "clients/shim/integrations/job/job_workload.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

// A Job as the API server returns it (parallelism defaulted, the controller's labels on the
// template).
nlohmann::json Job() {
  return nlohmann::json::parse(R"({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "sample-job", "namespace": "team-a", "generation": 1,
                 "uid": "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b",
                 "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "team": "a"},
                 "annotations": {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "600",
                                 "other": "x"}},
    "spec": {"parallelism": 3, "completions": 2, "suspend": true,
             "template": {"metadata": {"labels": {"job-name": "sample-job",
                                                  "batch.kubernetes.io/job-name": "sample-job",
                                                  "controller-uid": "u",
                                                  "batch.kubernetes.io/controller-uid": "u"}},
                          "spec": {"restartPolicy": "Never",
                                   "containers": [{"name": "c", "image": "busybox",
                                                   "resources": {"requests": {"cpu": "1"}}}]}}}
  })");
}

TEST(JobWorkloadTest, KueuesWorkloadForAJob) {
  absl::StatusOr<v1::Workload> wl = WorkloadForJob(Job(), {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "job-sample-job-9b1de");  // Kueue's computed vector
  EXPECT_EQ(wl->metadata().namespace_(), "team-a");
  EXPECT_EQ(wl->metadata().labels().at("kueue.x-k8s.io/job-uid"),
            "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b");
  EXPECT_EQ(wl->metadata().labels().count("team"), 0u);  // not in labelKeysToCopy
  EXPECT_EQ(wl->metadata().annotations().at("provreq.kueue.x-k8s.io/maxRunDurationSeconds"), "600");
  EXPECT_EQ(wl->metadata().annotations().count("other"), 0u);
  EXPECT_EQ(wl->metadata().annotations().count("kueue.x-k8s.io/workload-slice-name"), 0u);
  ASSERT_EQ(wl->metadata().owner_references_size(), 1);
  EXPECT_EQ(wl->metadata().owner_references(0).kind(), "Job");
  EXPECT_TRUE(wl->metadata().owner_references(0).controller());
  EXPECT_EQ(wl->spec().queue_name(), "user-queue");
  ASSERT_EQ(wl->spec().pod_sets_size(), 1);
  const v1::PodSet& ps = wl->spec().pod_sets(0);
  EXPECT_EQ(ps.name(), "main");
  EXPECT_EQ(ps.count(), 2);  // parallelism capped by completions
  EXPECT_FALSE(ps.has_min_count());
  const auto& tl = ps.template_().labels();
  EXPECT_EQ(tl.count("job-name"), 0u);
  EXPECT_EQ(tl.count("controller-uid"), 0u);
  EXPECT_EQ(tl.count("batch.kubernetes.io/controller-uid"), 0u);
  EXPECT_EQ(tl.at("batch.kubernetes.io/job-name"), "sample-job");  // kept
  EXPECT_EQ(ps.template_().spec().containers(0).resources().requests().at("cpu"), "1");
}

TEST(JobWorkloadTest, ElasticPartialPriorityAndExecutionTime) {
  nlohmann::json job = Job();
  job["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high";
  job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "90";
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1";
  absl::StatusOr<v1::Workload> wl = WorkloadForJob(job, {.label_keys_to_copy = {"team"}});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "job-sample-job-80e87");  // with the generation
  EXPECT_EQ(wl->metadata().annotations().at("kueue.x-k8s.io/elastic-job"), "true");
  // The first slice names its chain after itself.
  EXPECT_EQ(wl->metadata().annotations().at("kueue.x-k8s.io/workload-slice-name"),
            "job-sample-job-80e87");
  EXPECT_EQ(wl->metadata().labels().at("team"), "a");
  EXPECT_EQ(wl->spec().priority_class_ref().kind(), "WorkloadPriorityClass");
  EXPECT_EQ(wl->spec().priority_class_ref().name(), "high");
  EXPECT_EQ(wl->spec().maximum_execution_time_seconds(), 90);
  EXPECT_EQ(wl->spec().pod_sets(0).min_count(), 1);
  // Without partial admission there is no minCount.
  wl = WorkloadForJob(job, {.partial_admission = false});
  ASSERT_TRUE(wl.ok());
  EXPECT_FALSE(wl->spec().pod_sets(0).has_min_count());
}

TEST(JobWorkloadTest, AJobWithoutIdentityIsRefused) {
  nlohmann::json job = Job();
  job["metadata"].erase("uid");
  EXPECT_EQ(WorkloadForJob(job, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace admitd::shim
