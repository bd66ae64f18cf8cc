#include "store/memory_store.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_conformance_test.h"

namespace admitd::store {
namespace {

using ::testing::ElementsAre;

INSTANTIATE_TEST_SUITE_P(
    Memory, StoreConformanceTest,
    ::testing::Values(StoreFactory{
        "Memory",
        [](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
          return std::make_unique<MemoryStore>(options);
        }}),
    [](const auto& info) { return info.param.name; });

TEST(MemoryStoreTest, InjectedFailuresChangeNothingThenCommitsResume) {
  MemoryStore store;
  ASSERT_TRUE(store.Commit(PutBatch(1, "ns/a", "v1")).ok());
  store.FailNextCommits(2, absl::UnavailableError("disk on fire"));

  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(store.Commit(PutBatch(2, "ns/a", "v2")), absl::UnavailableError("disk on fire"));
  }
  EXPECT_EQ(store.revision(), 1u);
  EXPECT_EQ(ObjectsOf(store, v1::OBJECT_KIND_WORKLOAD).at("ns/a"), "v1");
  EXPECT_THAT(EventRevisions(store), ElementsAre(1u));
  EXPECT_EQ(store.failed_commit_count(), 2u);

  ASSERT_TRUE(store.Commit(PutBatch(2, "ns/a", "v2")).ok());
  EXPECT_EQ(store.revision(), 2u);
  EXPECT_EQ(ObjectsOf(store, v1::OBJECT_KIND_WORKLOAD).at("ns/a"), "v2");
  EXPECT_EQ(store.commit_count(), 2u);
  EXPECT_EQ(store.failed_commit_count(), 2u);
}

TEST(MemoryStoreTest, FailNextCommitsReplacesAndClears) {
  MemoryStore store;
  store.FailNextCommits(5, absl::DataLossError("bad sector"));
  store.FailNextCommits(1, absl::ResourceExhaustedError("disk full"));
  EXPECT_EQ(store.Commit(PutBatch(1, "ns/a", "x")).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(store.Commit(PutBatch(1, "ns/a", "x")).ok());

  store.FailNextCommits(3);
  EXPECT_EQ(store.Commit(PutBatch(2, "ns/a", "x")).code(), absl::StatusCode::kUnavailable);
  store.FailNextCommits(0);
  EXPECT_TRUE(store.Commit(PutBatch(2, "ns/a", "x")).ok());
}

TEST(MemoryStoreTest, RejectedCommitsDoNotUseUpAnInjectedFailure) {
  MemoryStore store;
  store.FailNextCommits(1, absl::UnavailableError("disk"));
  Batch invalid = PutBatch(1, "ns/a", "x");
  invalid.writes[0].kind = v1::OBJECT_KIND_UNSPECIFIED;
  EXPECT_EQ(store.Commit(invalid).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Commit(PutBatch(1, "ns/a", "x")).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.failed_commit_count(), 1u);

  store.FailNextCommits(1, absl::UnavailableError("disk"));
  ASSERT_TRUE(store.Close().ok());
  EXPECT_EQ(store.Commit(PutBatch(1, "ns/a", "x")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.failed_commit_count(), 1u);
}

TEST(MemoryStoreTest, AnOkStatusCannotBeInjected) {
  MemoryStore store;
  store.FailNextCommits(1, absl::OkStatus());
  EXPECT_EQ(store.Commit(PutBatch(1, "ns/a", "x")).code(), absl::StatusCode::kInternal);
}

TEST(MemoryStoreTest, CountsLoggedEvents) {
  MemoryStore store({.event_retention = 2});
  for (uint64_t r = 1; r <= 5; ++r) ASSERT_TRUE(store.Commit(PutBatch(r, "ns/a", "x")).ok());
  EXPECT_EQ(store.logged_events(), 5u);
  ASSERT_EQ(*store.CompactEvents(), 3u);
  EXPECT_EQ(store.logged_events(), 2u);
}

}  // namespace
}  // namespace admitd::store
