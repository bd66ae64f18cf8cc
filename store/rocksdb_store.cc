#include "store/rocksdb_store.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "store/keys.h"

namespace admitd::store {
namespace {

absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string message = absl::StrCat(what, ": ", s.ToString());
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return absl::FailedPreconditionError(message);
  }
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsIOError()) return absl::UnavailableError(message);
  return absl::InternalError(message);
}

absl::string_view View(const rocksdb::Slice& slice) {
  return absl::string_view(slice.data(), slice.size());
}

absl::Status Closed() { return absl::FailedPreconditionError("the store is closed"); }

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  return RocksDbStore::Open(options);
}

absl::StatusOr<std::unique_ptr<Store>> RocksDbStore::Open(const StoreOptions& options) {
  std::unique_ptr<RocksDbStore> store(new RocksDbStore(options));
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  // A metadata store: small memtables, bounded WAL, durability from the synced WAL alone.
  db_options.max_total_wal_size = 64 << 20;
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 4;
  db_options.avoid_flush_during_shutdown = false;

  rocksdb::ColumnFamilyOptions object_options;
  object_options.write_buffer_size = 16 << 20;
  rocksdb::ColumnFamilyOptions event_options;
  event_options.write_buffer_size = 16 << 20;
  event_options.compression = rocksdb::kLZ4Compression;

  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, object_options);
  for (v1::ObjectKind kind : kStoredKinds) {
    descriptors.emplace_back(std::string(FamilyFor(kind)), object_options);
  }
  descriptors.emplace_back(kEventsFamily, event_options);
  descriptors.emplace_back(kMetaFamily, object_options);

  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.path, descriptors, &handles, &db);
  if (!s.ok()) {
    absl::Status status = FromRocks(s, absl::StrCat("cannot open the store at ", options.path));
    if (s.ToString().find("lock") != std::string::npos) {
      return absl::FailedPreconditionError(
          absl::StrCat("the store at ", options.path,
                       " is in use by another admitd process (", s.ToString(), ")"));
    }
    return status;
  }
  store->db_.reset(db);
  for (size_t i = 0; i < handles.size(); ++i) store->families_[descriptors[i].name] = handles[i];
  store->events_ = store->families_[kEventsFamily];
  store->meta_ = store->families_[kMetaFamily];
  ADMITD_RETURN_IF_ERROR(store->Load());
  return std::unique_ptr<Store>(std::move(store));
}

absl::Status RocksDbStore::Load() {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_, kFormatVersionKey, &value);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions sync;
    sync.sync = true;
    ADMITD_RETURN_IF_ERROR(
        FromRocks(db_->Put(sync, meta_, kFormatVersionKey, EncodeUint64(kFormatVersion)),
                  "writing the format version"));
  } else {
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "reading the format version"));
    uint64_t version = 0;
    if (!DecodeUint64(value, &version) || version != kFormatVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the store at ", options_.path, " has format version ", version,
          "; this admitd reads version ", kFormatVersion));
    }
  }
  uint64_t revision = 0;
  s = db_->Get(rocksdb::ReadOptions(), meta_, kRevisionKey, &value);
  if (!s.IsNotFound()) {
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "reading the revision"));
    if (!DecodeUint64(value, &revision)) return absl::DataLossError("the stored revision is corrupt");
  }
  revision_.store(revision);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), events_));
  it->SeekToFirst();
  uint64_t oldest = revision + 1;
  if (it->Valid() && !DecodeUint64(View(it->key()), &oldest)) {
    return absl::DataLossError("a stored event key is corrupt");
  }
  ADMITD_RETURN_IF_ERROR(FromRocks(it->status(), "reading the event log"));
  oldest_event_.store(oldest);
  return absl::OkStatus();
}

rocksdb::ColumnFamilyHandle* RocksDbStore::Family(v1::ObjectKind kind) const {
  auto it = families_.find(std::string(FamilyFor(kind)));
  return it == families_.end() ? nullptr : it->second;
}

absl::Status RocksDbStore::Commit(const Batch& batch) {
  if (closed_.load()) return Closed();
  rocksdb::WriteBatch wb;
  for (const ObjectWrite& w : batch.writes) {
    rocksdb::ColumnFamilyHandle* family = Family(w.kind);
    if (family == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("object kind ", w.kind, " is not stored"));
    }
    rocksdb::Status s = w.deleted ? wb.Delete(family, w.key) : wb.Put(family, w.key, w.value);
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "building the batch"));
  }
  for (const LoggedEvent& e : batch.events) {
    ADMITD_RETURN_IF_ERROR(FromRocks(wb.Put(events_, EncodeUint64(e.revision), e.value),
                                     "building the batch"));
  }
  const uint64_t revision = std::max(batch.revision, revision_.load());
  ADMITD_RETURN_IF_ERROR(
      FromRocks(wb.Put(meta_, kRevisionKey, EncodeUint64(revision)), "building the batch"));
  rocksdb::WriteOptions write_options;
  write_options.sync = options_.sync;
  ADMITD_RETURN_IF_ERROR(FromRocks(db_->Write(write_options, &wb), "committing"));
  if (options_.sync && options_.injected_sync_delay > absl::ZeroDuration()) {
    absl::SleepFor(options_.injected_sync_delay);
  }
  // An empty log's oldest revision follows the head until the first event lands.
  if (oldest_event_.load() > revision_.load() && !batch.events.empty()) {
    oldest_event_.store(batch.events.front().revision, std::memory_order_release);
  }
  revision_.store(revision, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status RocksDbStore::ForEachObject(
    const std::function<absl::Status(v1::ObjectKind, absl::string_view, absl::string_view)>& fn)
    const {
  if (closed_.load()) return Closed();
  for (v1::ObjectKind kind : kStoredKinds) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), Family(kind)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ADMITD_RETURN_IF_ERROR(fn(kind, View(it->key()), View(it->value())));
    }
    ADMITD_RETURN_IF_ERROR(FromRocks(it->status(), "reading stored objects"));
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::ReadEvents(uint64_t after, size_t limit,
                                      std::vector<LoggedEvent>* out) const {
  if (closed_.load()) return Closed();
  const uint64_t oldest = oldest_event_.load(std::memory_order_acquire);
  if (after + 1 < oldest) {
    return absl::OutOfRangeError(absl::StrCat(
        "revision ", after, " was compacted away; the oldest retained revision is ", oldest,
        ": list again and watch from the list's revision"));
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), events_));
  size_t n = 0;
  for (it->Seek(EncodeUint64(after + 1)); it->Valid() && n < limit; it->Next(), ++n) {
    LoggedEvent event;
    if (!DecodeUint64(View(it->key()), &event.revision)) {
      return absl::DataLossError("a stored event key is corrupt");
    }
    event.value = it->value().ToString();
    out->push_back(std::move(event));
  }
  ADMITD_RETURN_IF_ERROR(FromRocks(it->status(), "reading the event log"));
  // Compaction may have run between the check above and the read.
  if (after + 1 < oldest_event_.load(std::memory_order_acquire) && n == 0) {
    return absl::OutOfRangeError(absl::StrCat("revision ", after, " was compacted away"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::CompactEvents() {
  if (closed_.load()) return Closed();
  const uint64_t head = revision_.load();
  const uint64_t oldest = oldest_event_.load();
  if (head < oldest || head - oldest + 1 <= options_.event_retention) return 0;
  // Revisions are dense, so the newest `retention` events start at head - retention + 1.
  const uint64_t keep_from = head - options_.event_retention + 1;
  // Publish the new floor first: a concurrent reader then answers OUT_OF_RANGE rather than
  // reading a range that is being deleted.
  oldest_event_.store(keep_from, std::memory_order_release);
  rocksdb::WriteOptions write_options;
  ADMITD_RETURN_IF_ERROR(FromRocks(
      db_->DeleteRange(write_options, events_, EncodeUint64(0), EncodeUint64(keep_from)),
      "compacting the event log"));
  return keep_from - oldest;
}

absl::Status RocksDbStore::Close() {
  if (closed_.exchange(true)) return absl::OkStatus();
  rocksdb::FlushOptions flush;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  for (auto& [name, handle] : families_) handles.push_back(handle);
  rocksdb::Status flushed = db_->Flush(flush, handles);
  for (auto* handle : handles) db_->DestroyColumnFamilyHandle(handle);
  families_.clear();
  rocksdb::Status closed = db_->Close();
  db_.reset();
  ADMITD_RETURN_IF_ERROR(FromRocks(flushed, "flushing"));
  return FromRocks(closed, "closing");
}

RocksDbStore::~RocksDbStore() {
  if (!closed_.load() && db_ != nullptr) Close().IgnoreError();
}

}  // namespace admitd::store
