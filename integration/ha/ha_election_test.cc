// Leader election with fencing (server/ha/leader_election.h) against a real 3-member etcd.
#include "server/ha/leader_election.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integration/ha/ha_fixture.h"

namespace admitd::ha {
namespace {

// Each test has a real 3-member etcd of its own (HaTest).
class HaElectionTest : public HaTest {};

TEST_F(HaElectionTest, OneReplicaLeadsAndTheOthersSeeIt) {
  std::unique_ptr<EtcdClient> c1 = Client(), c2 = Client();
  LeaderElection r1(c1.get(), Replica("r1")), r2(c2.get(), Replica("r2"));
  absl::StatusOr<int64_t> term = r1.Campaign(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(term.ok()) << term.status();
  EXPECT_GT(*term, 0);
  EXPECT_TRUE(r1.leading());

  absl::StatusOr<int64_t> second = r2.Campaign(absl::Now() + absl::Milliseconds(500));
  EXPECT_TRUE(absl::IsDeadlineExceeded(second.status())) << second.status();
  EXPECT_FALSE(r2.leading());
  absl::StatusOr<LeaderInfo> leader = r2.Leader();
  ASSERT_TRUE(leader.ok()) << leader.status();
  EXPECT_EQ(leader->id, "r1");
  EXPECT_EQ(leader->address, "r1.admitd:50051");
  EXPECT_EQ(leader->term, *term);

  // A resigned leader's key goes at once; the next term is greater.
  ASSERT_TRUE(r1.Resign().ok());
  absl::StatusOr<int64_t> next = r2.Campaign(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_GT(*next, *term);
}

TEST_F(HaElectionTest, ALeaderThatStopsRenewingIsReplacedWithinItsLease) {
  std::unique_ptr<EtcdClient> c1 = Client(), c2 = Client();
  std::atomic<bool> lost{false};
  ElectionOptions o1 = Replica("r1");
  o1.on_lost = [&] { lost = true; };
  LeaderElection r1(c1.get(), o1), r2(c2.get(), Replica("r2"));
  ASSERT_TRUE(r1.Campaign(absl::Now() + absl::Seconds(10)).ok());

  r1.PauseRenewalForTesting(true);  // as a process stopped with SIGSTOP would
  const absl::Time paused = absl::Now();
  absl::StatusOr<int64_t> term = r2.Campaign(absl::Now() + absl::Seconds(10));
  const absl::Duration takeover = absl::Now() - paused;
  ASSERT_TRUE(term.ok()) << term.status();
  // etcd ends the lease one TTL after the last renewal (plus its own granularity).
  EXPECT_LT(takeover, absl::Seconds(2) + absl::Seconds(2)) << takeover;
  EXPECT_TRUE(lost);
  EXPECT_FALSE(r1.leading());
  // Refused, whether r1 noticed first (FAILED_PRECONDITION) or the fence did (ABORTED).
  absl::Status late = FencedWrite(r1, PutTxn("/t/late", "r1")).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(late) || absl::IsAborted(late)) << late;

  absl::StatusOr<etcdserverpb::TxnResponse> w = FencedWrite(r2, PutTxn("/t/renewed", "r2"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->succeeded());
  EXPECT_EQ(Read(*c1, "/t/renewed"), "r2");
  EXPECT_EQ(Read(*c1, "/t/late"), "");
}

TEST_F(HaElectionTest, ALeaderThatBelievesItLeadsIsFencedOnceTheKeyMovedOn) {
  std::unique_ptr<EtcdClient> c1 = Client(), c2 = Client();
  LeaderElection r1(c1.get(), Replica("r1")), r2(c2.get(), Replica("r2"));
  absl::StatusOr<int64_t> t1 = r1.Campaign(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(t1.ok()) << t1.status();
  // The key disappears behind r1's back (an operator, or a lease lost while r1 still renews its
  // belief): r2 takes it, while r1's renewals keep succeeding on its own, still valid lease.
  etcdserverpb::TxnRequest remove;
  remove.add_success()->mutable_request_delete_range()->set_key(
      LeaderElection::LeaderKey(Replica("x").domain));
  ASSERT_TRUE(c2->Txn(remove).ok());
  absl::StatusOr<int64_t> t2 = r2.Campaign(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(t2.ok()) << t2.status();
  EXPECT_GT(*t2, *t1);
  EXPECT_TRUE(r1.leading());  // it has not noticed yet

  absl::StatusOr<etcdserverpb::TxnResponse> stale = FencedWrite(r1, PutTxn("/t/stale", "r1"));
  EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
  EXPECT_FALSE(r1.leading());
  EXPECT_EQ(Read(*c2, "/t/stale"), "");
  absl::StatusOr<etcdserverpb::TxnResponse> fresh = FencedWrite(r2, PutTxn("/t/fresh", "r2"));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(Read(*c2, "/t/fresh"), "r2");
}

TEST_F(HaElectionTest, TheLeaderKeepsLeadingWhenAnEtcdMemberDies) {
  std::unique_ptr<EtcdClient> c1 = Client();
  // The default lease: it outlasts an election of etcd's own leader (when the member killed was
  // it, renewals wait for the next one), as a 2 s lease may not on a busy machine.
  ElectionOptions o = Replica("r1");
  o.ttl = absl::Seconds(5);
  LeaderElection r1(c1.get(), o);
  ASSERT_TRUE(r1.Campaign(absl::Now() + absl::Seconds(10)).ok());
  const std::string first = c1->endpoint();
  etcd_->Kill(0);  // the member every client reaches first

  // Calls move to the next member; renewals keep the lease past its TTL.
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<etcdserverpb::TxnResponse> w =
        FencedWrite(r1, PutTxn(absl::StrCat("/t/after-kill-", i), "r1"));
    EXPECT_TRUE(w.ok()) << w.status();
  }
  absl::SleepFor(absl::Seconds(6));
  EXPECT_TRUE(r1.leading());
  EXPECT_NE(c1->endpoint(), first);
  ASSERT_TRUE(etcd_->Restart(0).ok()) << etcd_->Log(0);
}

}  // namespace
}  // namespace admitd::ha
