#include "clients/shim/integrations/job/job_status.h"

#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

nlohmann::json Job(int p, std::optional<int> c, int succeeded) {
  nlohmann::json job = {{"spec", {{"parallelism", p}}}, {"status", {{"succeeded", succeeded}}}};
  if (c) job["spec"]["completions"] = *c;
  return job;
}

TEST(JobStatusTest, ReclaimablePodsFollowKueuesExamples) {
  EXPECT_EQ(JobReclaimablePods(Job(5, 10, 7)), 2);
  EXPECT_EQ(JobReclaimablePods(Job(3, std::nullopt, 1)), 1);
  EXPECT_EQ(JobReclaimablePods(Job(1, 5, 4)), 0);   // p = 1: never
  EXPECT_EQ(JobReclaimablePods(Job(5, 10, 0)), 0);  // nothing terminal yet
  EXPECT_EQ(JobReclaimablePods(Job(5, 10, 3)), 0);  // 7 remain, more than p
  nlohmann::json indexed = Job(4, 6, 0);
  indexed["spec"]["completionMode"] = "Indexed";
  indexed["status"]["completedIndexes"] = "0,2-3,9";  // 9 is past completions: ignored
  indexed["status"]["failedIndexes"] = "5,4-1";       // a descending range is skipped
  EXPECT_EQ(JobReclaimablePods(indexed), 2);           // t = 4 (0,2,3,5), remaining 2
}

TEST(JobStatusTest, FinishedActiveAndReady) {
  nlohmann::json job = Job(2, 2, 1);
  EXPECT_FALSE(JobFinished(job).has_value());
  job["status"]["conditions"] = {{{"type", "SuccessCriteriaMet"}, {"status", "True"}}};
  EXPECT_FALSE(JobFinished(job).has_value());  // terminal intent only
  job["status"]["conditions"].push_back(
      {{"type", "Failed"}, {"status", "True"}, {"message", "Job has reached the specified backoff limit"}});
  ASSERT_TRUE(JobFinished(job).has_value());
  EXPECT_FALSE(JobFinished(job)->succeeded);
  EXPECT_EQ(JobFinished(job)->message, "Job has reached the specified backoff limit");
  EXPECT_FALSE(JobActive(job));
  job["status"]["active"] = 1;
  EXPECT_TRUE(JobActive(job));
  job["status"]["ready"] = 0;
  EXPECT_FALSE(JobPodsReady(job, 2));
  job["status"]["uncountedTerminatedPods"] = {{"succeeded", {"uid-1"}}};
  EXPECT_TRUE(JobPodsReady(job, 2));
}

// Kueue's PodsReady() of a Job: ready + succeeded reach min(parallelism, completions).
TEST(JobStatusTest, PodsReadyCountsToTheSmallerOfParallelismAndCompletions) {
  nlohmann::json job = {{"spec", {{"parallelism", 4}}}, {"status", {{"ready", 3}}}};
  EXPECT_FALSE(JobPodsReady(job));
  job["status"]["succeeded"] = 1;
  EXPECT_TRUE(JobPodsReady(job));
  job = {{"spec", {{"parallelism", 4}, {"completions", 2}}}, {"status", {{"ready", 2}}}};
  EXPECT_TRUE(JobPodsReady(job));
  job = {{"spec", nlohmann::json::object()}, {"status", nlohmann::json::object()}};
  EXPECT_FALSE(JobPodsReady(job));  // parallelism defaults to 1
  job["status"]["ready"] = 1;
  EXPECT_TRUE(JobPodsReady(job));
}

}  // namespace
}  // namespace admitd::shim
