// RocksDbStore on a disk that fails: writes refused while it is full or failing, nothing
// half-written, no abort, and Recover() making the store take writes again once the disk does,
// without reopening the process. The faults come from FaultyFileSystem.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "store/faulty_file_system.h"
#include "store/rocksdb_store.h"
#include "store/store_conformance_test.h"

namespace admitd::store {
namespace {

using Fault = FaultyFileSystem::Fault;

// Batch r writes workload "ns/w<r>" and logs its event at revision r.
Batch WorkloadBatch(uint64_t r) { return PutBatch(r, absl::StrCat("ns/w", r), "v"); }

class RocksDbStoreFaultTest : public ::testing::TestWithParam<Fault> {
 protected:
  std::unique_ptr<Store> Open(bool faulty = true) {
    StoreOptions options{.path = path_};
    if (faulty) options.file_system = fs_;
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  TempDirs dirs_;
  const std::string path_ = dirs_.Fresh();
  std::shared_ptr<FaultyFileSystem> fs_ = std::make_shared<FaultyFileSystem>();
};

TEST_P(RocksDbStoreFaultTest, WritesAreRefusedUntilTheDiskTakesThemAndRecoverRuns) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(WorkloadBatch(1)).ok());
  ASSERT_TRUE(store->Commit(WorkloadBatch(2)).ok());

  fs_->SetFault(GetParam());
  absl::Status failed = store->Commit(WorkloadBatch(3));
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  if (GetParam() == Fault::kNoSpace) {
    EXPECT_TRUE(absl::StrContains(failed.message(), "the disk is full")) << failed;
  }
  EXPECT_GT(fs_->failures(), 0u);
  // Every later write is refused too, even after the disk took writes again, until Recover.
  EXPECT_EQ(store->Commit(WorkloadBatch(3)).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->revision(), 2u);
  // Recovering while the disk still refuses fails cleanly, as often as it is tried.
  EXPECT_EQ(store->Recover().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->Recover().code(), absl::StatusCode::kUnavailable);

  fs_->SetFault(Fault::kNone);
  ASSERT_TRUE(store->Recover().ok());
  // The failed batch is not there; everything acknowledged is.
  EXPECT_EQ(store->revision(), 2u);
  auto workloads = ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD);
  EXPECT_EQ(workloads.size(), 2u);
  EXPECT_EQ(EventRevisions(*store), (std::vector<uint64_t>{1, 2}));
  ASSERT_TRUE(store->Commit(WorkloadBatch(3)).ok());
  ASSERT_TRUE(store->Close().ok());

  // A restart finds the same state.
  auto reopened = Open(/*faulty=*/false);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->revision(), 3u);
  EXPECT_EQ(ObjectsOf(*reopened, v1::OBJECT_KIND_WORKLOAD).size(), 3u);
  EXPECT_EQ(EventRevisions(*reopened), (std::vector<uint64_t>{1, 2, 3}));
}

TEST_P(RocksDbStoreFaultTest, ReadersKeepWorkingAfterAFailedWrite) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(WorkloadBatch(1)).ok());
  fs_->SetFault(GetParam());
  ASSERT_FALSE(store->Commit(WorkloadBatch(2)).ok());
  EXPECT_EQ(ObjectsOf(*store, v1::OBJECT_KIND_WORKLOAD).size(), 1u);
  EXPECT_EQ(EventRevisions(*store), (std::vector<uint64_t>{1}));
  fs_->SetFault(Fault::kNone);
  ASSERT_TRUE(store->Recover().ok());
  EXPECT_EQ(EventRevisions(*store), (std::vector<uint64_t>{1}));
}

// A compaction the disk refused deletes nothing, and the log's floor stays where it was.
TEST_P(RocksDbStoreFaultTest, AFailedCompactionKeepsTheEventLogWhole) {
  StoreOptions options{.path = path_, .event_retention = 2, .file_system = fs_};
  absl::StatusOr<std::unique_ptr<Store>> opened = Store::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  for (uint64_t r = 1; r <= 4; ++r) ASSERT_TRUE(store.Commit(WorkloadBatch(r)).ok());
  fs_->SetFault(GetParam());
  EXPECT_FALSE(store.CompactEvents().ok());
  EXPECT_EQ(store.oldest_event_revision(), 1u);
  EXPECT_EQ(EventRevisions(store), (std::vector<uint64_t>{1, 2, 3, 4}));
  fs_->SetFault(Fault::kNone);
  ASSERT_TRUE(store.Recover().ok());
  EXPECT_EQ(EventRevisions(store), (std::vector<uint64_t>{1, 2, 3, 4}));
  absl::StatusOr<uint64_t> dropped = store.CompactEvents();
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 2u);
  EXPECT_EQ(store.oldest_event_revision(), 3u);
  EXPECT_EQ(EventRevisions(store, 2), (std::vector<uint64_t>{3, 4}));
}

// Closing a database whose write failed (at shutdown, with the disk still full) returns; the
// process lives and the next open finds every acknowledged write.
TEST_P(RocksDbStoreFaultTest, CloseAfterAFailedWriteReturns) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(WorkloadBatch(1)).ok());
  fs_->SetFault(GetParam());
  ASSERT_FALSE(store->Commit(WorkloadBatch(2)).ok());
  ASSERT_FALSE(store->Commit(WorkloadBatch(2)).ok());
  (void)store->CompactEvents();
  store->Close().IgnoreError();
  EXPECT_EQ(store->Recover().code(), absl::StatusCode::kFailedPrecondition);
  store.reset();
  fs_->SetFault(Fault::kNone);
  auto reopened = Open(/*faulty=*/false);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->revision(), 1u);
  EXPECT_EQ(ObjectsOf(*reopened, v1::OBJECT_KIND_WORKLOAD).size(), 1u);
}

// RocksDB's informational log is not a file in the data directory (on a full disk its failed
// appends aborted the process); its warnings and errors reach the store's log sink.
TEST_P(RocksDbStoreFaultTest, RocksDbLogsThroughTheStoreNotIntoAFile) {
  absl::Mutex mu;
  std::vector<std::string> lines;
  StoreOptions options{.path = path_, .file_system = fs_};
  options.log = [&](bool, const std::string& line) {
    absl::MutexLock lock(&mu);
    lines.push_back(line);
  };
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Commit(WorkloadBatch(1)).ok());
  fs_->SetFault(GetParam());
  ASSERT_FALSE((*store)->Commit(WorkloadBatch(2)).ok());
  ASSERT_FALSE((*store)->Commit(WorkloadBatch(2)).ok());
  fs_->SetFault(Fault::kNone);
  ASSERT_TRUE((*store)->Recover().ok());
  ASSERT_TRUE((*store)->Close().ok());
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(path_) / "LOG"));
  absl::MutexLock lock(&mu);
  bool reported = false;
  for (const std::string& line : lines) reported = reported || absl::StrContains(line, "injected");
  EXPECT_TRUE(reported) << "RocksDB's report of the failed write did not reach the log";
}

INSTANTIATE_TEST_SUITE_P(Faults, RocksDbStoreFaultTest,
                         ::testing::Values(Fault::kNoSpace, Fault::kIOError), [](const auto& info) {
                           return info.param == Fault::kNoSpace ? "NoSpace" : "IOError";
                         });

}  // namespace
}  // namespace admitd::store
