// RocksDbStore: the Store on an embedded RocksDB database (layout in store/keys.h).
//
// Commit writes one WriteBatch (objects, events, the meta revision) with WriteOptions::sync, so
// a Commit that returned OK is in the fsynced write-ahead log and survives kill -9. Reads of the
// event log take no lock and may run beside Commit.
//
// Thread safety: as the Store interface says.
#ifndef ADMITD_STORE_ROCKSDB_STORE_H_
#define ADMITD_STORE_ROCKSDB_STORE_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "store/store.h"

namespace admitd::store {

class RocksDbStore final : public Store {
 public:
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);
  ~RocksDbStore() override;

  absl::Status Commit(const Batch& batch) override;
  absl::Status ForEachObject(
      const std::function<absl::Status(v1::ObjectKind kind, absl::string_view key,
                                       absl::string_view value)>& fn) const override;
  uint64_t revision() const override { return revision_.load(std::memory_order_acquire); }
  uint64_t oldest_event_revision() const override {
    return oldest_event_.load(std::memory_order_acquire);
  }
  absl::Status ReadEvents(uint64_t after, size_t limit,
                          std::vector<LoggedEvent>* out) const override;
  absl::StatusOr<uint64_t> CompactEvents() override;
  absl::Status Close() override;

 private:
  explicit RocksDbStore(StoreOptions options) : options_(std::move(options)) {}
  absl::Status Load();
  rocksdb::ColumnFamilyHandle* Family(v1::ObjectKind kind) const;

  // Constant after Open.
  const StoreOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> families_;
  rocksdb::ColumnFamilyHandle* events_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;

  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> revision_{0};
  // The oldest revision in the event log; revision_ + 1 when the log is empty.
  std::atomic<uint64_t> oldest_event_{1};
};

}  // namespace admitd::store

#endif  // ADMITD_STORE_ROCKSDB_STORE_H_
