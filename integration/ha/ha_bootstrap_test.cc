// The replicated log is trimmed once every live replica has applied it, and a replica that
// cannot catch up from it (its data dir wiped, or away while the log was trimmed) bootstraps
// from a snapshot of the leader's store and converges to the leader's state, object for object.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integration/ha/ha_group_fixture.h"
#include "server/ha/log_batch.h"
#include "server/ha/replicated_log.h"
#include "store/store.h"

namespace admitd::ha {
namespace {

class HaBootstrapTest : public HaGroupTest {
 protected:
  HaBootstrapTest()
      : HaGroupTest({"--metrics-listen", "127.0.0.1:0", "--ha-log-trim-interval", "200ms"}) {}

  std::string DataDir(int i) { return absl::StrCat(*dir_, "/", Replica("x").domain, "/admitd-", i); }

  // Every stored object of the store in `dir` (opened after its replica stopped), and its
  // revision.
  static std::map<std::string, std::string> Dump(const std::string& dir, uint64_t* revision) {
    absl::StatusOr<std::unique_ptr<store::Store>> s = store::Store::Open({.path = dir});
    EXPECT_TRUE(s.ok()) << s.status();
    std::map<std::string, std::string> out;
    if (!s.ok()) return out;
    *revision = (*s)->revision();
    EXPECT_TRUE((*s)
                    ->ForEachObject([&](v1::ObjectKind kind, absl::string_view key,
                                        absl::string_view value) {
                      out[absl::StrCat(kind, "/", key)] = std::string(value);
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }

  // The number of keys of the domain's log in etcd.
  int64_t LogKeys(EtcdClient& etcd) {
    etcdserverpb::RangeRequest r;
    r.set_key(LogKey(Replica("x").domain, 0, 0));
    r.set_range_end(LogEnd(Replica("x").domain));
    r.set_count_only(true);
    absl::StatusOr<etcdserverpb::RangeResponse> answer = etcd.Range(r);
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? answer->count() : -1;
  }

  void SubmitMany(AdmitdClient& c, const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
      grpc::Status s = Submit(c, absl::StrCat(prefix, i));
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
  }

  // Waits until replica i has applied `revision`.
  bool WaitApplied(int i, uint64_t revision) {
    const std::string series =
        absl::StrCat("admitd_ha_applied_revision{domain=\"", Replica("x").domain, "\"}");
    const absl::Time until = absl::Now() + absl::Seconds(30);
    while (absl::Now() < until) {
      if (Metric(i, series) >= static_cast<double>(revision)) return true;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return false;
  }
};

TEST_F(HaBootstrapTest, AWipedReplicaBootstrapsAndConvergesOnceTheLogIsTrimmed) {
  const int leader = StartGroup();
  ASSERT_GE(leader, 0);
  for (const v1::ApplyRequest& req :
       {testing::Flavor("default"), testing::ClusterQueue("cq", {"default"}, {{"cpu", "5"}}),
        testing::LocalQueue("ns", "lq", "cq")}) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    ASSERT_TRUE(client(leader).queues->Apply(&ctx, req, &resp).ok());
  }
  SubmitMany(client(leader), "before-", 100);  // 50 admitted, 50 pending

  // Every replica has applied the log: it is trimmed to (nearly) nothing.
  std::unique_ptr<EtcdClient> etcd = Client();
  const absl::Time until = absl::Now() + absl::Seconds(20);
  while (LogKeys(*etcd) > 5 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(100));
  const int64_t kept = LogKeys(*etcd);
  EXPECT_LE(kept, 5) << group.process(group.Others(leader)[0]).Log() << group.process(leader).Log();
  uint64_t trimmed = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Read(*etcd, ReplicatedLog::TrimmedKey(Replica("x").domain)), &trimmed));
  EXPECT_GT(trimmed, 100u);

  // A follower loses its disk; the group goes on without it.
  const int wiped = group.Others(leader)[0];
  group.Kill(wiped, SIGKILL);
  std::filesystem::remove_all(DataDir(wiped));
  SubmitMany(client(leader), "while-away-", 30);

  // Back with an empty store, it bootstraps from the leader's snapshot, then follows the log.
  ASSERT_TRUE(group.Start(wiped).ok());
  SubmitMany(client(leader), "after-", 20);
  uint64_t revision = 0;
  ASSERT_TRUE(testing::ListWorkloads(client(leader), "ns", &revision).ok());
  ASSERT_TRUE(WaitApplied(wiped, revision)) << group.process(wiped).Log();
  EXPECT_NE(group.process(wiped).Log().find("msg=bootstrapped"), std::string::npos);
  std::printf("log trimmed through revision %llu (%lld keys left); replica r%d bootstrapped\n",
              static_cast<unsigned long long>(trimmed), static_cast<long long>(kept), wiped);

  // Stopped, the two stores hold the same objects, byte for byte, at the same revision.
  EXPECT_TRUE(WIFEXITED(group.Kill(wiped, SIGTERM)));
  EXPECT_TRUE(WIFEXITED(group.Kill(leader, SIGTERM)));
  uint64_t leader_revision = 0, wiped_revision = 0;
  const std::map<std::string, std::string> on_leader = Dump(DataDir(leader), &leader_revision);
  const std::map<std::string, std::string> on_wiped = Dump(DataDir(wiped), &wiped_revision);
  EXPECT_EQ(wiped_revision, leader_revision);
  EXPECT_EQ(on_wiped.size(), on_leader.size());
  EXPECT_TRUE(on_wiped == on_leader);
  EXPECT_GE(on_leader.size(), 150u);  // the workloads, the queues, the flavor
}

}  // namespace
}  // namespace admitd::ha
