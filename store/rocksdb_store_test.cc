#include "store/rocksdb_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "store/keys.h"
#include "store/store_conformance_test.h"

namespace admitd::store {
namespace {

using ::testing::ElementsAre;

INSTANTIATE_TEST_SUITE_P(RocksDb, StoreConformanceTest,
                         ::testing::Values(StoreFactory{"RocksDb", &RocksDbStore::Open}),
                         [](const auto& info) { return info.param.name; });

std::unique_ptr<Store> OpenOrDie(const StoreOptions& options) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

class RocksDbStoreTest : public ::testing::Test {
 protected:
  TempDirs dirs_;
};

TEST_F(RocksDbStoreTest, StateSurvivesCloseAndReopen) {
  StoreOptions options{.path = dirs_.Fresh(), .event_retention = 3};
  {
    auto store = OpenOrDie(options);
    for (uint64_t r = 2; r <= 12; r += 2) {
      ASSERT_TRUE(store->Commit(PutBatch(r, absl::StrCat("ns/w", r), "x")).ok());
    }
    ASSERT_EQ(*store->CompactEvents(), 3u);
    ASSERT_TRUE(store->Close().ok());
  }
  auto store = OpenOrDie(options);
  EXPECT_EQ(store->revision(), 12u);
  EXPECT_EQ(store->oldest_event_revision(), 7u);
  EXPECT_EQ(static_cast<RocksDbStore*>(store.get())->logged_events(), 3u);
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD).size(), 6u);
  EXPECT_THAT(EventRevisions(*store, 6), ElementsAre(8u, 10u, 12u));
  // The revision resumes: the next batch must be above 12.
  EXPECT_EQ(store->Commit(PutBatch(12, "ns/late", "x")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->Commit(PutBatch(13, "ns/late", "x")).ok());
}

TEST_F(RocksDbStoreTest, ACheckpointOpensAsTheSameStore) {
  StoreOptions options{.path = dirs_.Fresh()};
  auto store = OpenOrDie(options);
  for (uint64_t r = 1; r <= 5; ++r) {
    ASSERT_TRUE(store->Commit(PutBatch(r, absl::StrCat("ns/w", r), absl::StrCat("v", r))).ok());
  }
  const std::string copy = dirs_.Fresh() + "/copy";
  absl::StatusOr<uint64_t> revision = store->Checkpoint(copy);
  ASSERT_TRUE(revision.ok()) << revision.status();
  EXPECT_EQ(*revision, 5u);
  // Later writes are not in the copy; a second checkpoint into the same place is refused.
  ASSERT_TRUE(store->Commit(PutBatch(6, "ns/w6", "v6")).ok());
  EXPECT_EQ(store->Checkpoint(copy).status().code(), absl::StatusCode::kFailedPrecondition);

  auto copied = OpenOrDie({.path = copy});
  ASSERT_NE(copied, nullptr);
  EXPECT_EQ(copied->revision(), 5u);
  EXPECT_EQ(ObjectsOf(*copied, v1::OBJECT_KIND_WORKLOAD).size(), 5u);
  EXPECT_THAT(EventRevisions(*copied), ElementsAre(1u, 2u, 3u, 4u, 5u));
  ASSERT_TRUE(store->Close().ok());
  EXPECT_EQ(store->Checkpoint(dirs_.Fresh() + "/late").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Batch r writes a workload and a ClusterQueue and logs their two events (revisions 2r-1, 2r).
Batch TwoKindBatch(uint64_t r) {
  Batch b;
  b.revision = 2 * r;
  b.writes.push_back({v1::OBJECT_KIND_WORKLOAD, absl::StrCat("ns/w", r), absl::StrCat("v", r)});
  b.writes.push_back({v1::OBJECT_KIND_CLUSTER_QUEUE, absl::StrCat("cq", r), absl::StrCat("v", r)});
  b.events.push_back({2 * r - 1, "workload"});
  b.events.push_back({2 * r, "cluster-queue"});
  return b;
}

enum class Death { kSigkill, kExitWithoutClose };

class RocksDbStoreCrashTest : public RocksDbStoreTest,
                              public ::testing::WithParamInterface<Death> {};

// A child process commits batches and reports each acknowledged one through a pipe, then dies
// without closing the store: SIGKILLed by the parent mid-stream, or by _exit(0) after its last
// batch. On reopen every acknowledged batch is there, and every batch is all or nothing.
TEST_P(RocksDbStoreCrashTest, AcknowledgedBatchesSurvive) {
  const StoreOptions options{.path = dirs_.Fresh()};
  constexpr uint64_t kAcked = 150;
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    absl::StatusOr<std::unique_ptr<Store>> opened = Store::Open(options);
    if (!opened.ok()) _exit(3);
    const uint64_t last = GetParam() == Death::kSigkill ? UINT64_MAX : kAcked;
    for (uint64_t r = 1; r <= last; ++r) {
      if (!(*opened)->Commit(TwoKindBatch(r)).ok()) _exit(4);
      if (write(pipefd[1], &r, sizeof(r)) != sizeof(r)) _exit(5);
    }
    (void)opened->release();  // leaked: no Close, no destructor, no flush
    _exit(0);
  }
  close(pipefd[1]);
  uint64_t acked = 0, r = 0;
  while (acked < kAcked && read(pipefd[0], &r, sizeof(r)) == sizeof(r)) acked = r;
  if (GetParam() == Death::kSigkill) kill(child, SIGKILL);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  close(pipefd[0]);
  if (GetParam() == Death::kSigkill) {
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << wstatus;
  } else {
    ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  }
  ASSERT_EQ(acked, kAcked);

  auto store = OpenOrDie(options);
  ASSERT_GE(store->revision(), 2 * acked);
  ASSERT_EQ(store->revision() % 2, 0u) << "a batch was half applied";
  const uint64_t batches = store->revision() / 2;
  auto workloads = ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD);
  auto queues = ObjectsOf(*store, v1::OBJECT_KIND_CLUSTER_QUEUE);
  EXPECT_EQ(workloads.size(), batches);
  EXPECT_EQ(queues.size(), batches);
  for (uint64_t i = 1; i <= batches; ++i) {
    EXPECT_EQ(workloads[absl::StrCat("ns/w", i)], absl::StrCat("v", i)) << "batch " << i;
    EXPECT_EQ(queues[absl::StrCat("cq", i)], absl::StrCat("v", i)) << "batch " << i;
  }
  std::vector<uint64_t> events = EventRevisions(*store);
  ASSERT_EQ(events.size(), 2 * batches);
  EXPECT_EQ(events.back(), store->revision());
  // The store carries on from the recovered revision.
  EXPECT_TRUE(store->Commit(TwoKindBatch(batches + 1)).ok());
}

INSTANTIATE_TEST_SUITE_P(Deaths, RocksDbStoreCrashTest,
                         ::testing::Values(Death::kSigkill, Death::kExitWithoutClose),
                         [](const auto& info) {
                           return info.param == Death::kSigkill ? "Sigkill" : "ExitWithoutClose";
                         });

TEST_F(RocksDbStoreTest, ASecondOpenInThisProcessIsRefused) {
  const StoreOptions options{.path = dirs_.Fresh()};
  auto first = OpenOrDie(options);
  absl::StatusOr<std::unique_ptr<Store>> second = Store::Open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), options.path)) << second.status();
  // Once the first closes, the directory is free again.
  ASSERT_TRUE(first->Close().ok());
  EXPECT_TRUE(Store::Open(options).ok());
}

// The child holds the store; this process, which never opened it, is refused through the
// LOCK file's fcntl lock (a forked child would inherit RocksDB's in-process lock table instead).
TEST_F(RocksDbStoreTest, ASecondProcessIsRefused) {
  const StoreOptions options{.path = dirs_.Fresh()};
  int opened[2], release[2];
  ASSERT_EQ(pipe(opened), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<std::unique_ptr<Store>> first = Store::Open(options);
    const char ok = first.ok() ? 1 : 0;
    if (write(opened[1], &ok, 1) != 1) _exit(2);
    char done;
    (void)read(release[0], &done, 1);  // returns when the parent writes or exits
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(opened[0], &ok, 1), 1);
  ASSERT_EQ(ok, 1) << "the child could not open the store";
  absl::StatusOr<std::unique_ptr<Store>> second = Store::Open(options);
  const char done = 1;
  ASSERT_EQ(write(release[1], &done, 1), 1);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  for (int fd : {opened[0], opened[1], release[0], release[1]}) close(fd);

  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), options.path)) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), "another process")) << second.status();
  // Once the holder is gone the directory can be opened again.
  EXPECT_TRUE(Store::Open(options).ok());
}

// Opens the raw database with every family the directory holds and applies `edit` to it.
void EditRaw(const std::string& path,
             const std::function<void(rocksdb::DB*, std::vector<rocksdb::ColumnFamilyHandle*>&,
                                      const std::vector<std::string>&)>& edit) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names)
    descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  rocksdb::Options options;
  options.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, path, descriptors, &handles, &db).ok());
  edit(db, handles, names);
  for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  delete db;
}

TEST_F(RocksDbStoreTest, AnotherFormatVersionIsRefused) {
  const StoreOptions options{.path = dirs_.Fresh()};
  ASSERT_TRUE(OpenOrDie(options)->Close().ok());
  EditRaw(options.path, [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles,
                           const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != kMetaFamily) continue;
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), handles[i], kFormatVersionKey,
                          EncodeUint64(kFormatVersion + 1))
                      .ok());
    }
  });
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(store.status().message(),
                                absl::StrCat("format version ", kFormatVersion + 1)))
      << store.status();
}

TEST_F(RocksDbStoreTest, AVersionOneStoreIsUpgraded) {
  const StoreOptions options{.path = dirs_.Fresh()};
  {
    auto store = OpenOrDie(options);
    Batch b;
    b.revision = 1;
    b.events.push_back({1, "e1"});
    b.writes.push_back({v1::OBJECT_KIND_CLUSTER_QUEUE, "cq", "v", false});
    ASSERT_TRUE(store->Commit(b).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  // What version 1 wrote: no admission_checks family, format version 1.
  EditRaw(options.path, [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles,
                           const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == kMetaFamily) {
        ASSERT_TRUE(
            db->Put(rocksdb::WriteOptions(), handles[i], kFormatVersionKey, EncodeUint64(1)).ok());
      }
      // What version 1 lacked (the pods family came in version 3).
      if (names[i] == "admission_checks" || names[i] == "pods") {
        ASSERT_TRUE(db->DropColumnFamily(handles[i]).ok());
      }
    }
  });
  auto store = OpenOrDie(options);
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_CLUSTER_QUEUE).size(), 1u);
  EXPECT_TRUE(ObjectsOf(*store, v1::OBJECT_KIND_ADMISSION_CHECK).empty());
  ASSERT_TRUE(store->Close().ok());
  EditRaw(options.path, [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles,
                           const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != kMetaFamily) continue;
      std::string value;
      ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), handles[i], kFormatVersionKey, &value).ok());
      uint64_t version = 0;
      ASSERT_TRUE(DecodeUint64(value, &version));
      EXPECT_EQ(version, kFormatVersion);
    }
  });
}

TEST_F(RocksDbStoreTest, AForeignDatabaseIsRefused) {
  const StoreOptions options{.path = dirs_.Fresh()};
  ASSERT_TRUE(OpenOrDie(options)->Close().ok());
  EditRaw(options.path, [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles,
                           const std::vector<std::string>&) {
    rocksdb::ColumnFamilyHandle* extra = nullptr;
    ASSERT_TRUE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "not_ours", &extra).ok());
    handles.push_back(extra);
  });
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
}

TEST_F(RocksDbStoreTest, NoSyncSkipsTheInjectedDelayButStillPersistsOnClose) {
  const StoreOptions options{
      .path = dirs_.Fresh(), .sync = false, .injected_sync_delay = absl::Hours(1)};
  {
    auto store = OpenOrDie(options);
    ASSERT_TRUE(store->Commit(PutBatch(1, "ns/w", "x")).ok());  // would hang if it slept
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_EQ(OpenOrDie(options)->revision(), 1u);
}

}  // namespace
}  // namespace admitd::store
