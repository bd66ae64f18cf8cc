#include "integration/bench/simulate_run.h"

#include <gtest/gtest.h>

#include "integration/bench/bench_config.h"

namespace admitd::bench {
namespace {

Plan TinyPlan() {
  auto config = LoadConfig(BENCH_CONFIG_DIR "/tiny.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  return Expand(*config, "");
}

TEST(SimulateRunTest, TinyFinishesEveryWorkloadWithinTheInvariants) {
  const Plan plan = TinyPlan();
  const RunReport report = SimulateSchedule(plan, 1);
  for (const std::string& v : report.violations) ADD_FAILURE() << v;
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report.simulated);
  EXPECT_EQ(report.finished, static_cast<int>(plan.workloads.size()));
  EXPECT_GT(report.cycles, 0);
  EXPECT_GT(report.batches, 0);
  // Nothing finishes before the arithmetic bound, however fast the server.
  EXPECT_GE(report.wall_ms, report.lower_bound_ms());
  int admitted = 0, evicted = 0;
  for (const ClassReport& c : report.classes) {
    admitted += c.admissions;
    evicted += c.evictions;
    EXPECT_EQ(c.time_to_admission_ms.count, static_cast<size_t>(c.count)) << c.name;
  }
  // Every admission but the last of each workload was evicted (and requeued).
  EXPECT_EQ(admitted, static_cast<int>(plan.workloads.size()) + evicted);
}

TEST(SimulateRunTest, IsDeterministic) {
  const Plan plan = TinyPlan();
  const RunReport a = SimulateSchedule(plan, 1);
  const RunReport b = SimulateSchedule(plan, 1);
  EXPECT_EQ(a.wall_ms, b.wall_ms);
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.batches, b.batches);
  EXPECT_EQ(a.events, b.events);
  ASSERT_EQ(a.classes.size(), b.classes.size());
  for (size_t i = 0; i < a.classes.size(); ++i) {
    SCOPED_TRACE(a.classes[i].name);
    EXPECT_EQ(a.classes[i].name, b.classes[i].name);
    EXPECT_EQ(a.classes[i].admissions, b.classes[i].admissions);
    EXPECT_EQ(a.classes[i].evictions, b.classes[i].evictions);
    EXPECT_EQ(a.classes[i].time_to_admission_ms.mean, b.classes[i].time_to_admission_ms.mean);
    EXPECT_EQ(a.classes[i].time_to_admission_ms.p50, b.classes[i].time_to_admission_ms.p50);
    EXPECT_EQ(a.classes[i].time_to_admission_ms.p99, b.classes[i].time_to_admission_ms.p99);
  }
  ASSERT_EQ(a.cq_classes.size(), b.cq_classes.size());
  for (size_t i = 0; i < a.cq_classes.size(); ++i) {
    EXPECT_EQ(a.cq_classes[i].usage_percent, b.cq_classes[i].usage_percent);
    EXPECT_EQ(a.cq_classes[i].peak_milli, b.cq_classes[i].peak_milli);
  }
}

TEST(SimulateRunTest, TimeScaleDividesTheSchedule) {
  const Plan plan = TinyPlan();
  const RunReport report = SimulateSchedule(plan, 4);
  EXPECT_TRUE(report.ok());
  EXPECT_DOUBLE_EQ(report.lower_bound_ms(), plan.lower_bound_ms() / 4);
  EXPECT_GE(report.wall_ms, report.lower_bound_ms());
}

}  // namespace
}  // namespace admitd::bench
