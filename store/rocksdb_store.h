// RocksDbStore: the Store on an embedded RocksDB database (layout in store/keys.h, prose in
// docs/storage-format.md). Store::Open returns one.
//
// Commit writes one WriteBatch (objects, events, the meta revision) with WriteOptions::sync, so a
// Commit that returned OK is in the fsynced write-ahead log and survives kill -9; nothing else is
// needed for durability (a crash loses only memtables, which the WAL replays). The RocksDB LOCK
// file keeps a second process out of the directory.
//
// A write that fails (ENOSPC, EIO) puts RocksDB into its background-error state, where it takes
// no more writes. Recover() clears it with DB::Resume() when RocksDB can, and otherwise closes the
// database without flushing and opens it again, which is the startup path: the write-ahead log
// is replayed up to the last write that reached it. RocksDB's own automatic recovery is off, so
// the store decides when to try (the sequencer probes with backoff).
//
// Thread safety: as the Store interface says. Commit, CompactEvents, Recover and Close are
// serialized by the caller; ReadEvents, ForEachObject and the accessors may run beside them.
// Readers take `lifecycle_mu_` shared only so that Close and Recover cannot free the database
// under them; the cached revisions are atomics.
//
//   absl::StatusOr<std::unique_ptr<Store>> store = RocksDbStore::Open({.path = "/var/lib/admitd"});
#ifndef ADMITD_STORE_ROCKSDB_STORE_H_
#define ADMITD_STORE_ROCKSDB_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/db.h"
#include "store/store.h"

namespace admitd::store {

class RocksDbStore final : public Store {
 public:
  // Opens or creates the database at options.path (creating missing parent directories and
  // column families), checks the format version, and loads the revision, the event-log floor and
  // the number of logged events. FAILED_PRECONDITION naming the path when another process holds
  // the directory, when the format version differs, or when the directory holds another
  // database; DATA_LOSS when the data is corrupt. The caller owns the returned store.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);

  // Closes the database if Close() was not called (errors are dropped).
  ~RocksDbStore() override;

  RocksDbStore(const RocksDbStore&) = delete;
  RocksDbStore& operator=(const RocksDbStore&) = delete;

  absl::Status Commit(const Batch& batch) override;
  absl::Status ForEachObject(
      const std::function<absl::Status(v1::ObjectKind kind, absl::string_view key,
                                       absl::string_view value)>& fn) const override;
  uint64_t revision() const override { return revision_.load(std::memory_order_acquire); }
  uint64_t oldest_event_revision() const override {
    return event_floor_.load(std::memory_order_acquire);
  }
  absl::Status ReadEvents(uint64_t after, size_t limit,
                          std::vector<LoggedEvent>* out) const override;
  absl::StatusOr<uint64_t> CompactEvents() override;
  absl::Status Recover() override;
  absl::Status Close() override;
  // RocksDB's checkpoint: hard links to the table files, copies of the rest (rocksdb_checkpoint.cc).
  absl::StatusOr<uint64_t> Checkpoint(const std::string& dir) const override;
  // write_stopped (0/1), delayed_write_rate_bytes, pending_compaction_bytes,
  // running_compactions, sst_files_bytes, memtable_bytes: RocksDB's properties, summed over the
  // column families.
  std::vector<std::pair<std::string, uint64_t>> Health() const override;

  // The number of events in the log (for tests and metrics).
  uint64_t logged_events() const { return event_count_.load(std::memory_order_acquire); }

 private:
  explicit RocksDbStore(StoreOptions options);

  // Opens the database at options_.path into db_ and the family handles, then Load()s it.
  absl::Status OpenDatabase() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_);
  // Releases the handles and closes db_ (flushing the memtables first when `flush`).
  absl::Status CloseDatabase(bool flush) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lifecycle_mu_);
  // Reads the format version (writing it into a new database), the revision, the event-log
  // floor and the event count.
  absl::Status Load() ABSL_SHARED_LOCKS_REQUIRED(lifecycle_mu_);
  // Why db_ is null: FAILED_PRECONDITION after Close(), UNAVAILABLE while Recover() could not
  // reopen it.
  absl::Status NotOpen() const ABSL_SHARED_LOCKS_REQUIRED(lifecycle_mu_);
  // The family holding `kind`, or nullptr when the kind is not stored.
  rocksdb::ColumnFamilyHandle* FamilyOf(v1::ObjectKind kind) const
      ABSL_SHARED_LOCKS_REQUIRED(lifecycle_mu_);

  // Constant after construction.
  const StoreOptions options_;
  // RocksDB's file I/O through options_.file_system; null for the default environment.
  std::unique_ptr<rocksdb::Env> env_;

  // Held shared by every operation that touches the database and exclusively by Close, which
  // resets db_ (nullptr once closed).
  mutable absl::Mutex lifecycle_mu_;
  std::unique_ptr<rocksdb::DB> db_ ABSL_GUARDED_BY(lifecycle_mu_);
  // Indexed by ObjectKind; nullptr for kinds that are not stored. Owned; released by Close.
  std::vector<rocksdb::ColumnFamilyHandle*> kind_families_ ABSL_GUARDED_BY(lifecycle_mu_);
  // Every handle, in the order Open passed their descriptors.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_ ABSL_GUARDED_BY(lifecycle_mu_);
  rocksdb::ColumnFamilyHandle* events_ ABSL_GUARDED_BY(lifecycle_mu_) = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ ABSL_GUARDED_BY(lifecycle_mu_) = nullptr;
  bool closed_ ABSL_GUARDED_BY(lifecycle_mu_) = false;  // Close() was called
  // Not OK while db_ is null because Recover() could not reopen it.
  absl::Status reopen_error_ ABSL_GUARDED_BY(lifecycle_mu_);

  // Set when a write failed; Recover() clears it. Close() does not flush such a database.
  std::atomic<bool> write_failed_{false};

  // Written only by Commit and CompactEvents (serialized by the caller), read from any thread.
  std::atomic<uint64_t> revision_{0};
  // Every logged event at or above this revision is retained; lower ones were compacted away.
  std::atomic<uint64_t> event_floor_{1};
  std::atomic<uint64_t> event_count_{0};
};

}  // namespace admitd::store

#endif  // ADMITD_STORE_ROCKSDB_STORE_H_
