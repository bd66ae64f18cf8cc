#include "store/store_conformance_test.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "store/keys.h"

namespace admitd::store {

TempDirs::~TempDirs() {
  for (const std::string& path : made_) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
}

std::string TempDirs::Fresh() {
  static std::atomic<int> counter{0};
  std::string path = absl::StrCat(::testing::TempDir(), "/admitd_store_", getpid(), "_", counter++);
  std::filesystem::remove_all(path);
  made_.push_back(path);
  return path;
}

std::unique_ptr<Store> StoreConformanceTest::OpenStore(StoreOptions options) {
  options.path = dirs_.Fresh();
  absl::StatusOr<std::unique_ptr<Store>> store = GetParam().open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

Batch PutBatch(uint64_t revision, const std::string& key, const std::string& value) {
  Batch b;
  b.revision = revision;
  b.writes.push_back({v1::OBJECT_KIND_WORKLOAD, key, value, false});
  b.events.push_back({revision, absl::StrCat("event-", revision)});
  return b;
}

std::map<std::string, std::string> ObjectsOf(const Store& store, v1::ObjectKind want) {
  std::map<std::string, std::string> out;
  absl::Status status =
      store.ForEachObject([&](v1::ObjectKind kind, absl::string_view key, absl::string_view value) {
        if (kind == want) out[std::string(key)] = std::string(value);
        return absl::OkStatus();
      });
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

std::vector<uint64_t> EventRevisions(const Store& store, uint64_t after) {
  std::vector<LoggedEvent> events;
  absl::Status status = store.ReadEvents(after, 1 << 30, &events);
  EXPECT_TRUE(status.ok()) << status;
  std::vector<uint64_t> out;
  for (const LoggedEvent& e : events) out.push_back(e.revision);
  return out;
}

namespace {

using ::testing::ElementsAre;

TEST_P(StoreConformanceTest, EveryKindRoundTripsInKindThenKeyOrder) {
  auto store = OpenStore();
  Batch b;
  uint64_t r = 0;
  // Written in reverse so the order ForEachObject reports is the store's, not ours.
  for (auto kind = std::rbegin(kStoredKinds); kind != std::rend(kStoredKinds); ++kind) {
    for (const char* name : {"ns-b/z", "ns-a/a"}) {
      b.writes.push_back({*kind, name, absl::StrCat(FamilyFor(*kind), ":", name), false});
      b.events.push_back({++r, absl::StrCat("event-", r)});
    }
  }
  b.revision = r;
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(store->revision(), r);

  std::vector<std::string> seen;
  ASSERT_TRUE(
      store
          ->ForEachObject([&](v1::ObjectKind kind, absl::string_view key, absl::string_view value) {
            EXPECT_EQ(value, absl::StrCat(FamilyFor(kind), ":", key));
            seen.push_back(absl::StrCat(FamilyFor(kind), ":", key));
            return absl::OkStatus();
          })
          .ok());
  std::vector<std::string> want;
  for (v1::ObjectKind kind : kStoredKinds) {
    for (const char* name : {"ns-a/a", "ns-b/z"})
      want.push_back(absl::StrCat(FamilyFor(kind), ":", name));
  }
  EXPECT_EQ(seen, want);
}

TEST_P(StoreConformanceTest, DeletesRemoveOnlyTheNamedObject) {
  auto store = OpenStore();
  Batch b;
  b.revision = 3;
  b.writes.push_back({v1::OBJECT_KIND_WORKLOAD, "ns/a", "a", false});
  b.writes.push_back({v1::OBJECT_KIND_WORKLOAD, "ns/b", "b", false});
  b.writes.push_back({v1::OBJECT_KIND_LOCAL_QUEUE, "ns/a", "queue", false});
  b.events = {{1, "e1"}, {2, "e2"}, {3, "e3"}};
  ASSERT_TRUE(store->Commit(b).ok());

  Batch del;
  del.revision = 5;
  del.writes.push_back({v1::OBJECT_KIND_WORKLOAD, "ns/a", "", true});
  del.writes.push_back({v1::OBJECT_KIND_WORKLOAD, "ns/never-stored", "", true});
  del.events = {{4, "e4"}, {5, "e5"}};
  ASSERT_TRUE(store->Commit(del).ok());
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD),
            (std::map<std::string, std::string>{{"ns/b", "b"}}));
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_LOCAL_QUEUE).count("ns/a"), 1u);
}

TEST_P(StoreConformanceTest, ForEachObjectStopsAtTheFirstError) {
  auto store = OpenStore();
  Batch b;
  b.revision = 3;
  for (const char* key : {"ns/a", "ns/b", "ns/c"}) {
    b.writes.push_back({v1::OBJECT_KIND_WORKLOAD, key, "x", false});
  }
  ASSERT_TRUE(store->Commit(b).ok());
  int calls = 0;
  absl::Status status =
      store->ForEachObject([&](v1::ObjectKind, absl::string_view, absl::string_view) {
        return ++calls == 2 ? absl::AbortedError("enough") : absl::OkStatus();
      });
  EXPECT_EQ(status, absl::AbortedError("enough"));
  EXPECT_EQ(calls, 2);
}

TEST_P(StoreConformanceTest, RevisionFollowsBatchesWithOrWithoutEvents) {
  auto store = OpenStore();
  EXPECT_EQ(store->revision(), 0u);
  EXPECT_EQ(store->oldest_event_revision(), 1u);
  ASSERT_TRUE(store->Commit(PutBatch(4, "ns/a", "x")).ok());
  EXPECT_EQ(store->revision(), 4u);
  Batch quiet;
  quiet.revision = 9;
  quiet.writes.push_back({v1::OBJECT_KIND_COHORT, "c", "x", false});
  ASSERT_TRUE(store->Commit(quiet).ok());
  EXPECT_EQ(store->revision(), 9u);
  EXPECT_EQ(store->oldest_event_revision(), 1u);
  EXPECT_THAT(EventRevisions(*store), ElementsAre(4u));
}

TEST_P(StoreConformanceTest, InvalidBatchesChangeNothing) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Commit(PutBatch(10, "ns/a", "old")).ok());

  std::vector<Batch> invalid;
  Batch bad_kind = PutBatch(11, "ns/a", "new");
  bad_kind.writes.push_back({v1::OBJECT_KIND_UNSPECIFIED, "x", "y", false});
  invalid.push_back(bad_kind);
  Batch backwards = PutBatch(12, "ns/a", "new");
  backwards.events = {{12, "e"}, {11, "e"}};
  invalid.push_back(backwards);
  invalid.push_back(PutBatch(10, "ns/a", "new"));  // its event would overwrite revision 10
  Batch beyond = PutBatch(11, "ns/a", "new");
  beyond.events.push_back({12, "e"});
  invalid.push_back(beyond);
  Batch older;
  older.revision = 9;
  invalid.push_back(older);

  for (const Batch& b : invalid) {
    absl::Status status = store->Commit(b);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
  EXPECT_EQ(store->revision(), 10u);
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD),
            (std::map<std::string, std::string>{{"ns/a", "old"}}));
  std::vector<LoggedEvent> events;
  ASSERT_TRUE(store->ReadEvents(0, 100, &events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value, "event-10");
}

TEST_P(StoreConformanceTest, ReadEventsPagesInRevisionOrder) {
  auto store = OpenStore();
  // Revisions with gaps, as the sequencer leaves when it coalesces an object's changes.
  for (uint64_t r = 2; r <= 20; r += 2) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());

  std::vector<uint64_t> paged;
  uint64_t after = 0;
  for (;;) {
    std::vector<LoggedEvent> page;
    ASSERT_TRUE(store->ReadEvents(after, 3, &page).ok());
    ASSERT_LE(page.size(), 3u);
    if (page.empty()) break;
    for (const LoggedEvent& e : page) {
      EXPECT_EQ(e.value, absl::StrCat("event-", e.revision));
      paged.push_back(e.revision);
    }
    after = page.back().revision;
  }
  EXPECT_THAT(paged, ElementsAre(2u, 4u, 6u, 8u, 10u, 12u, 14u, 16u, 18u, 20u));
  EXPECT_THAT(EventRevisions(*store, 5), ElementsAre(6u, 8u, 10u, 12u, 14u, 16u, 18u, 20u));
  EXPECT_TRUE(EventRevisions(*store, 20).empty());
  EXPECT_TRUE(EventRevisions(*store, 1000).empty());

  std::vector<LoggedEvent> appended = {{99, "kept"}};
  ASSERT_TRUE(store->ReadEvents(0, 0, &appended).ok());
  ASSERT_TRUE(store->ReadEvents(16, 10, &appended).ok());
  ASSERT_EQ(appended.size(), 3u);  // appends, never clears
  EXPECT_EQ(appended[0].value, "kept");
  EXPECT_EQ(appended[1].revision, 18u);
}

TEST_P(StoreConformanceTest, CompactionKeepsExactlyTheNewestEvents) {
  auto store = OpenStore({.event_retention = 5});
  for (uint64_t r = 3; r <= 36; r += 3) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());

  absl::StatusOr<uint64_t> dropped = store->CompactEvents();
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 7u);
  EXPECT_THAT(EventRevisions(*store, 21), ElementsAre(24u, 27u, 30u, 33u, 36u));
  // 21 was the newest dropped; everything from 22 on is retained.
  EXPECT_EQ(store->oldest_event_revision(), 22u);
  EXPECT_EQ(*store->CompactEvents(), 0u);

  for (uint64_t r = 37; r <= 39; ++r) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());
  EXPECT_EQ(*store->CompactEvents(), 3u);
  EXPECT_THAT(EventRevisions(*store, 32), ElementsAre(33u, 36u, 37u, 38u, 39u));
  EXPECT_EQ(store->oldest_event_revision(), 31u);
}

TEST_P(StoreConformanceTest, ReadingCompactedEventsIsOutOfRange) {
  auto store = OpenStore({.event_retention = 2});
  for (uint64_t r = 1; r <= 6; ++r) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());
  ASSERT_EQ(*store->CompactEvents(), 4u);

  std::vector<LoggedEvent> out = {{1, "kept"}};
  absl::Status status = store->ReadEvents(3, 10, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(absl::StrContains(status.message(), "oldest retained revision is 5")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "list again")) << status;
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(store->ReadEvents(0, 10, &out).code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(EventRevisions(*store, 4), ElementsAre(5u, 6u));
}

TEST_P(StoreConformanceTest, CompactingToZeroEmptiesTheLog) {
  auto store = OpenStore({.event_retention = 0});
  for (uint64_t r = 1; r <= 4; ++r) ASSERT_TRUE(store->Commit(PutBatch(r, "ns/w", "x")).ok());
  EXPECT_EQ(*store->CompactEvents(), 4u);
  EXPECT_EQ(store->oldest_event_revision(), 5u);
  EXPECT_TRUE(EventRevisions(*store, 4).empty());
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD).size(), 1u);  // objects are untouched
}

TEST_P(StoreConformanceTest, ClosedStoreRefusesEveryCall) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Commit(PutBatch(1, "ns/w", "x")).ok());
  ASSERT_TRUE(store->Close().ok());
  EXPECT_TRUE(store->Close().ok());
  const auto failed_precondition = absl::StatusCode::kFailedPrecondition;
  EXPECT_EQ(store->Commit(PutBatch(2, "ns/w", "x")).code(), failed_precondition);
  std::vector<LoggedEvent> events;
  EXPECT_EQ(store->ReadEvents(0, 10, &events).code(), failed_precondition);
  EXPECT_EQ(store->CompactEvents().status().code(), failed_precondition);
  EXPECT_EQ(store->Recover().code(), failed_precondition);
  EXPECT_EQ(store
                ->ForEachObject([](v1::ObjectKind, absl::string_view, absl::string_view) {
                  return absl::OkStatus();
                })
                .code(),
            failed_precondition);
  EXPECT_EQ(store->revision(), 1u);
}

TEST_P(StoreConformanceTest, RecoverOnAHealthyStoreChangesNothing) {
  auto store = OpenStore({.event_retention = 10});
  ASSERT_TRUE(store->Commit(PutBatch(1, "ns/a", "x")).ok());
  ASSERT_TRUE(store->Commit(PutBatch(2, "ns/b", "y")).ok());
  ASSERT_TRUE(store->Recover().ok());
  EXPECT_EQ(store->revision(), 2u);
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD).size(), 2u);
  EXPECT_EQ(EventRevisions(*store), (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(store->Commit(PutBatch(3, "ns/c", "z")).ok());
}

// A writer commits and compacts while readers replay. Every successful read must be a gapless
// run starting right after `after` (revisions are dense here) and never pass the revision read
// after it; a read racing compaction may only answer OUT_OF_RANGE.
TEST_P(StoreConformanceTest, ReadersRunBesideCommitsAndCompaction) {
  auto store = OpenStore({.sync = false, .event_retention = 20});
  constexpr uint64_t kBatches = 400;
  std::atomic<bool> done{false};
  std::atomic<int> successful_reads{0};
  std::thread writer([&] {
    for (uint64_t r = 1; r <= kBatches; ++r) {
      absl::Status status = store->Commit(PutBatch(r, absl::StrCat("ns/w", r % 7), "x"));
      if (status.ok() && r % 10 == 0) status = store->CompactEvents().status();
      if (!status.ok()) {
        ADD_FAILURE() << status;
        break;
      }
    }
    done = true;
  });
  auto reader = [&](bool from_floor) {
    while (!done.load() || successful_reads.load() < 10) {
      const uint64_t after = from_floor ? store->oldest_event_revision() - 1 : 0;
      std::vector<LoggedEvent> events;
      absl::Status status = store->ReadEvents(after, 1000, &events);
      const uint64_t head = store->revision();
      if (!status.ok()) {
        // Once the writer is done nothing compacts, so a reader from the floor must succeed.
        ASSERT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
        if (done.load() && !from_floor) return;
        ASSERT_TRUE(events.empty());
        continue;
      }
      for (size_t i = 0; i < events.size(); ++i) ASSERT_EQ(events[i].revision, after + 1 + i);
      if (!events.empty()) {
        ASSERT_LE(events.back().revision, head);
      }
      ++successful_reads;
    }
  };
  std::thread from_floor(reader, true);
  std::thread from_zero(reader, false);
  writer.join();
  from_floor.join();
  from_zero.join();
  EXPECT_EQ(store->revision(), kBatches);
  EXPECT_EQ(EventRevisions(*store, kBatches - 20).size(), 20u);
}

TEST_P(StoreConformanceTest, InjectedSyncDelayIsApplied) {
  const absl::Duration delay = absl::Milliseconds(30);
  auto store = OpenStore({.injected_sync_delay = delay});
  const absl::Time start = absl::Now();
  ASSERT_TRUE(store->Commit(PutBatch(1, "ns/w", "x")).ok());
  // A lower bound only: the commit cannot have taken less than the injected delay.
  EXPECT_GE(absl::Now() - start, delay);
}

}  // namespace
}  // namespace admitd::store
