// The replicated log and the leader's store (server/ha/replicated_log.h, replicated_store.h)
// against a real 3-member etcd: what a follower applies is exactly what the leader committed;
// large batches are split and applied whole; a deposed leader, a batch cut short by a crash and
// an answer lost with etcd's quorum never put into the log anything its leader did not account
// for.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integration/ha/ha_fixture.h"
#include "server/ha/log_batch.h"
#include "server/ha/replicated_log.h"
#include "server/ha/replicated_store.h"
#include "store/memory_store.h"

namespace admitd::ha {
namespace {

class HaLogTest : public HaTest {
 protected:
  std::string Domain() { return Replica("x").domain; }

  // One replica's log: `election` null for one that only reads.
  ReplicatedLog Log(EtcdClient* etcd, LeaderElection* election, size_t max_chunk_bytes = 1 << 20,
                    int64_t read_page_keys = 16) {
    LogOptions o;
    o.domain = Domain();
    o.max_chunk_bytes = max_chunk_bytes;
    o.read_page_keys = read_page_keys;
    return ReplicatedLog(etcd, election, o);
  }

  // A replica that campaigned, won and took the log over onto an empty store of its own.
  struct Leader {
    std::unique_ptr<EtcdClient> etcd;
    std::unique_ptr<LeaderElection> election;
    std::unique_ptr<ReplicatedLog> log;
    std::unique_ptr<ReplicatedStore> store;
  };
  // A leader whose lease outlasts a busy machine's stalls (these tests are about the log; the
  // election has its own).
  std::unique_ptr<Leader> Lead(const std::string& id, size_t max_chunk_bytes = 1 << 20,
                               absl::Duration ttl = absl::Seconds(10),
                               absl::Duration call_timeout = absl::Seconds(5)) {
    auto leader = std::make_unique<Leader>();
    leader->etcd = Client(call_timeout);
    ElectionOptions o = Replica(id);
    o.ttl = ttl;
    leader->election = std::make_unique<LeaderElection>(leader->etcd.get(), o);
    absl::StatusOr<int64_t> term = leader->election->Campaign(absl::Now() + absl::Seconds(10));
    EXPECT_TRUE(term.ok()) << term.status();
    leader->log = std::make_unique<ReplicatedLog>(
        Log(leader->etcd.get(), leader->election.get(), max_chunk_bytes));
    auto local = std::make_unique<store::MemoryStore>();
    absl::Status taken = Eventually([&] { return leader->log->TakeOver(local.get()); });
    EXPECT_TRUE(taken.ok()) << taken;
    leader->store = std::make_unique<ReplicatedStore>(std::move(local), leader->log.get());
    return leader;
  }

  // A batch reaching `revision` that writes (or deletes) Workload `key` and logs one event.
  static store::Batch Change(uint64_t revision, const std::string& key, const std::string& value,
                             bool deleted = false) {
    store::Batch batch;
    batch.revision = revision;
    batch.writes.push_back({v1::OBJECT_KIND_WORKLOAD, key, deleted ? "" : value, deleted});
    batch.events.push_back({revision, absl::StrCat("event ", revision, " of ", key)});
    return batch;
  }

  // `size` bytes that do not compress (the log compresses what does): pseudo-random from `seed`.
  static std::string Incompressible(size_t size, uint32_t seed) {
    std::mt19937 random(seed);
    std::string out(size, '\0');
    for (char& c : out) c = static_cast<char>(random());
    return out;
  }

  // Every object and event of `s`, and its revision, as text to compare.
  static std::string Dump(const store::Store& s) {
    std::string out = absl::StrCat("revision ", s.revision(), "\n");
    EXPECT_TRUE(s.ForEachObject([&](v1::ObjectKind kind, absl::string_view key,
                                    absl::string_view value) {
                   absl::StrAppend(&out, kind, " ", key, " = ", value.size(), " bytes: ",
                                   value.substr(0, 40), "\n");
                   return absl::OkStatus();
                 }).ok());
    std::vector<store::LoggedEvent> events;
    EXPECT_TRUE(s.ReadEvents(0, 1 << 20, &events).ok());
    for (const store::LoggedEvent& e : events) absl::StrAppend(&out, e.revision, ": ", e.value, "\n");
    return out;
  }

  // How many keys of the log hold parts of the batch reaching `revision`.
  int64_t PartsInEtcd(EtcdClient& etcd, uint64_t revision) {
    etcdserverpb::RangeRequest r;
    r.set_key(LogKey(Domain(), revision, 0));
    r.set_range_end(LogKey(Domain(), revision + 1, 0));
    r.set_count_only(true);
    absl::StatusOr<etcdserverpb::RangeResponse> answer = etcd.Range(r);
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? answer->count() : -1;
  }

  // Tries `fn` until it returns OK, as the sequencer's repair loop does; its last status.
  static absl::Status Eventually(const std::function<absl::Status()>& fn,
                                 absl::Duration timeout = absl::Seconds(30)) {
    const absl::Time until = absl::Now() + timeout;
    absl::Status status;
    while (!(status = fn()).ok() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(100));
    return status;
  }
};

TEST_F(HaLogTest, AFollowerAppliesExactlyWhatTheLeaderCommitted) {
  std::unique_ptr<Leader> r1 = Lead("r1");
  std::unique_ptr<EtcdClient> c2 = Client();
  ReplicatedStore& leader = *r1->store;

  for (uint64_t rev = 1; rev <= 30; ++rev) {
    const std::string key = absl::StrCat("team-a/job-", rev % 7);
    ASSERT_TRUE(leader.Commit(Change(rev, key, absl::StrCat("state ", rev), rev % 5 == 0)).ok())
        << rev;
  }
  // Nothing to write: committed without touching the log.
  ASSERT_TRUE(leader.Commit(store::Batch{.revision = 30}).ok());
  // A change that does not move the revision cannot be keyed in the log: refused, nothing written.
  EXPECT_TRUE(absl::IsInvalidArgument(leader.Commit(Change(30, "team-a/x", "y"))));
  EXPECT_EQ(PartsInEtcd(*c2, 31), 0);

  store::MemoryStore follower;
  ReplicatedLog reader = Log(c2.get(), nullptr, 1 << 20, /*read_page_keys=*/4);
  absl::StatusOr<uint64_t> applied = reader.CatchUp(&follower);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 30u);
  EXPECT_EQ(Dump(follower), Dump(leader));
  // Caught up: nothing more, and a later batch comes alone.
  ASSERT_TRUE(leader.Commit(Change(31, "team-b/job", "late")).ok());
  applied = reader.CatchUp(&follower);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 1u);
  EXPECT_EQ(Dump(follower), Dump(leader));
}

TEST_F(HaLogTest, ABatchLargerThanAnEtcdRequestIsSplitAndAppliedWhole) {
  std::unique_ptr<Leader> r1 = Lead("r1");
  std::unique_ptr<EtcdClient> c2 = Client();
  ReplicatedStore& leader = *r1->store;

  // Three objects of 1.4 MiB (admitd takes objects up to 1.5 MiB), each larger than a chunk:
  // more than etcd takes in one request (1.5 MiB by default).
  store::Batch big;
  big.revision = 3;
  for (int i = 0; i < 3; ++i) {
    big.writes.push_back({v1::OBJECT_KIND_WORKLOAD, absl::StrCat("team-a/big-", i),
                          Incompressible(1400 * 1024, i), false});
    big.events.push_back({static_cast<uint64_t>(i + 1), absl::StrCat("event ", i + 1)});
  }
  ASSERT_TRUE(leader.Commit(big).ok());
  EXPECT_EQ(PartsInEtcd(*c2, 3), 5);  // 4.2 MiB in chunks of 1 MiB

  store::MemoryStore follower;
  ReplicatedLog reader = Log(c2.get(), nullptr, 1 << 20, /*read_page_keys=*/2);
  absl::StatusOr<uint64_t> applied = reader.CatchUp(&follower);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 1u);
  EXPECT_EQ(Dump(follower), Dump(leader));
  std::string value;
  ASSERT_TRUE(follower.ForEachObject([&](v1::ObjectKind, absl::string_view key,
                                         absl::string_view v) {
                if (key == "team-a/big-1") value = std::string(v);
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(value, Incompressible(1400 * 1024, 1));
}

TEST_F(HaLogTest, ADeposedLeaderCommitsNothing) {
  std::unique_ptr<EtcdClient> c3 = Client();
  std::unique_ptr<Leader> r1 = Lead("r1", 1 << 20, /*ttl=*/absl::Seconds(2));
  ReplicatedStore& s1 = *r1->store;
  ASSERT_TRUE(s1.Commit(Change(1, "team-a/job", "from r1")).ok());

  r1->election->PauseRenewalForTesting(true);  // as a process stopped with SIGSTOP would
  std::unique_ptr<Leader> r2 = Lead("r2");
  ReplicatedStore& s2 = *r2->store;
  EXPECT_EQ(s2.revision(), 1u);  // the new leader starts from everything committed

  // The old leader's next batch: refused, and in neither its store nor the log.
  absl::Status late = s1.Commit(Change(2, "team-a/job", "late from r1"));
  EXPECT_TRUE(absl::IsUnavailable(late)) << late;
  EXPECT_EQ(s1.revision(), 1u);
  EXPECT_EQ(PartsInEtcd(*c3, 2), 0);
  EXPECT_TRUE(absl::IsUnavailable(s1.Recover()));  // not the leader: it must step down

  ASSERT_TRUE(s2.Commit(Change(2, "team-a/job", "from r2")).ok());
  store::MemoryStore follower;
  ASSERT_TRUE(Log(c3.get(), nullptr).CatchUp(&follower).ok());
  EXPECT_EQ(Dump(follower), Dump(s2));
  EXPECT_NE(Dump(follower).find("from r2"), std::string::npos);
  EXPECT_EQ(Dump(follower).find("late from r1"), std::string::npos);
}

TEST_F(HaLogTest, ABatchCutShortByACrashIsNeverAppliedAndTheNextLeaderDropsIt) {
  std::unique_ptr<EtcdClient> c3 = Client();
  std::unique_ptr<Leader> r1 = Lead("r1", /*max_chunk_bytes=*/64);
  ASSERT_TRUE(r1->store->Commit(Change(1, "team-a/job", Incompressible(200, 1))).ok());
  EXPECT_GT(PartsInEtcd(*c3, 1), 1);

  // r1 dies after writing two of the parts of batch 2 (their transactions are its own).
  const std::vector<std::string> chunks =
      EncodeChunks(Change(2, "team-a/job", Incompressible(300, 2)), /*previous=*/1, 64);
  ASSERT_GT(chunks.size(), 2u);
  for (uint32_t part = 0; part < 2; ++part) {
    etcdserverpb::TxnRequest put;
    put.add_success()->mutable_request_put()->set_key(LogKey(Domain(), 2, part));
    put.mutable_success(0)->mutable_request_put()->set_value(chunks[part]);
    ASSERT_TRUE(FencedWrite(*r1->election, put).ok());
  }
  store::MemoryStore follower;
  ReplicatedLog reader = Log(c3.get(), nullptr);
  ASSERT_TRUE(reader.CatchUp(&follower).ok());
  EXPECT_EQ(follower.revision(), 1u);  // batch 2 is incomplete: not applied
  ASSERT_TRUE(r1->election->Resign().ok());

  std::unique_ptr<Leader> r2 = Lead("r2", /*max_chunk_bytes=*/64);
  ReplicatedStore& s2 = *r2->store;
  EXPECT_EQ(s2.revision(), 1u);
  EXPECT_EQ(PartsInEtcd(*c3, 2), 0);  // dropped
  ASSERT_TRUE(s2.Commit(Change(2, "team-a/job", "the new leader's batch 2")).ok());

  ASSERT_TRUE(reader.CatchUp(&follower).ok());
  EXPECT_EQ(Dump(follower), Dump(s2));
  EXPECT_NE(Dump(follower).find("the new leader's batch 2"), std::string::npos);
}

TEST_F(HaLogTest, ABatchEtcdTookBeforeItsPredecessorWaitsForItOrIsDropped) {
  std::unique_ptr<EtcdClient> c3 = Client();
  std::unique_ptr<Leader> r1 = Lead("r1");
  ASSERT_TRUE(r1->store->Commit(Change(1, "team-a/job", "state 1")).ok());
  // Batches 2 and 3 on their way at once; etcd takes 3 first.
  auto put = [&](uint64_t revision, uint64_t previous) {
    etcdserverpb::TxnRequest txn;
    etcdserverpb::PutRequest* p = txn.add_success()->mutable_request_put();
    p->set_key(LogKey(Domain(), revision));
    p->set_value(EncodeChunks(Change(revision, "team-a/job", absl::StrCat("state ", revision)),
                              previous, 1 << 20)[0]);
    return FencedWrite(*r1->election, txn).status();
  };
  ASSERT_TRUE(put(3, 2).ok());
  store::MemoryStore follower;
  ReplicatedLog reader = Log(c3.get(), nullptr);
  ASSERT_TRUE(reader.CatchUp(&follower).ok());
  EXPECT_EQ(follower.revision(), 1u);  // 3 waits for 2
  ASSERT_TRUE(put(2, 1).ok());
  absl::StatusOr<uint64_t> applied = reader.CatchUp(&follower);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 2u);
  EXPECT_EQ(follower.revision(), 3u);

  // Batch 5 landed, batch 4 never did, and the leader dies: the next one drops 5.
  ASSERT_TRUE(put(5, 4).ok());
  ASSERT_TRUE(r1->election->Resign().ok());
  std::unique_ptr<Leader> r2 = Lead("r2");
  EXPECT_EQ(r2->store->revision(), 3u);
  EXPECT_EQ(PartsInEtcd(*c3, 5), 0);
  ASSERT_TRUE(r2->store->Commit(Change(4, "team-a/job", "the new leader's batch 4")).ok());
  ASSERT_TRUE(reader.CatchUp(&follower).ok());
  EXPECT_EQ(Dump(follower), Dump(*r2->store));
  EXPECT_NE(Dump(follower).find("the new leader's batch 4"), std::string::npos);
}

TEST_F(HaLogTest, AnAnswerLostWithEtcdsQuorumIsSettledBeforeTheNextWrite) {
  std::unique_ptr<EtcdClient> c3 = Client();
  // A lease that outlives the outage: the leader keeps leading through it.
  std::unique_ptr<Leader> r1 =
      Lead("r1", 1 << 20, /*ttl=*/absl::Seconds(60), /*call_timeout=*/absl::Seconds(1));
  ReplicatedStore& leader = *r1->store;
  ASSERT_TRUE(leader.Commit(Change(1, "team-a/job", "before")).ok());

  etcd_->Kill(1);
  etcd_->Kill(2);
  const absl::Time start = absl::Now();
  absl::Status lost = leader.Commit(Change(2, "team-a/job", "during"));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsUnavailable(lost)) << lost;
  EXPECT_LT(took, absl::Seconds(5)) << took;  // the etcd client's deadline (1 s here) and a retry
  EXPECT_EQ(leader.revision(), 1u);
  // Refused at once until settled, whatever etcd does meanwhile.
  EXPECT_TRUE(absl::IsUnavailable(leader.Commit(Change(3, "team-a/job", "after"))));
  EXPECT_TRUE(absl::IsUnavailable(leader.Recover()));

  ASSERT_TRUE(etcd_->Restart(1).ok()) << etcd_->Log(1);
  ASSERT_TRUE(etcd_->Restart(2).ok()) << etcd_->Log(2);
  ASSERT_TRUE(Eventually([&] { return leader.Recover(); }).ok());
  // Batch 2 landed or it did not; either way the store and the log agree, and the next batch
  // follows whatever the store holds.
  const uint64_t settled = leader.revision();
  EXPECT_TRUE(settled == 1 || settled == 2) << settled;
  EXPECT_EQ(PartsInEtcd(*c3, 2), settled == 2 ? 1 : 0);
  ASSERT_TRUE(leader.Commit(Change(3, "team-a/job", "after")).ok());
  store::MemoryStore follower;
  ASSERT_TRUE(Log(c3.get(), nullptr).CatchUp(&follower).ok());
  EXPECT_EQ(Dump(follower), Dump(leader));
}

}  // namespace
}  // namespace admitd::ha
