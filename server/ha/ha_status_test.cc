#include "server/ha/ha_status.h"

#include "gtest/gtest.h"

namespace admitd::ha {
namespace {

TEST(HaStatusTest, AFollowerSaysHowFarBehindItMayBe) {
  HaStatus status("prod");
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(status.LagSeconds(now), 0);  // never read the log: nothing to say yet
  status.Applied(42, now - absl::Milliseconds(1500));
  EXPECT_DOUBLE_EQ(status.LagSeconds(now), 1.5);
  EXPECT_EQ(status.applied_revision(), 42u);
  EXPECT_FALSE(status.leading());

  status.Leading(/*term=*/7, /*revision=*/50);
  EXPECT_EQ(status.LagSeconds(now), 0);
  EXPECT_TRUE(status.leading());
  EXPECT_EQ(status.applied_revision(), 50u);
}

TEST(HaStatusTest, TheGaugesNameTheDomainAndTheRole) {
  HaStatus status("prod");
  MetricsRegistry registry;
  status.AddTo(registry);
  status.SetTerm(3);
  status.Applied(9, absl::Now());
  std::string text = registry.Render();
  EXPECT_NE(text.find(R"(admitd_ha_role{domain="prod",role="leader"} 0)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(admitd_ha_role{domain="prod",role="follower"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(admitd_ha_term{domain="prod"} 3)"), std::string::npos);
  EXPECT_NE(text.find(R"(admitd_ha_applied_revision{domain="prod"} 9)"), std::string::npos);
  EXPECT_NE(text.find(R"(admitd_ha_failovers_total{domain="prod"} 0)"), std::string::npos);
  EXPECT_NE(text.find("admitd_ha_replication_lag_seconds{domain=\"prod\"}"), std::string::npos);

  status.Leading(4, 10);
  text = registry.Render();
  EXPECT_NE(text.find(R"(admitd_ha_role{domain="prod",role="leader"} 1)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(admitd_ha_failovers_total{domain="prod"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(admitd_ha_replication_lag_seconds{domain="prod"} 0)"), std::string::npos);
}

}  // namespace
}  // namespace admitd::ha
