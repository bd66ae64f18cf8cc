#include "clients/shim/job_multikueue.h"

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
  EXPECT_EQ(remote.managed_by(), kMultiKueueManagedBy);
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

TEST(JobMultiKueueTest, StatusIsMirroredByKueuesFourRules) {
  const nlohmann::json running = {{"active", 2}, {"startTime", "2026-01-01T00:00:00Z"}};
  const nlohmann::json suspended = {
      {"active", 0},
      {"conditions", {{{"type", "Suspended"}, {"status", "True"}, {"reason", "JobSuspended"}}}}};
  const nlohmann::json complete = {
      {"succeeded", 2},
      {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  nlohmann::json manager = ManagerJob();
  // Manager suspended, remote running: no copy (a startTime would freeze its template).
  EXPECT_FALSE(MirrorStatusPatch(manager, running).has_value());
  // Both suspended: copied (active drops to 0 so the quota can go back).
  ASSERT_TRUE(MirrorStatusPatch(manager, suspended).has_value());
  // Remote finished: copied even while the manager is suspended.
  std::optional<nlohmann::json> p = MirrorStatusPatch(manager, complete);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)["status"]["succeeded"], 2);
  EXPECT_TRUE((*p)["status"]["active"].is_null());  // what the remote lacks goes
  // Manager running: copied; the same status again is no patch.
  manager["spec"]["suspend"] = false;
  p = MirrorStatusPatch(manager, running);
  ASSERT_TRUE(p.has_value());
  manager.merge_patch(*p);
  EXPECT_EQ(manager["status"], running);
  EXPECT_FALSE(MirrorStatusPatch(manager, running).has_value());
}

}  // namespace
}  // namespace admitd::shim
