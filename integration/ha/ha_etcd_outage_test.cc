// An HA group through etcd's outages: one member of three lost interrupts no write; two lost
// (no quorum) make writes answer UNAVAILABLE within a bounded time with nothing acknowledged
// lost, and the group takes writes again by itself once quorum returns.
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/connection.h"
#include "gtest/gtest.h"
#include "integration/ha/ha_group_fixture.h"

namespace admitd::ha {
namespace {

class HaEtcdOutageTest : public HaGroupTest {
 protected:
  // The default lease: it outlasts an election of etcd's own leader (when the member killed was
  // it, renewals wait for the next one), as a 2 s lease may not on a busy machine.
  HaEtcdOutageTest() : HaGroupTest({}, "5s") {}

  void TearDown() override {
    // The suite's etcd serves the tests after this one.
    for (int m = 0; m < 3; ++m) ASSERT_TRUE(etcd_->Restart(m).ok()) << etcd_->Log(m);
  }

  void ApplyQueues(AdmitdClient& client) {
    for (const v1::ApplyRequest& req :
         {testing::Flavor("default"), testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000"}}),
          testing::LocalQueue("ns", "lq", "cq")}) {
      grpc::ClientContext ctx;
      v1::ApplyResponse resp;
      grpc::Status s = client.queues->Apply(&ctx, req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
  }
};

TEST_F(HaEtcdOutageTest, OneMemberLostInterruptsNothingAndQuorumLostRefusesThenResumes) {
  const int leader = StartGroup();
  ASSERT_GE(leader, 0);
  ApplyQueues(client(leader));
  std::set<std::string> acknowledged;
  int next = 0;
  auto submit = [&](AdmitdClient& c) {
    const std::string name = absl::StrCat("w-", next++);
    // Long enough for a write etcd timed out (5 s) and the Submit sent again.
    grpc::Status s = Submit(c, name, absl::Seconds(30));
    if (s.ok()) acknowledged.insert(name);
    return s;
  };
  // As the shims reach the group: a channel to every replica (common/connection.h).
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect({.target = group.List()});
  ASSERT_TRUE(channel.ok()) << channel.status();
  AdmitdClient whole(*channel);

  // One member killed (the one the leader was talking to first): every write is taken. When it
  // was etcd's own leader, the write in flight may time out (etcd drops a dead leader's
  // proposals) and the leader refuses writes while it settles the log again: a client of the
  // group sends the Submit again by itself.
  etcd_->Kill(0);
  absl::Duration slowest;
  for (int i = 0; i < 50; ++i) {
    const absl::Time start = absl::Now();
    grpc::Status s = submit(whole);
    slowest = std::max(slowest, absl::Now() - start);
    EXPECT_TRUE(s.ok()) << i << ": " << s.error_code() << " " << s.error_message();
  }
  std::printf("one etcd member of three lost: 50 Submits acknowledged, the slowest in %s\n",
              absl::FormatDuration(slowest).c_str());

  // A second one killed: no quorum. Writes are refused, within a bounded time: the etcd client's
  // deadline (5 s), or sooner when the leader, unable to renew its lease, steps down.
  etcd_->Kill(1);
  const absl::Time start = absl::Now();
  grpc::Status refused;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", "during", "lq", 1, {{"cpu", "100m"}});
    v1::SubmitResponse resp;
    refused = client(leader).admission->Submit(&ctx, req, &resp);
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_LT(took, absl::Seconds(10));  // the etcd client's deadline (5 s) and the answer
  std::printf("quorum lost: a Submit answered %d after %s: %s\n", refused.error_code(),
              absl::FormatDuration(took).c_str(), refused.error_message().c_str());

  // Quorum back: the group takes writes again by itself (the leader may have stepped down,
  // having been unable to renew its lease: a client of the whole group finds who leads).
  ASSERT_TRUE(etcd_->Restart(0).ok()) << etcd_->Log(0);
  ASSERT_TRUE(etcd_->Restart(1).ok()) << etcd_->Log(1);
  const absl::Time back = absl::Now();
  grpc::Status resumed;
  for (int i = 0; i < 10; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::SubmitRequest req;
    const std::string name = absl::StrCat("after-", i);
    *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "100m"}});
    v1::SubmitResponse resp;
    resumed = whole.admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(resumed.ok()) << resumed.error_code() << " " << resumed.error_message();
    acknowledged.insert(name);
  }
  std::printf("quorum back: writes taken again %s after the members restarted\n",
              absl::FormatDuration(absl::Now() - back).c_str());

  ExpectEachAcknowledgedOnce(whole, acknowledged);
}

}  // namespace
}  // namespace admitd::ha
