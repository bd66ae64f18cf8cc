#include "store/rocksdb_store.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "rocksdb/listener.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "store/contract.h"
#include "store/keys.h"

namespace admitd::store {
namespace {

absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string message = absl::StrCat(what, ": ", s.ToString());
  if (s.IsNoSpace()) return absl::UnavailableError(absl::StrCat("the disk is full: ", message));
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsIOError() || s.IsBusy() || s.IsTimedOut()) return absl::UnavailableError(message);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

absl::string_view View(const rocksdb::Slice& slice) {
  return absl::string_view(slice.data(), slice.size());
}

// RocksDB reports a LOCK file held by another process as the IOError "While lock file:
// <path>/LOCK: Resource temporarily unavailable", and one held by this process as "lock hold by
// current process ...: <path>/LOCK".
bool IsLockHeld(const rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string text = s.ToString();
  return absl::StrContains(text, "While lock file") ||
         absl::StrContains(text, "lock hold by current process");
}

rocksdb::CompressionType EventCompression() {
  std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  for (rocksdb::CompressionType want : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
    if (std::find(supported.begin(), supported.end(), want) != supported.end()) return want;
  }
  return rocksdb::kNoCompression;
}

// RocksDB recovers from some background errors by itself (after ENOSPC its SstFileManager polls
// the free space and resumes). The store recovers only when asked (Recover), so that the caller
// knows when writes may succeed again and DB::Resume() is never refused as busy.
class ManualErrorRecovery : public rocksdb::EventListener {
 public:
  const char* Name() const override { return "admitd.ManualErrorRecovery"; }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status status,
                            bool* auto_recovery) override {
    status.PermitUncheckedError();
    *auto_recovery = false;
  }
};

// RocksDB's informational log, kept off the disk. Its default logger appends to <path>/LOG
// through a writer that, once one append failed (ENOSPC), trips an assertion on the next one:
// with Debian's librocksdb, built with assertions, the first log line after a failed write on a
// full disk aborted the process. Warnings and errors go to the store's `log` instead.
class ForwardingLogger : public rocksdb::Logger {
 public:
  explicit ForwardingLogger(std::function<void(bool, const std::string&)> sink)
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), sink_(std::move(sink)) {}

  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel() || level == rocksdb::InfoLogLevel::HEADER_LEVEL || !sink_) {
      return;
    }
    char line[2048];
    const int n = std::vsnprintf(line, sizeof(line), format, ap);
    if (n < 0) return;
    sink_(level >= rocksdb::InfoLogLevel::ERROR_LEVEL, std::string(line));
  }

 private:
  const std::function<void(bool, const std::string&)> sink_;
};

// Options for a small, write-heavy metadata store that fsyncs every batch. Durability comes
// from the synced WAL alone; memtables and SST files only bound recovery time and memory.
rocksdb::DBOptions MakeDbOptions(rocksdb::Env* env, const StoreOptions& options) {
  rocksdb::DBOptions o;
  if (env != nullptr) o.env = env;
  o.info_log = std::make_shared<ForwardingLogger>(options.log);
  // A write error stops writes until Recover() (paranoid_checks, on by default, makes every
  // write-ahead-log error a background error): nothing is written to a log that lost a record.
  o.paranoid_checks = true;
  o.listeners.push_back(std::make_shared<ManualErrorRecovery>());
  o.max_bgerror_resume_count = 0;  // no automatic resume after retryable I/O errors either
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  // A crash can leave a torn last WAL record: recover everything before it.
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  // Bounds replay after a crash: past this, the families holding the oldest WAL are flushed.
  o.max_total_wal_size = 64 << 20;
  // All memtables together; a flush starts when they pass it.
  o.db_write_buffer_size = 64 << 20;
  o.max_background_jobs = 2;
  o.bytes_per_sync = 1 << 20;
  o.keep_log_file_num = 4;
  o.max_log_file_size = 8 << 20;
  o.max_manifest_file_size = 16 << 20;
  // Close() flushes, so the next open replays no WAL.
  o.avoid_flush_during_shutdown = false;
  return o;
}

rocksdb::ColumnFamilyOptions MakeFamilyOptions(size_t write_buffer,
                                               rocksdb::CompressionType compression,
                                               const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = write_buffer;
  o.max_write_buffer_number = 2;
  o.compression = compression;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return o;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  return RocksDbStore::Open(options);
}

RocksDbStore::RocksDbStore(StoreOptions options) : options_(std::move(options)) {
  if (options_.file_system != nullptr) env_ = rocksdb::NewCompositeEnv(options_.file_system);
}

absl::StatusOr<std::unique_ptr<Store>> RocksDbStore::Open(const StoreOptions& options) {
  if (options.path.empty()) return absl::InvalidArgumentError("the store path is empty");
  std::error_code ec;
  std::filesystem::create_directories(options.path, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create the store directory ", options.path, ": ", ec.message()));
  }
  std::unique_ptr<RocksDbStore> store(new RocksDbStore(options));
  absl::MutexLock lock(&store->lifecycle_mu_);
  ADMITD_RETURN_IF_ERROR(store->OpenDatabase());
  return std::unique_ptr<Store>(std::move(store));
}

absl::Status RocksDbStore::OpenDatabase() {
  auto cache = rocksdb::NewLRUCache(32 << 20);
  rocksdb::ColumnFamilyOptions objects =
      MakeFamilyOptions(8 << 20, rocksdb::kSnappyCompression, cache);
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, objects);
  for (v1::ObjectKind kind : kStoredKinds) {
    descriptors.emplace_back(std::string(FamilyFor(kind)), objects);
  }
  descriptors.emplace_back(kEventsFamily, MakeFamilyOptions(16 << 20, EventCompression(), cache));
  descriptors.emplace_back(kMetaFamily, MakeFamilyOptions(1 << 20, rocksdb::kNoCompression, cache));

  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::Options(MakeDbOptions(env_.get(), options_), objects),
                        options_.path, descriptors, &handles, &db);
  if (IsLockHeld(s)) {
    const bool here = absl::StrContains(s.ToString(), "current process");
    return absl::FailedPreconditionError(
        absl::StrCat("the store at ", options_.path,
                     here ? " is already open in this process" : " is in use by another process",
                     " (its LOCK file is held): ", s.ToString()));
  }
  if (s.IsInvalidArgument()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the directory ", options_.path, " does not hold an admitd store: ", s.ToString()));
  }
  ADMITD_RETURN_IF_ERROR(FromRocks(s, absl::StrCat("cannot open the store at ", options_.path)));

  db_.reset(db);
  handles_ = handles;
  kind_families_.assign(v1::ObjectKind_ARRAYSIZE, nullptr);
  for (size_t i = 0; i < handles.size(); ++i) {
    const std::string& name = descriptors[i].name;
    if (name == kEventsFamily) events_ = handles[i];
    if (name == kMetaFamily) meta_ = handles[i];
    for (v1::ObjectKind kind : kStoredKinds) {
      if (name == FamilyFor(kind)) kind_families_[kind] = handles[i];
    }
  }
  if (absl::Status loaded = Load(); !loaded.ok()) {
    CloseDatabase(/*flush=*/false).IgnoreError();
    return loaded;
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::CloseDatabase(bool flush) {
  if (db_ == nullptr) return absl::OkStatus();
  rocksdb::Status flushed;
  if (flush) flushed = db_->Flush(rocksdb::FlushOptions(), handles_);
  for (rocksdb::ColumnFamilyHandle* handle : handles_) {
    db_->DestroyColumnFamilyHandle(handle).PermitUncheckedError();
  }
  handles_.clear();
  kind_families_.clear();
  events_ = meta_ = nullptr;
  rocksdb::Status closed = db_->Close();
  db_.reset();
  ADMITD_RETURN_IF_ERROR(FromRocks(flushed, absl::StrCat("flushing the store at ", options_.path)));
  return FromRocks(closed, absl::StrCat("closing the store at ", options_.path));
}

absl::Status RocksDbStore::Load() {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_, kFormatVersionKey, &value);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions write_options;
    write_options.sync = options_.sync;
    ADMITD_RETURN_IF_ERROR(
        FromRocks(db_->Put(write_options, meta_, kFormatVersionKey, EncodeUint64(kFormatVersion)),
                  "writing the format version"));
  } else {
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "reading the format version"));
    uint64_t version = 0;
    if (!DecodeUint64(value, &version)) {
      return absl::DataLossError(
          absl::StrCat("the format version of the store at ", options_.path, " is corrupt"));
    }
    if (version >= 1 && version < kFormatVersion) {
      // Older versions lack only families (admission_checks, pods, namespaces, multikueue_*) that Open has
      // just created empty: the store is upgraded in place.
      rocksdb::WriteOptions write_options;
      write_options.sync = options_.sync;
      ADMITD_RETURN_IF_ERROR(
          FromRocks(db_->Put(write_options, meta_, kFormatVersionKey, EncodeUint64(kFormatVersion)),
                    "upgrading the format version"));
    } else if (version != kFormatVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("the store at ", options_.path, " has format version ", version,
                       "; this admitd reads version ", kFormatVersion));
    }
  }

  uint64_t revision = 0;
  s = db_->Get(rocksdb::ReadOptions(), meta_, kRevisionKey, &value);
  if (!s.IsNotFound()) {
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "reading the revision"));
    if (!DecodeUint64(value, &revision))
      return absl::DataLossError("the stored revision is corrupt");
  }
  uint64_t floor = 1;
  s = db_->Get(rocksdb::ReadOptions(), meta_, kEventFloorKey, &value);
  if (!s.IsNotFound()) {
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "reading the event-log floor"));
    if (!DecodeUint64(value, &floor)) {
      return absl::DataLossError("the stored event-log floor is corrupt");
    }
  }

  // Counting the log once here lets CompactEvents find its cut with a short forward scan.
  uint64_t count = 0;
  rocksdb::ReadOptions scan;
  scan.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(scan, events_));
  for (it->Seek(EventKey(floor)); it->Valid(); it->Next()) ++count;
  ADMITD_RETURN_IF_ERROR(FromRocks(it->status(), "reading the event log"));

  revision_.store(revision, std::memory_order_release);
  event_floor_.store(floor, std::memory_order_release);
  event_count_.store(count, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status RocksDbStore::NotOpen() const {
  return reopen_error_.ok() ? StoreClosed(options_.path) : reopen_error_;
}

rocksdb::ColumnFamilyHandle* RocksDbStore::FamilyOf(v1::ObjectKind kind) const {
  if (kind < 0 || static_cast<size_t>(kind) >= kind_families_.size()) return nullptr;
  return kind_families_[kind];
}

absl::Status RocksDbStore::Commit(const Batch& batch) {
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (db_ == nullptr) return NotOpen();
  const uint64_t head = revision_.load(std::memory_order_relaxed);
  ADMITD_RETURN_IF_ERROR(CheckBatch(batch, head));

  rocksdb::WriteBatch wb;
  for (const ObjectWrite& w : batch.writes) {
    rocksdb::ColumnFamilyHandle* family = FamilyOf(w.kind);
    rocksdb::Status s = w.deleted ? wb.Delete(family, w.key) : wb.Put(family, w.key, w.value);
    ADMITD_RETURN_IF_ERROR(FromRocks(s, "building the batch"));
  }
  for (const LoggedEvent& e : batch.events) {
    ADMITD_RETURN_IF_ERROR(
        FromRocks(wb.Put(events_, EventKey(e.revision), e.value), "building the batch"));
  }
  ADMITD_RETURN_IF_ERROR(
      FromRocks(wb.Put(meta_, kRevisionKey, EncodeUint64(batch.revision)), "building the batch"));

  rocksdb::WriteOptions write_options;
  write_options.sync = options_.sync;
  if (absl::Status written = FromRocks(db_->Write(write_options, &wb),
                                       absl::StrCat("committing revision ", batch.revision));
      !written.ok()) {
    write_failed_.store(true, std::memory_order_release);
    return written;
  }
  if (options_.sync && options_.injected_sync_delay > absl::ZeroDuration()) {
    absl::SleepFor(options_.injected_sync_delay);
  }
  event_count_.fetch_add(batch.events.size(), std::memory_order_release);
  // Published last: ReadEvents returns nothing above the revision it saw at its start.
  revision_.store(batch.revision, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status RocksDbStore::ForEachObject(
    const std::function<absl::Status(v1::ObjectKind, absl::string_view, absl::string_view)>& fn)
    const {
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (db_ == nullptr) return NotOpen();
  // A scan of whole families (recovery): read ahead in large steps, and keep the blocks out of
  // the block cache, which they would only churn.
  rocksdb::ReadOptions scan;
  scan.fill_cache = false;
  scan.readahead_size = 2 << 20;
  for (v1::ObjectKind kind : kStoredKinds) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(scan, FamilyOf(kind)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ADMITD_RETURN_IF_ERROR(fn(kind, View(it->key()), View(it->value())));
    }
    ADMITD_RETURN_IF_ERROR(FromRocks(it->status(), "reading stored objects"));
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::ReadEvents(uint64_t after, size_t limit,
                                      std::vector<LoggedEvent>* out) const {
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (db_ == nullptr) return NotOpen();
  const uint64_t head = revision_.load(std::memory_order_acquire);
  uint64_t floor = event_floor_.load(std::memory_order_acquire);
  if (after + 1 < floor) return CompactedAway(after, floor);

  const size_t first = out->size();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), events_));
  for (it->Seek(EventKey(after + 1)); it->Valid() && out->size() - first < limit; it->Next()) {
    LoggedEvent event;
    if (!DecodeEventKey(View(it->key()), &event.revision)) {
      out->resize(first);
      return absl::DataLossError("a stored event key is corrupt");
    }
    if (event.revision > head) break;  // a batch whose Commit has not returned yet
    event.value = it->value().ToString();
    out->push_back(std::move(event));
  }
  if (!it->status().ok()) {
    out->resize(first);
    return FromRocks(it->status(), "reading the event log");
  }
  // CompactEvents raises the floor before it deletes. If the floor is still at most after + 1
  // now, nothing above `after` was deleted before the iterator took its snapshot.
  floor = event_floor_.load(std::memory_order_acquire);
  if (after + 1 < floor) {
    out->resize(first);
    return CompactedAway(after, floor);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::CompactEvents() {
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (db_ == nullptr) return NotOpen();
  const uint64_t count = event_count_.load(std::memory_order_relaxed);
  if (count <= options_.event_retention) return 0;
  const uint64_t excess = count - options_.event_retention;

  // Revisions have gaps (the sequencer logs one event per object per batch), so find the last
  // event to drop by walking the oldest `excess` keys.
  rocksdb::ReadOptions scan;
  scan.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(scan, events_));
  uint64_t last_dropped = 0;
  uint64_t walked = 0;
  const uint64_t first = event_floor_.load(std::memory_order_relaxed);
  for (it->Seek(EventKey(first)); it->Valid() && walked < excess; it->Next(), ++walked) {
    if (!DecodeEventKey(View(it->key()), &last_dropped)) {
      return absl::DataLossError("a stored event key is corrupt");
    }
  }
  ADMITD_RETURN_IF_ERROR(FromRocks(it->status(), "reading the event log"));
  if (walked < excess) {
    return absl::DataLossError(
        absl::StrCat("the event log holds ", walked, " events where ", count, " were counted"));
  }
  const uint64_t floor = last_dropped + 1;

  // Publish the new floor first: a concurrent reader then answers OUT_OF_RANGE rather than
  // reading a range that is being deleted. The floor and the deletion are one batch, so a crash
  // keeps both or neither; neither needs a sync (the events are redundant once compacted).
  event_floor_.store(floor, std::memory_order_release);
  rocksdb::WriteBatch wb;
  ADMITD_RETURN_IF_ERROR(
      FromRocks(wb.DeleteRange(events_, EventKey(0), EventKey(floor)), "building the compaction"));
  ADMITD_RETURN_IF_ERROR(
      FromRocks(wb.Put(meta_, kEventFloorKey, EncodeUint64(floor)), "building the compaction"));
  if (absl::Status written =
          FromRocks(db_->Write(rocksdb::WriteOptions(), &wb), "compacting the event log");
      !written.ok()) {
    // Nothing was deleted: the old floor holds again (a reader meanwhile answered OUT_OF_RANGE
    // for events that are still there, which only makes it list again).
    event_floor_.store(first, std::memory_order_release);
    write_failed_.store(true, std::memory_order_release);
    return written;
  }
  event_count_.fetch_sub(excess, std::memory_order_release);
  return excess;
}

absl::Status RocksDbStore::Recover() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (closed_) return StoreClosed(options_.path);
  if (db_ != nullptr) {
    if (!write_failed_.load(std::memory_order_acquire)) return absl::OkStatus();
    // Resume flushes every memtable to new files and moves to a new write-ahead log; a record
    // whose write failed was never applied to a memtable, so it is gone with the old log.
    rocksdb::Status resumed = db_->Resume();
    if (resumed.ok()) {
      write_failed_.store(false, std::memory_order_release);
      return absl::OkStatus();
    }
    // A failed Resume (the disk still full) or an error RocksDB cannot resume from (a failed
    // fsync is fatal to it): start over from the files, as a restart would. Flushing a database
    // whose log lost a write would only fail again.
    CloseDatabase(/*flush=*/false).IgnoreError();
  }
  absl::Status opened = OpenDatabase();
  if (!opened.ok()) {
    reopen_error_ = absl::UnavailableError(
        absl::StrCat("the store is recovering from a failed write and cannot be opened yet: ",
                     opened.message()));
    return reopen_error_;
  }
  reopen_error_ = absl::OkStatus();
  write_failed_.store(false, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status RocksDbStore::Close() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  reopen_error_ = absl::OkStatus();
  return CloseDatabase(/*flush=*/!write_failed_.load(std::memory_order_acquire));
}

RocksDbStore::~RocksDbStore() { Close().IgnoreError(); }

std::vector<std::pair<std::string, uint64_t>> RocksDbStore::Health() const {
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (db_ == nullptr) return {};
  std::vector<std::pair<std::string, uint64_t>> out;
  uint64_t value = 0;
  // Database-wide figures, then sums over the column families.
  if (db_->GetIntProperty(rocksdb::DB::Properties::kIsWriteStopped, &value)) {
    out.emplace_back("write_stopped", value);
  }
  if (db_->GetIntProperty(rocksdb::DB::Properties::kActualDelayedWriteRate, &value)) {
    out.emplace_back("delayed_write_rate_bytes", value);
  }
  const std::pair<const char*, std::string> summed[] = {
      {"pending_compaction_bytes", rocksdb::DB::Properties::kEstimatePendingCompactionBytes},
      {"running_compactions", rocksdb::DB::Properties::kNumRunningCompactions},
      {"sst_files_bytes", rocksdb::DB::Properties::kTotalSstFilesSize},
      {"memtable_bytes", rocksdb::DB::Properties::kCurSizeAllMemTables}};
  for (const auto& entry : summed) {
    if (db_->GetAggregatedIntProperty(entry.second, &value)) {
      out.emplace_back(entry.first, value);
    }
  }
  return out;
}

}  // namespace admitd::store
