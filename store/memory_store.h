// MemoryStore: a Store held in memory, with the same semantics as the RocksDB one (validation,
// ordering, OUT_OF_RANGE after compaction, exact retention, FAILED_PRECONDITION after Close) and
// fault injection, so sequencer and server tests can simulate a failing or slow disk without
// RocksDB. Nothing survives the object. StoreOptions::path is ignored; sync and
// injected_sync_delay behave as for RocksDB (the delay is slept after each synced commit).
//
// Thread safety: as the Store interface says; in addition every method, including the fault
// injection ones, may be called from any thread. One mutex guards the state; the injected delay
// is slept outside it, so readers are not blocked by a "slow disk".
//
//   MemoryStore store;
//   store.FailNextCommits(1, absl::UnavailableError("disk on fire"));
//   EXPECT_EQ(store.Commit(batch).code(), absl::StatusCode::kUnavailable);  // nothing written
//   EXPECT_TRUE(store.Commit(batch).ok());
//   EXPECT_EQ(store.commit_count(), 1u);
//   store.SetUnwritable(absl::UnavailableError("the disk is full"));  // until SetUnwritable(OK)
#ifndef ADMITD_STORE_MEMORY_STORE_H_
#define ADMITD_STORE_MEMORY_STORE_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "store/store.h"

namespace admitd::store {

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(StoreOptions options = {});
  ~MemoryStore() override = default;

  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  absl::Status Commit(const Batch& batch) override;
  absl::Status ForEachObject(
      const std::function<absl::Status(v1::ObjectKind kind, absl::string_view key,
                                       absl::string_view value)>& fn) const override;
  uint64_t revision() const override;
  uint64_t oldest_event_revision() const override;
  absl::Status ReadEvents(uint64_t after, size_t limit,
                          std::vector<LoggedEvent>* out) const override;
  absl::StatusOr<uint64_t> CompactEvents() override;
  // Fails with the status SetUnwritable gave while it holds; OK otherwise.
  absl::Status Recover() override;
  absl::Status Close() override;

  // The next `n` calls to Commit fail with `status` (which must not be OK) and change nothing,
  // as a disk that rejects the write would. Replaces any failures still pending; n = 0 clears
  // them. A Commit that a closed store or an invalid batch rejects does not use up a failure.
  void FailNextCommits(int n, absl::Status status = absl::UnavailableError("injected failure"));
  // A full disk: until called again with OK, every Commit and Recover fails with `status` and
  // changes nothing.
  void SetUnwritable(absl::Status status);
  // Calls to Recover so far.
  uint64_t recover_count() const;

  // Commits that succeeded, and those failed by injection, since construction.
  uint64_t commit_count() const;
  uint64_t failed_commit_count() const;

  // The number of events in the log.
  uint64_t logged_events() const;

 private:
  // Constant after construction.
  const StoreOptions options_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Objects by kind (indexed by ObjectKind), then key.
  std::array<std::map<std::string, std::string>, v1::ObjectKind_ARRAYSIZE> objects_
      ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::string> events_ ABSL_GUARDED_BY(mu_);
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t event_floor_ ABSL_GUARDED_BY(mu_) = 1;
  int failures_left_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  absl::Status unwritable_ ABSL_GUARDED_BY(mu_);
  uint64_t recovers_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t commits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failed_commits_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace admitd::store

#endif  // ADMITD_STORE_MEMORY_STORE_H_
