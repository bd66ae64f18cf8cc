// A JobSet as the job framework reads it (kueue-jobframework.md §8.2, §8.3): its Workload, state,
// reclaimable pods, and the start and stop patches, on JobSets as users write them.
#include "clients/shim/integrations/jobset/jobset_workload.h"

#include <gtest/gtest.h>

#include "clients/shim/framework/workload_builder.h"

namespace admitd::shim {
namespace jobset_workload_test {

nlohmann::json ReplicatedJob(const std::string& name, int replicas, int parallelism,
                             std::optional<int> completions = std::nullopt) {
  nlohmann::json job_spec = {{"parallelism", parallelism},
                             {"template",
                              {{"spec",
                                {{"containers",
                                  {{{"name", "c"},
                                    {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}}}};
  if (completions) job_spec["completions"] = *completions;
  return {{"name", name}, {"replicas", replicas}, {"template", {{"spec", job_spec}}}};
}

nlohmann::json JobSet() {
  return {{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
          {"kind", "JobSet"},
          {"metadata",
           {{"name", "jobset-a"},
            {"namespace", "ns"},
            {"uid", "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b"},
            {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
          {"spec",
           {{"suspend", true},
            {"replicatedJobs",
             {ReplicatedJob("leader", 2, 4), ReplicatedJob("workers", 3, 4, 2)}}}}};
}

TEST(JobSetWorkloadTest, OnePodSetPerReplicatedJobWithKueuesNameAndCounts) {
  absl::StatusOr<nlohmann::json> pod_sets = JobSetPodSets(JobSet());
  ASSERT_TRUE(pod_sets.ok()) << pod_sets.status();
  absl::StatusOr<v1::Workload> wl =
      BuildWorkload(JobSet(), kJobSetApiVersion, kJobSetKind, *pod_sets, {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "jobset-jobset-a-92828");
  EXPECT_EQ(wl->spec().queue_name(), "lq");
  ASSERT_EQ(wl->spec().pod_sets_size(), 2);
  EXPECT_EQ(wl->spec().pod_sets(0).name(), "leader");
  EXPECT_EQ(wl->spec().pod_sets(0).count(), 8);   // 2 × 4
  EXPECT_EQ(wl->spec().pod_sets(1).count(), 6);   // 3 × min(4, 2)
  EXPECT_FALSE(wl->spec().pod_sets(0).has_min_count());
  EXPECT_EQ(wl->metadata().owner_references(0).kind(), "JobSet");

  nlohmann::json empty = JobSet();
  empty["spec"]["replicatedJobs"] = nlohmann::json::array();
  EXPECT_EQ(JobSetPodSets(empty).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JobSetWorkloadTest, AMultiKueueWorkersCopyTakesItsResizedCounts) {
  // workers: 2 pods a replica; 10 pods are 5 replicas. leader unchanged.
  std::optional<nlohmann::json> patch = JobSetScalePatch(JobSet(), {{"leader", 8}, {"workers", 10}});
  ASSERT_TRUE(patch);
  nlohmann::json after = JobSet();
  after.merge_patch(*patch);
  EXPECT_EQ(after["spec"]["replicatedJobs"][0]["replicas"], 2);
  EXPECT_EQ(after["spec"]["replicatedJobs"][1]["replicas"], 5);
  EXPECT_EQ(after["spec"]["replicatedJobs"][1]["template"],
            JobSet()["spec"]["replicatedJobs"][1]["template"]);
  EXPECT_FALSE(JobSetScalePatch(JobSet(), {{"leader", 8}, {"workers", 6}}));
}

TEST(JobSetWorkloadTest, FinishedActiveReadyAndReclaimableFromItsStatus) {
  nlohmann::json js = JobSet();
  EXPECT_FALSE(JobSetFinished(js));
  EXPECT_FALSE(JobSetActive(js));
  js["status"]["replicatedJobsStatus"] = {
      {{"name", "leader"}, {"ready", 2}, {"active", 2}, {"succeeded", 0}},
      {{"name", "workers"}, {"ready", 1}, {"active", 1}, {"succeeded", 2}}};
  EXPECT_TRUE(JobSetActive(js));
  EXPECT_TRUE(JobSetPodsReady(js));  // 5 replicas: 3 ready + 2 succeeded
  const std::map<std::string, int> reclaimable = JobSetReclaimablePods(js);
  ASSERT_EQ(reclaimable.size(), 1u);
  EXPECT_EQ(reclaimable.at("workers"), 4);  // 2 succeeded × 2 pods
  js["status"]["replicatedJobsStatus"][1]["ready"] = 0;
  EXPECT_FALSE(JobSetPodsReady(js));

  js["status"]["conditions"] = {{{"type", "Failed"}, {"status", "True"}, {"message", "boom"}}};
  ASSERT_TRUE(JobSetFinished(js));
  EXPECT_FALSE(JobSetFinished(js)->succeeded);
  EXPECT_EQ(JobSetFinished(js)->message, "boom");
  js["status"]["conditions"] = {{{"type", "Completed"}, {"status", "True"}, {"message", "ok"}}};
  EXPECT_TRUE(JobSetFinished(js)->succeeded);
}

TEST(JobSetWorkloadTest, StartMergesEachReplicatedJobsInfoAndStopRestoresInOneWrite) {
  const nlohmann::json js = JobSet();
  std::vector<PodSetInfo> infos(2);
  infos[0].node_selector = {{"pool", "a"}};
  infos[1].node_selector = {{"pool", "b"}};
  absl::StatusOr<nlohmann::json> start = StartPatchFor(js, JobSetLayout(js), infos, false);
  ASSERT_TRUE(start.ok()) << start.status();
  nlohmann::json started = js;
  started.merge_patch(*start);
  EXPECT_EQ(started["spec"]["suspend"], false);
  // (A copy: indexing a missing key of a const document is undefined.)
  const auto selector = [](nlohmann::json j, int i) {
    return j["spec"]["replicatedJobs"][i]["template"]["spec"]["template"]["spec"]["nodeSelector"];
  };
  EXPECT_EQ(selector(started, 0)["pool"], "a");
  EXPECT_EQ(selector(started, 1)["pool"], "b");
  EXPECT_EQ(StartPatchFor(js, JobSetLayout(js), {infos[0]}, false).status().message(),
            "invalid podset infos: expecting 2 podset, got 1");

  // The Workload's templates (as built) restore both in the patch that suspends.
  absl::StatusOr<v1::Workload> wl =
      BuildWorkload(js, kJobSetApiVersion, kJobSetKind, *JobSetPodSets(js), {});
  ASSERT_TRUE(wl.ok());
  nlohmann::json stop = StopPatchFor(started, JobSetLayout(started), &*wl);
  nlohmann::json stopped = started;
  stopped.merge_patch(stop);
  EXPECT_EQ(stopped["spec"]["suspend"], true);
  EXPECT_FALSE(selector(stopped, 0).contains("pool"));
  EXPECT_FALSE(selector(stopped, 1).contains("pool"));
  EXPECT_TRUE(StopPatchFor(stopped, JobSetLayout(stopped), &*wl).empty());  // nothing left to do
}

}  // namespace jobset_workload_test
}  // namespace admitd::shim
