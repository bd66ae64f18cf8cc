// Three real admitd replicas over a real 3-member etcd: one leads, the others refuse calls
// naming it; the leader killed with SIGKILL in the middle of concurrent Submits, a follower takes
// over with every acknowledged workload, and the killed replica comes back as a follower.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "google/rpc/error_details.pb.h"
#include "gtest/gtest.h"
#include "common/connection.h"
#include "integration/fixtures.h"
#include "integration/ha/ha_group_fixture.h"

namespace admitd::ha {
namespace {

class HaFailoverTest : public HaGroupTest {};

TEST_F(HaFailoverTest, AFollowerTakesOverWithEveryAcknowledgedWrite) {
  const int first = StartGroup();
  ASSERT_GE(first, 0);
  for (const v1::ApplyRequest& req :
       {testing::Flavor("default"), testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000"}}),
        testing::LocalQueue("ns", "lq", "cq")}) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    grpc::Status s = client(first).queues->Apply(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // A follower refuses, naming the leader.
  const int follower = (first + 1) % 3;
  grpc::Status refused = Submit(client(follower), "to-a-follower");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(testing::ErrorReason(refused), "NOT_LEADER");
  EXPECT_NE(refused.error_message().find(group.process(first).address()), std::string::npos)
      << refused.error_message();

  // 4 clients submit to the leader; it is killed once 200 were acknowledged.
  absl::Mutex mu;
  std::set<std::string> acknowledged;
  std::atomic<bool> stop{false};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string name = absl::StrCat("w-", t, "-", i);
        if (!Submit(client(first), name).ok()) return;
        absl::MutexLock lock(&mu);
        acknowledged.insert(name);
      }
    });
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    {
      absl::MutexLock lock(&mu);
      if (acknowledged.size() >= 200) break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  const absl::Time killed = absl::Now();
  EXPECT_TRUE(WIFSIGNALED(group.Kill(first, SIGKILL)));
  stop = true;
  for (std::thread& t : submitters) t.join();
  ASSERT_GE(acknowledged.size(), 200u);

  const std::vector<int> others = group.Others(first);
  const int second = Leader(others, absl::Seconds(30));
  const absl::Duration takeover = absl::Now() - killed;
  ASSERT_GE(second, 0) << group.process(others[0]).Log() << group.process(others[1]).Log();
  std::printf("failover: leader r%d killed, r%d took over after %s (lease 2s), %zu acknowledged\n",
              first, second, absl::FormatDuration(takeover).c_str(), acknowledged.size());
  EXPECT_LT(takeover, absl::Seconds(15));

  ExpectEachAcknowledgedOnce(client(second), acknowledged);

  // The killed replica comes back as a follower of the new leader.
  absl::Status back_up = group.Start(first);
  ASSERT_TRUE(back_up.ok()) << back_up;
  grpc::Status back = Submit(client(first), "to-the-old-leader");
  EXPECT_EQ(back.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(testing::ErrorReason(back), "NOT_LEADER");
}

TEST_F(HaFailoverTest, APausedLeaderIsFencedAndStepsDown) {
  const int first = StartGroup();
  ASSERT_GE(first, 0);
  std::set<std::string> acknowledged;
  for (int i = 0; i < 20; ++i) {
    const std::string name = absl::StrCat("before-", i);
    ASSERT_TRUE(Submit(client(first), name).ok());
    acknowledged.insert(name);
  }

  // Stopped past its lease (as a long stall would): another replica leads.
  ASSERT_EQ(::kill(group.process(first).pid(), SIGSTOP), 0);
  const std::vector<int> others = group.Others(first);
  const int second = Leader(others, absl::Seconds(30));
  ASSERT_GE(second, 0);
  for (int i = 0; i < 20; ++i) {
    const std::string name = absl::StrCat("after-", i);
    ASSERT_TRUE(Submit(client(second), name).ok());
    acknowledged.insert(name);
  }

  // Resumed, the old leader commits nothing (the fence refuses it) and exits to come back as a
  // follower.
  ASSERT_EQ(::kill(group.process(first).pid(), SIGCONT), 0);
  grpc::Status late = Submit(client(first), "to-the-paused-leader");
  EXPECT_FALSE(late.ok());
  absl::StatusOr<int> exited = group.process(first).WaitForExit(absl::Seconds(15));
  ASSERT_TRUE(exited.ok()) << exited.status() << group.process(first).Log();
  EXPECT_TRUE(WIFEXITED(*exited) && WEXITSTATUS(*exited) == 3) << *exited;
  EXPECT_NE(group.process(first).Log().find("lost the leadership"), std::string::npos);

  absl::StatusOr<std::vector<v1::Workload>> all = testing::ListWorkloads(client(second), "ns");
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const v1::Workload& wl : *all) names.insert(wl.metadata().name());
  for (const std::string& name : acknowledged) EXPECT_TRUE(names.count(name)) << name;
  EXPECT_FALSE(names.count("to-the-paused-leader"));
}

TEST_F(HaFailoverTest, AClientOfTheWholeGroupFollowsTheLeader) {
  const int first = StartGroup();
  ASSERT_GE(first, 0);
  // One channel to all three replicas (common/connection.h): calls go to the leader only.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect({.target = group.List()});
  ASSERT_TRUE(channel.ok()) << channel.status();
  AdmitdClient whole(*channel);
  for (const v1::ApplyRequest& req :
       {testing::Flavor("default"), testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000"}}),
        testing::LocalQueue("ns", "lq", "cq")}) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    grpc::Status s = whole.queues->Apply(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // Two submitters through the group's channel; the leader is killed under them. Not one call
  // fails: those sent before the kill are tried again, later ones wait for the new leader.
  absl::Mutex mu;
  std::set<std::string> acknowledged;
  std::vector<std::string> failed;
  std::atomic<int> sent{0};
  std::atomic<bool> stop{false};
  absl::Duration slowest;
  std::vector<std::thread> submitters;
  for (int t = 0; t < 2; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string name = absl::StrCat("g-", t, "-", i);
        const absl::Time start = absl::Now();
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::SubmitRequest req;
        *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "100m"}});
        v1::SubmitResponse resp;
        grpc::Status s = whole.admission->Submit(&ctx, req, &resp);
        ++sent;
        absl::MutexLock lock(&mu);
        slowest = std::max(slowest, absl::Now() - start);
        if (s.ok()) {
          acknowledged.insert(name);
        } else {
          failed.push_back(absl::StrCat(name, ": ", s.error_code(), " ", s.error_message()));
        }
      }
    });
  }
  while (sent.load() < 100) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(WIFSIGNALED(group.Kill(first, SIGKILL)));
  const int before = sent.load();
  while (sent.load() < before + 100) absl::SleepFor(absl::Milliseconds(1));
  stop = true;
  for (std::thread& t : submitters) t.join();
  std::printf("a client of the group: %zu Submits acknowledged across the failover, the slowest "
              "in %s\n",
              acknowledged.size(), absl::FormatDuration(slowest).c_str());
  EXPECT_TRUE(failed.empty()) << absl::StrJoin(failed, "\n");

  ExpectEachAcknowledgedOnce(whole, acknowledged);
}

}  // namespace
}  // namespace admitd::ha
