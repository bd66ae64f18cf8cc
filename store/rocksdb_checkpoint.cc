// RocksDbStore::Checkpoint: a consistent copy of the database for a replica that bootstraps from
// it (server/ha/, docs/high-availability.md).
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "rocksdb/utilities/checkpoint.h"
#include "store/rocksdb_store.h"

namespace admitd::store {

absl::StatusOr<uint64_t> RocksDbStore::Checkpoint(const std::string& dir) const {
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (db_ == nullptr) return NotOpen();
  if (std::filesystem::exists(dir)) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint: ", dir, " exists"));
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // The memtables are flushed into the copy (log_size_for_flush 0): it needs no WAL replay.
  if (s.ok()) s = checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat("checkpoint into ", dir, ": ", s.ToString()));
  }
  return revision();
}

}  // namespace admitd::store
