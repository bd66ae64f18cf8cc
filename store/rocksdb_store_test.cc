#include "store/rocksdb_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "store/keys.h"

namespace admitd::store {
namespace {

std::string FreshPath(const std::string& name) {
  std::string path = absl::StrCat(::testing::TempDir(), "/store_test_", getpid(), "_", name);
  std::filesystem::remove_all(path);
  return path;
}

std::unique_ptr<Store> OpenOrDie(const StoreOptions& options) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// A batch at `revision` putting workload `key` with value `value`, and its event.
Batch PutBatch(uint64_t revision, const std::string& key, const std::string& value) {
  Batch b;
  b.revision = revision;
  b.writes.push_back({v1::OBJECT_KIND_WORKLOAD, key, value, false});
  b.events.push_back({revision, absl::StrCat("event-", revision)});
  return b;
}

std::map<std::string, std::string> Objects(const Store& store, v1::ObjectKind want) {
  std::map<std::string, std::string> out;
  EXPECT_TRUE(store
                  .ForEachObject([&](v1::ObjectKind kind, absl::string_view key,
                                     absl::string_view value) {
                    if (kind == want) out[std::string(key)] = std::string(value);
                    return absl::OkStatus();
                  })
                  .ok());
  return out;
}

TEST(RocksDbStoreTest, EveryKindRoundTripsAndDeletes) {
  StoreOptions options{.path = FreshPath("kinds")};
  auto store = OpenOrDie(options);
  Batch b;
  b.revision = 6;
  uint64_t r = 0;
  for (v1::ObjectKind kind : kStoredKinds) {
    b.writes.push_back({kind, absl::StrCat("k", kind), absl::StrCat("v", kind), false});
    b.events.push_back({++r, "e"});
  }
  ASSERT_TRUE(store->Commit(b).ok());
  for (v1::ObjectKind kind : kStoredKinds) {
    auto objects = Objects(*store, kind);
    ASSERT_EQ(objects.size(), 1u) << kind;
    EXPECT_EQ(objects.begin()->second, absl::StrCat("v", kind));
  }
  Batch del;
  del.revision = 7;
  del.writes.push_back({v1::OBJECT_KIND_WORKLOAD, absl::StrCat("k", v1::OBJECT_KIND_WORKLOAD), "", true});
  del.events.push_back({7, "deleted"});
  ASSERT_TRUE(store->Commit(del).ok());
  EXPECT_TRUE(Objects(*store, v1::OBJECT_KIND_WORKLOAD).empty());
  EXPECT_EQ(Objects(*store, v1::OBJECT_KIND_CLUSTER_QUEUE).size(), 1u);
}

TEST(RocksDbStoreTest, RevisionAndObjectsSurviveReopen) {
  StoreOptions options{.path = FreshPath("reopen")};
  {
    auto store = OpenOrDie(options);
    EXPECT_EQ(store->revision(), 0u);
    EXPECT_EQ(store->oldest_event_revision(), 1u);
    for (uint64_t r = 1; r <= 5; ++r) {
      ASSERT_TRUE(store->Commit(PutBatch(r, absl::StrCat("ns/w", r), "x")).ok());
    }
    ASSERT_TRUE(store->Close().ok());
    EXPECT_EQ(store->Commit(PutBatch(6, "ns/late", "x")).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  auto store = OpenOrDie(options);
  EXPECT_EQ(store->revision(), 5u);
  EXPECT_EQ(store->oldest_event_revision(), 1u);
  EXPECT_EQ(Objects(*store, v1::OBJECT_KIND_WORKLOAD).size(), 5u);
}

TEST(RocksDbStoreTest, AcknowledgedCommitsSurviveSigkill) {
  StoreOptions options{.path = FreshPath("crash")};
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    auto opened = Store::Open(options);
    if (!opened.ok()) _exit(3);
    for (uint64_t r = 1;; ++r) {
      if (!(*opened)->Commit(PutBatch(r, absl::StrCat("ns/w", r), absl::StrCat("v", r))).ok()) {
        _exit(4);
      }
      // Acknowledge revision r only after Commit returned.
      if (write(pipefd[1], &r, sizeof(r)) != sizeof(r)) _exit(5);
    }
  }
  close(pipefd[1]);
  uint64_t acked = 0, r = 0;
  while (acked < 200 && read(pipefd[0], &r, sizeof(r)) == sizeof(r)) acked = r;
  kill(child, SIGKILL);
  int wstatus;
  waitpid(child, &wstatus, 0);
  ASSERT_TRUE(WIFSIGNALED(wstatus));
  close(pipefd[0]);
  ASSERT_GE(acked, 200u);

  auto store = OpenOrDie(options);
  EXPECT_GE(store->revision(), acked);
  auto objects = Objects(*store, v1::OBJECT_KIND_WORKLOAD);
  for (uint64_t i = 1; i <= acked; ++i) {
    auto it = objects.find(absl::StrCat("ns/w", i));
    ASSERT_NE(it, objects.end()) << "acknowledged revision " << i << " is lost";
    EXPECT_EQ(it->second, absl::StrCat("v", i));
  }
  // Batches are atomic: every stored object has its event, and nothing beyond the revision.
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(store->ReadEvents(0, 1 << 20, &events).ok());
  EXPECT_EQ(events.size(), objects.size());
  EXPECT_EQ(events.back().revision, store->revision());
}

TEST(RocksDbStoreTest, ReadEventsPagesInOrder) {
  StoreOptions options{.path = FreshPath("events")};
  auto store = OpenOrDie(options);
  for (uint64_t r = 1; r <= 10; ++r) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());
  std::vector<LoggedEvent> page;
  ASSERT_TRUE(store->ReadEvents(3, 4, &page).ok());
  ASSERT_EQ(page.size(), 4u);
  for (size_t i = 0; i < page.size(); ++i) {
    EXPECT_EQ(page[i].revision, 4 + i);
    EXPECT_EQ(page[i].value, absl::StrCat("event-", 4 + i));
  }
  page.clear();
  ASSERT_TRUE(store->ReadEvents(10, 4, &page).ok());
  EXPECT_TRUE(page.empty());
}

TEST(RocksDbStoreTest, CompactionKeepsTheNewestAndAnswersOutOfRange) {
  StoreOptions options{.path = FreshPath("compact"), .event_retention = 5};
  {
    auto store = OpenOrDie(options);
    for (uint64_t r = 1; r <= 12; ++r) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());
    absl::StatusOr<uint64_t> dropped = store->CompactEvents();
    ASSERT_TRUE(dropped.ok());
    EXPECT_EQ(*dropped, 7u);
    EXPECT_EQ(store->oldest_event_revision(), 8u);
    std::vector<LoggedEvent> events;
    EXPECT_EQ(store->ReadEvents(3, 100, &events).code(), absl::StatusCode::kOutOfRange);
    ASSERT_TRUE(store->ReadEvents(7, 100, &events).ok());
    ASSERT_EQ(events.size(), 5u);
    EXPECT_EQ(events.front().revision, 8u);
    EXPECT_EQ(*store->CompactEvents(), 0u);
  }
  auto store = OpenOrDie(options);
  EXPECT_EQ(store->oldest_event_revision(), 8u);
}

TEST(RocksDbStoreTest, ASecondOpenIsRefused) {
  StoreOptions options{.path = FreshPath("lock")};
  auto first = OpenOrDie(options);
  absl::StatusOr<std::unique_ptr<Store>> second = Store::Open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(options.path), absl::string_view::npos);
}

TEST(RocksDbStoreTest, InjectedSyncDelayIsApplied) {
  StoreOptions options{.path = FreshPath("delay"),
                       .injected_sync_delay = absl::Milliseconds(20)};
  auto store = OpenOrDie(options);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(store->Commit(PutBatch(1, "ns/w", "x")).ok());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
}

}  // namespace
}  // namespace admitd::store
