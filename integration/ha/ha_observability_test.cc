// What an HA group shows of itself: every replica's /metrics (its role, the term, the applied
// revision, the lag, failovers), a follower's /readyz naming the leader, and the audit event a
// new leader records of its election.
#include <signal.h>

#include <string>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "integration/ha/ha_group_fixture.h"

namespace admitd::ha {
namespace {

class HaObservabilityTest : public HaGroupTest {
 protected:
  HaObservabilityTest() : HaGroupTest({"--metrics-listen", "127.0.0.1:0"}) {}

  // The audit events of kind HADomain, oldest first.
  static std::vector<v1::Event> ElectionEvents(AdmitdClient& client) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::WatchRequest req;
    req.add_kinds(v1::OBJECT_KIND_EVENT);
    req.set_from_oldest(true);
    auto reader = client.admission->Watch(&ctx, req);
    std::vector<v1::Event> events;
    v1::WatchEvent event;
    while (reader->Read(&event) && event.type() != v1::WatchEvent::SYNCED) {
      if (event.has_event() && event.event().regarding().kind() == "HADomain") {
        events.push_back(event.event());
      }
    }
    ctx.TryCancel();
    return events;
  }
};

TEST_F(HaObservabilityTest, EveryReplicaReportsItsRoleAndANewLeaderRecordsItsElection) {
  const int first = StartGroup();
  ASSERT_GE(first, 0);
  const int follower = group.Others(first)[0];
  const int follower_port = MetricsPort(follower);
  ASSERT_GT(follower_port, 0) << group.process(follower).Log();

  httplib::Result health = Get(follower_port, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  httplib::Result ready = Get(follower_port, "/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("the leader is r" + std::to_string(first)), std::string::npos)
      << ready->body;
  httplib::Result metrics = Get(follower_port, "/metrics");
  ASSERT_TRUE(metrics);
  const std::string domain = Replica("x").domain;
  EXPECT_NE(metrics->body.find("admitd_ha_role{domain=\"" + domain + "\",role=\"follower\"} 1"),
            std::string::npos)
      << metrics->body;

  httplib::Result leader_metrics = Get(MetricsPort(first), "/metrics");
  ASSERT_TRUE(leader_metrics);
  EXPECT_NE(
      leader_metrics->body.find("admitd_ha_role{domain=\"" + domain + "\",role=\"leader\"} 1"),
      std::string::npos)
      << leader_metrics->body;
  EXPECT_NE(leader_metrics->body.find("admitd_ha_failovers_total{domain=\"" + domain + "\"} 1"),
            std::string::npos);
  EXPECT_NE(leader_metrics->body.find("admitd_ha_replication_lag_seconds{domain=\"" + domain +
                                      "\"} 0"),
            std::string::npos);
  httplib::Result leader_ready = Get(MetricsPort(first), "/readyz");
  ASSERT_TRUE(leader_ready);
  EXPECT_EQ(leader_ready->status, 200);

  std::vector<v1::Event> elections = ElectionEvents(client(first));
  ASSERT_EQ(elections.size(), 1u);
  EXPECT_EQ(elections[0].reason(), "LeaderElected");
  EXPECT_EQ(elections[0].reporting_controller(), "admitd-ha");
  EXPECT_NE(elections[0].note().find("r" + std::to_string(first) + " at "), std::string::npos)
      << elections[0].note();

  // After a failover the new leader records its election, naming the one before it; it serves
  // the same metrics port it served as a follower.
  group.Kill(first, SIGKILL);
  const int second = Leader(group.Others(first), absl::Seconds(30));
  ASSERT_GE(second, 0);
  // The new leader records its election once it serves: the event may commit just after.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  do {
    elections = ElectionEvents(client(second));
  } while (elections.size() < 2 && absl::Now() < until);
  ASSERT_EQ(elections.size(), 2u);
  EXPECT_NE(elections[1].note().find("after r" + std::to_string(first)), std::string::npos)
      << elections[1].note();
  httplib::Result promoted = Get(MetricsPort(second), "/metrics");
  ASSERT_TRUE(promoted);
  EXPECT_NE(promoted->body.find("admitd_ha_role{domain=\"" + domain + "\",role=\"leader\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace admitd::ha
