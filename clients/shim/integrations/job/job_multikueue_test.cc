#include "clients/shim/integrations/job/job_multikueue.h"

#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

nlohmann::json ManagerJob() {
  return nlohmann::json::parse(R"({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "train", "namespace": "team", "uid": "u-1", "resourceVersion": "7",
                 "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                 "annotations": {"kueue.x-k8s.io/elastic-job": "true"}},
    "spec": {"suspend": true, "parallelism": 2, "managedBy": "kueue.x-k8s.io/multikueue",
             "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
             "template": {"metadata": {"labels": {"job-name": "train", "controller-uid": "u-1",
                                                  "batch.kubernetes.io/controller-uid": "u-1",
                                                  "batch.kubernetes.io/job-name": "train",
                                                  "app": "x"}},
                          "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    "status": {"active": 0}
  })");
}

v1::Workload Copy(const v1::RemoteJob& remote) {
  v1::Workload copy;
  copy.mutable_metadata()->set_name("job-train-abcde");
  copy.mutable_metadata()->set_namespace_("team");
  (*copy.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "mgr";
  *copy.mutable_remote_job() = remote;
  return copy;
}

TEST(JobMultiKueueTest, TheManifestKeepsWhatTheWorkerNeedsAndNothingOfTheClusterItCameFrom) {
  const v1::RemoteJob remote = RemoteJobFor(ManagerJob());
  EXPECT_EQ(remote.api_version(), "batch/v1");
  EXPECT_EQ(remote.kind(), "Job");
  EXPECT_EQ(remote.managed_by(), kMultiKueueControllerName);
  const nlohmann::json manifest = nlohmann::json::parse(remote.manifest());
  EXPECT_EQ(manifest["metadata"]["name"], "train");
  EXPECT_EQ(manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "lq");
  EXPECT_FALSE(manifest["metadata"].contains("uid"));
  EXPECT_FALSE(manifest["metadata"].contains("resourceVersion"));
  EXPECT_FALSE(manifest.contains("status"));
}

TEST(JobMultiKueueTest, TheWorkerJobIsSuspendedUnmanagedAndUsesTheCopyAsItsPrebuiltWorkload) {
  absl::StatusOr<nlohmann::json> job = WorkerJobFor(Copy(RemoteJobFor(ManagerJob())));
  ASSERT_TRUE(job.ok()) << job.status();
  const nlohmann::json& j = *job;
  EXPECT_EQ(j["metadata"]["name"], "train");
  EXPECT_EQ(j["metadata"]["namespace"], "team");
  EXPECT_EQ(j["metadata"]["labels"][kMultiKueueOriginLabel], "mgr");
  EXPECT_EQ(j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "lq");
  EXPECT_EQ(j["metadata"]["annotations"][kPrebuiltWorkloadKey], "job-train-abcde");
  EXPECT_EQ(j["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"], "true");
  EXPECT_TRUE(j["spec"]["suspend"].get<bool>());
  EXPECT_FALSE(j["spec"].contains("managedBy"));
  EXPECT_FALSE(j["spec"].contains("selector"));
  const nlohmann::json& labels = j["spec"]["template"]["metadata"]["labels"];
  EXPECT_FALSE(labels.contains("job-name"));
  EXPECT_FALSE(labels.contains("controller-uid"));
  EXPECT_FALSE(labels.contains("batch.kubernetes.io/controller-uid"));
  EXPECT_EQ(labels["app"], "x");
  EXPECT_EQ(PrebuiltWorkloadName(j), "job-train-abcde");
  EXPECT_TRUE(IsMultiKueueWorkerJob(j));
  EXPECT_FALSE(IsMultiKueueWorkerJob(ManagerJob()));
  EXPECT_EQ(RemoteJobName(Copy(RemoteJobFor(ManagerJob()))), "train");
}

TEST(JobMultiKueueTest, AManifestThatIsNotAJobOrACopyWithoutOriginIsRefused) {
  v1::RemoteJob remote;
  remote.set_manifest(R"({"apiVersion":"v1","kind":"Pod","spec":{}})");
  EXPECT_EQ(WorkerJobFor(Copy(remote)).status().code(), absl::StatusCode::kInvalidArgument);
  v1::Workload no_origin = Copy(RemoteJobFor(ManagerJob()));
  no_origin.mutable_metadata()->mutable_labels()->clear();
  EXPECT_EQ(WorkerJobFor(no_origin).status().code(), absl::StatusCode::kInvalidArgument);
}

const nlohmann::json kRunning = {{"active", 2}, {"startTime", "2026-01-01T00:00:00Z"}};
const nlohmann::json kSuspended = {
    {"active", 0},
    {"conditions", {{{"type", "Suspended"}, {"status", "True"}, {"reason", "JobSuspended"}}}}};
const nlohmann::json kComplete = {{"succeeded", 2},
                                  {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};

// PR #3685 / #4070: a status copied onto a suspended manager Job set its startTime and froze its
// template. Nothing is copied while the manager is suspended and the worker runs.
TEST(JobMultiKueueTest, Kueue3685_NoStatusOntoASuspendedManagerJobWhileTheWorkerRuns) {
  EXPECT_FALSE(MirrorStatusPatch(ManagerJob(), kRunning).has_value());
}

// #8151, #9338: after an eviction the manager Job kept status.active from the running worker,
// so its quota was never released. With both suspended the worker's status is copied.
TEST(JobMultiKueueTest, Kueue8151_Kueue9338_BothSuspendedTheWorkerStatusIsCopied) {
  nlohmann::json manager = ManagerJob();
  manager["status"] = {{"active", 2}};
  std::optional<nlohmann::json> p = MirrorStatusPatch(manager, kSuspended);
  ASSERT_TRUE(p.has_value());
  manager.merge_patch(*p);
  EXPECT_EQ(manager["status"]["active"], 0);
}

// #5613: a worker Job that finished while the manager Job was suspended never finished the
// manager's. A finished worker status is always copied; what it lacks is removed.
TEST(JobMultiKueueTest, Kueue5613_AFinishedWorkerJobIsCopiedWhileTheManagerIsSuspended) {
  std::optional<nlohmann::json> p = MirrorStatusPatch(ManagerJob(), kComplete);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)["status"]["succeeded"], 2);
  EXPECT_TRUE((*p)["status"]["active"].is_null());
}

TEST(JobMultiKueueTest, ARunningManagerJobFollowsTheWorkerAndTheSameStatusIsNoPatch) {
  nlohmann::json manager = ManagerJob();
  manager["spec"]["suspend"] = false;
  std::optional<nlohmann::json> p = MirrorStatusPatch(manager, kRunning);
  ASSERT_TRUE(p.has_value());
  manager.merge_patch(*p);
  EXPECT_EQ(manager["status"], kRunning);
  EXPECT_FALSE(MirrorStatusPatch(manager, kRunning).has_value());
}

}  // namespace
}  // namespace admitd::shim
