#include "common/metrics_registry.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsRegistryTest, CountersGaugesAndHistogramsRenderInTheTextFormat) {
  MetricsRegistry m;
  m.Add("b_total", "B things.", {{"queue", "q\"1"}});
  m.Add("b_total", "B things.", {{"queue", "q\"1"}}, 2);
  m.Set("a_level", "A level.", {}, 7.5);
  m.Observe("c_seconds", "C time.", {{"method", "Submit"}}, {0.1, 1}, 0.05);
  m.Observe("c_seconds", "C time.", {{"method", "Submit"}}, {0.1, 1}, 0.5);
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("# HELP b_total B things.\n# TYPE b_total counter\n"));
  EXPECT_THAT(text, HasSubstr("b_total{queue=\"q\\\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE a_level gauge\na_level 7.5\n"));
  EXPECT_THAT(text, HasSubstr("c_seconds_bucket{method=\"Submit\",le=\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("c_seconds_bucket{method=\"Submit\",le=\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("c_seconds_bucket{method=\"Submit\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("c_seconds_count{method=\"Submit\"} 2\n"));
  // Families are sorted by name.
  EXPECT_LT(text.find("a_level"), text.find("b_total"));
  EXPECT_LT(text.find("b_total"), text.find("c_seconds"));
  EXPECT_EQ(m.Value("b_total", {{"queue", "q\"1"}}), 3);
  EXPECT_EQ(m.Value("a_level", {}), 7.5);
  EXPECT_EQ(m.Value("c_seconds", {{"method", "Submit"}}), 2);
  EXPECT_EQ(m.Value("c_seconds", {{"method", "Admit"}}), 0);
  EXPECT_EQ(m.Value("nothing", {}), 0);
  // Looking a series up for Value() does not create it.
  EXPECT_THAT(m.Render(), Not(HasSubstr("Admit")));
}

TEST(MetricsRegistryTest, HeldReferencesCountWithoutLookups) {
  MetricsRegistry m;
  prometheus::Counter& c = m.Counter("x_total", "X.", {{"k", "v"}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) c.Increment();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(m.Value("x_total", {{"k", "v"}}), 4000);
  EXPECT_EQ(&m.Counter("x_total", "X.", {{"k", "v"}}), &c);
}

TEST(MetricsRegistryTest, CollectorsRunAtEachRender) {
  MetricsRegistry m;
  int level = 1;
  m.AddCollector([&] {
    prometheus::MetricFamily f =
        MetricFamilyOf("queue_depth", "Depth.", prometheus::MetricType::Gauge);
    AddSample(&f, {{"queue", "a"}, {"status", "active"}}, level);
    return std::vector<prometheus::MetricFamily>{f};
  });
  EXPECT_THAT(m.Render(), HasSubstr("queue_depth{queue=\"a\",status=\"active\"} 1\n"));
  level = 4;
  EXPECT_THAT(m.Render(), HasSubstr("queue_depth{queue=\"a\",status=\"active\"} 4\n"));
  // Labels match in any order.
  EXPECT_EQ(m.Value("queue_depth", {{"status", "active"}, {"queue", "a"}}), 4);
}

TEST(MetricsRegistryTest, ANameUsedWithTwoTypesIsAProgrammingError) {
  MetricsRegistry m;
  m.Add("y_total", "Y.", {});
  EXPECT_DEATH(m.Set("y_total", "Y.", {}, 1), "two types");
}

}  // namespace
}  // namespace admitd
