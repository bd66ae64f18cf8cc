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
#include "integration/fixtures.h"
#include "integration/ha/ha_fixture.h"

#ifndef ADMITD_BINARY
#error "ADMITD_BINARY must name the admitd executable"
#endif

namespace admitd::ha {
namespace {

// HaTest::Client() is an etcd client; this is admitd's.
using AdmitdClient = testing::Client;
using testing::Process;

class HaFailoverTest : public HaTest {
 protected:
  std::vector<std::unique_ptr<Process>> replicas;
  std::vector<std::unique_ptr<AdmitdClient>> clients;

  // Replica `i` on its own data dir, following until elected; the lease as Replica() sets it.
  std::unique_ptr<Process> StartReplica(int i) {
    const std::string data = absl::StrCat(*dir_, "/admitd-", i);
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(
        ADMITD_BINARY, data,
        {"--ha-etcd-endpoints", absl::StrJoin(etcd_->endpoints(), ","), "--ha-domain",
         Replica("x").domain, "--ha-id", absl::StrCat("r", i), "--ha-lease-ttl", "2s"},
        absl::Seconds(30), "msg=following");
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : nullptr;
  }

  // Submits workload `name`; the call's status.
  static grpc::Status Submit(AdmitdClient& client, const std::string& name) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "100m"}});
    v1::SubmitResponse resp;
    return client.admission->Submit(&ctx, req, &resp);
  }

  // Starts three replicas; the index of the one that leads, -1 when none does within 20 s.
  int StartGroup() {
    for (int i = 0; i < 3; ++i) {
      replicas.push_back(StartReplica(i));
      if (replicas.back() == nullptr) return -1;
      clients.push_back(std::make_unique<AdmitdClient>(replicas.back()->address()));
    }
    return Leader({0, 1, 2}, absl::Seconds(20));
  }

  // The replicas but `i`.
  static std::vector<int> Others(int i) { return {(i + 1) % 3, (i + 2) % 3}; }

  // The index of the replica that accepts a Submit within `timeout`, -1 when none does.
  int Leader(const std::vector<int>& among, absl::Duration timeout) {
    const absl::Time until = absl::Now() + timeout;
    while (absl::Now() < until) {
      for (int i : among) {
        grpc::Status s = Submit(*clients[i], absl::StrCat("probe-", probes_++));
        if (s.ok()) return i;
        // Only a follower (NOT_LEADER), a dead replica, or one between roles (its follower's
        // server stopping cancels the call it was taking) may refuse.
        EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                    s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                    s.error_code() == grpc::StatusCode::CANCELLED)
            << s.error_code() << ": " << s.error_message();
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return -1;
  }

 private:
  int probes_ = 0;
};

TEST_F(HaFailoverTest, AFollowerTakesOverWithEveryAcknowledgedWrite) {
  const int first = StartGroup();
  ASSERT_GE(first, 0);
  for (const v1::ApplyRequest& req :
       {testing::Flavor("default"), testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000"}}),
        testing::LocalQueue("ns", "lq", "cq")}) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    grpc::Status s = clients[first]->queues->Apply(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // A follower refuses, naming the leader.
  const int follower = (first + 1) % 3;
  grpc::Status refused = Submit(*clients[follower], "to-a-follower");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(testing::ErrorReason(refused), "NOT_LEADER");
  EXPECT_NE(refused.error_message().find(replicas[first]->address()), std::string::npos)
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
        if (!Submit(*clients[first], name).ok()) return;
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
  EXPECT_TRUE(WIFSIGNALED(replicas[first]->Kill(SIGKILL)));
  stop = true;
  for (std::thread& t : submitters) t.join();
  ASSERT_GE(acknowledged.size(), 200u);

  const std::vector<int> others = Others(first);
  const int second = Leader(others, absl::Seconds(30));
  const absl::Duration takeover = absl::Now() - killed;
  ASSERT_GE(second, 0) << replicas[others[0]]->Log() << replicas[others[1]]->Log();
  std::printf("failover: leader r%d killed, r%d took over after %s (lease 2s), %zu acknowledged\n",
              first, second, absl::FormatDuration(takeover).c_str(), acknowledged.size());
  EXPECT_LT(takeover, absl::Seconds(15));

  absl::StatusOr<std::vector<v1::Workload>> all = testing::ListWorkloads(*clients[second], "ns");
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const v1::Workload& wl : *all) {
    EXPECT_TRUE(names.insert(wl.metadata().name()).second) << wl.metadata().name();
  }
  for (const std::string& name : acknowledged) EXPECT_TRUE(names.count(name)) << name;

  // The killed replica comes back as a follower of the new leader.
  replicas[first] = StartReplica(first);
  ASSERT_NE(replicas[first], nullptr);
  clients[first] = std::make_unique<AdmitdClient>(replicas[first]->address());
  grpc::Status back = Submit(*clients[first], "to-the-old-leader");
  EXPECT_EQ(back.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(testing::ErrorReason(back), "NOT_LEADER");
}

TEST_F(HaFailoverTest, APausedLeaderIsFencedAndStepsDown) {
  const int first = StartGroup();
  ASSERT_GE(first, 0);
  std::set<std::string> acknowledged;
  for (int i = 0; i < 20; ++i) {
    const std::string name = absl::StrCat("before-", i);
    ASSERT_TRUE(Submit(*clients[first], name).ok());
    acknowledged.insert(name);
  }

  // Stopped past its lease (as a long stall would): another replica leads.
  ASSERT_EQ(::kill(replicas[first]->pid(), SIGSTOP), 0);
  const std::vector<int> others = Others(first);
  const int second = Leader(others, absl::Seconds(30));
  ASSERT_GE(second, 0);
  for (int i = 0; i < 20; ++i) {
    const std::string name = absl::StrCat("after-", i);
    ASSERT_TRUE(Submit(*clients[second], name).ok());
    acknowledged.insert(name);
  }

  // Resumed, the old leader commits nothing (the fence refuses it) and exits to come back as a
  // follower.
  ASSERT_EQ(::kill(replicas[first]->pid(), SIGCONT), 0);
  grpc::Status late = Submit(*clients[first], "to-the-paused-leader");
  EXPECT_FALSE(late.ok());
  absl::StatusOr<int> exited = replicas[first]->WaitForExit(absl::Seconds(15));
  ASSERT_TRUE(exited.ok()) << exited.status() << replicas[first]->Log();
  EXPECT_TRUE(WIFEXITED(*exited) && WEXITSTATUS(*exited) == 3) << *exited;
  EXPECT_NE(replicas[first]->Log().find("lost the leadership"), std::string::npos);

  absl::StatusOr<std::vector<v1::Workload>> all = testing::ListWorkloads(*clients[second], "ns");
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const v1::Workload& wl : *all) names.insert(wl.metadata().name());
  for (const std::string& name : acknowledged) EXPECT_TRUE(names.count(name)) << name;
  EXPECT_FALSE(names.count("to-the-paused-leader"));
}

}  // namespace
}  // namespace admitd::ha
