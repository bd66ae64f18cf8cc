// Leader election on a Lease (client-go's algorithm) against the test API server.
#include "clients/shim/kube/leader_election.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/shim/kube/test_cluster.h"

namespace admitd::shim {
namespace {

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(cluster_.server().empty()) << "the test cluster did not start"; }
  LeaderElectionConfig Config(const std::string& identity) {
    return {.ns = "default", .name = "admitd-shim", .identity = identity};
  }
  nlohmann::json Lease() {
    return *kube_.Get("/apis/coordination.k8s.io/v1/namespaces/default/leases/admitd-shim");
  }
  TestCluster cluster_;
  KubeClient kube_{KubeConfig{.server = cluster_.server()}};
  absl::Time now_ = absl::FromUnixSeconds(1767225600);
};

TEST_F(LeaderElectionTest, OneHolderUntilItStopsRenewingThenATakeover) {
  LeaderElector a(kube_, Config("a"), [this] { return now_; });
  LeaderElector b(kube_, Config("b"), [this] { return now_; });
  ASSERT_TRUE(*a.TryAcquireOrRenew());  // creates the Lease
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "a");
  EXPECT_EQ(Lease()["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(Lease()["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_FALSE(*b.TryAcquireOrRenew());
  now_ += absl::Seconds(10);
  ASSERT_TRUE(*a.TryAcquireOrRenew());  // a renews: b sees the record change
  EXPECT_EQ(Lease()["spec"]["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(Lease()["spec"]["renewTime"], "2026-01-01T00:00:10.000000Z");
  now_ += absl::Seconds(10);
  EXPECT_FALSE(*b.TryAcquireOrRenew());  // seen changing 10 s ago: still valid
  // a stops renewing; 15 s after b last saw the record change, b takes over.
  now_ += absl::Seconds(15);
  ASSERT_TRUE(*b.TryAcquireOrRenew());
  const nlohmann::json spec = Lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:35.000000Z");
  EXPECT_FALSE(*a.TryAcquireOrRenew());  // a sees b's fresh record
}

TEST_F(LeaderElectionTest, RunLeadsAndAnotherReplicaFollowsWhenItStops) {
  auto fast = [&](const std::string& id) {
    LeaderElectionConfig c = Config(id);
    c.lease_duration = absl::Seconds(1);
    c.renew_deadline = absl::Milliseconds(700);
    c.retry_period = absl::Milliseconds(100);
    return c;
  };
  LeaderElector a(kube_, fast("a")), b(kube_, fast("b"));
  std::atomic<int> a_started{0}, a_stopped{0}, b_started{0};
  std::thread ta([&] { a.Run([&] { ++a_started; }, [&] { ++a_stopped; }); });
  for (int i = 0; i < 100 && !a.IsLeader(); ++i) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(a.IsLeader());
  std::thread tb([&] { b.Run([&] { ++b_started; }, nullptr); });
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(b.IsLeader());  // a keeps renewing
  a.Stop();
  ta.join();
  EXPECT_EQ(a_started.load(), 1);
  EXPECT_EQ(a_stopped.load(), 1);
  for (int i = 0; i < 150 && !b.IsLeader(); ++i) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(b.IsLeader());
  EXPECT_EQ(b_started.load(), 1);
  b.Stop();
  tb.join();
}

TEST_F(LeaderElectionTest, AReleasedLeaseIsTakenAtOnce) {
  LeaderElector a(kube_, Config("a"), [this] { return now_; });
  LeaderElector b(kube_, Config("b"), [this] { return now_; });
  ASSERT_TRUE(*a.TryAcquireOrRenew());
  EXPECT_FALSE(*b.TryAcquireOrRenew());
  ASSERT_TRUE(b.Release().ok());  // not the holder: changes nothing
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "a");
  ASSERT_TRUE(a.Release().ok());
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "");
  EXPECT_EQ(Lease()["spec"]["leaseDurationSeconds"], 1);
  ASSERT_TRUE(*b.TryAcquireOrRenew());  // no wait for the 15 s lease to expire
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "b");
}

}  // namespace
}  // namespace admitd::shim
