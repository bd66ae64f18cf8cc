#include "integration/bench/bench_config.h"

#include <gtest/gtest.h>

namespace admitd::bench {
namespace {

TEST(BenchConfigTest, ParsesQuantities) {
  EXPECT_EQ(*ParseMilli("20"), 20000);
  EXPECT_EQ(*ParseMilli("500m"), 500);
  EXPECT_EQ(*ParseMilli("1.5"), 1500);
  EXPECT_FALSE(ParseMilli("x").ok());
  EXPECT_EQ(FormatMilli(20000), "20");
  EXPECT_EQ(FormatMilli(1500), "1500m");
}

TEST(BenchConfigTest, BaselineHasKueuesShapeAndBounds) {
  auto config = LoadConfig(BENCH_CONFIG_DIR "/baseline.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  const Plan plan = Expand(*config, "");
  EXPECT_EQ(plan.cohorts.size(), 5u);
  EXPECT_EQ(plan.cluster_queues.size(), 30u);
  EXPECT_EQ(plan.workloads.size(), 15000u);
  EXPECT_EQ(plan.cluster_queues[0].name, "cq-0-0-cohort-0");
  EXPECT_EQ(plan.cluster_queues[0].nominal_milli, 20000);
  EXPECT_EQ(*plan.cluster_queues[0].borrowing_limit_milli, 100000);
  EXPECT_EQ(plan.cluster_queues[0].reclaim_within_cohort, "Any");
  EXPECT_EQ(plan.cluster_queues[0].within_cluster_queue, "LowerPriority");
  // Per ClusterQueue: 350 x 1 CPU x 0.2 s + 100 x 5 x 0.5 + 50 x 20 x 1 = 1,320 CPU·s over a
  // nominal 20 CPU: 66 s. Last arrival: the 50th large at 60 s, plus 1 s.
  EXPECT_NEAR(plan.work_bound_ms, 66000, 1e-6);
  EXPECT_NEAR(plan.arrival_bound_ms, 61000, 1e-6);
  EXPECT_EQ(plan.workloads.front().arrival_ms, 100);
  EXPECT_EQ(plan.workloads.back().arrival_ms, 60000);
}

TEST(BenchConfigTest, LargeScaleCounts) {
  auto config = LoadConfig(BENCH_CONFIG_DIR "/large-scale.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  const Plan plan = Expand(*config, "p-");
  EXPECT_EQ(plan.cluster_queues.size(), 1000u);
  EXPECT_EQ(plan.workloads.size(), 50000u);
  EXPECT_EQ(plan.cohorts[0], "p-cohort-0");
}

TEST(BenchConfigTest, RejectsBadConfigs) {
  EXPECT_FALSE(ParseConfig("cohorts: []").ok());
  EXPECT_FALSE(ParseConfig("cohorts:\n- count: 1\n  queuesSets:\n  - count: 1\n"
                           "    nominalQuota: abc\n").ok());
  EXPECT_FALSE(ParseConfig("cohorts:\n- count: 1\n  queuesSets:\n  - count: 1\n"
                           "    nominalQuota: 1\n    workloadsSets:\n    - count: 1\n"
                           "      workloads: []\n").ok());
}

}  // namespace
}  // namespace admitd::bench
