// Store: admitd's durable state, behind an interface small enough to fake.
//
// One column family per object kind (value = the serialized admitd.v1 object, key = "name" or
// "namespace/name"), an event log keyed by revision (value = a serialized admitd.v1.WatchEvent)
// and a meta family holding the last committed revision. Commit() writes one atomic batch and,
// with sync on, returns only after fsync, so an acknowledged write survives kill -9. The on-disk
// layout is in store/keys.h and docs/storage-format.md. Store::Open gives the RocksDB
// implementation (store/rocksdb_store.h); store/memory_store.h is an in-memory one with fault
// injection for tests.
//
// Thread safety: Commit, CompactEvents and Close need external synchronization (the sequencer
// calls them from one thread). ReadEvents, ForEachObject and the const accessors may be called
// from any thread at any time, including while Commit or CompactEvents runs.
//
//   ADMITD_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open({.path = "data"}));
//   Batch batch;
//   batch.revision = 7;
//   batch.writes.push_back({v1::OBJECT_KIND_WORKLOAD, "default/job-a", bytes});
//   batch.events.push_back({7, event_bytes});
//   ADMITD_RETURN_IF_ERROR(store->Commit(batch));
#ifndef ADMITD_STORE_STORE_H_
#define ADMITD_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "admitd/v1/queue_service.pb.h"

namespace rocksdb {
class FileSystem;
}  // namespace rocksdb

namespace admitd::store {

struct StoreOptions {
  std::string path;
  bool sync = true;  // fsync each Commit
  // Extra delay added to every synced Commit, to model slow disks in benchmarks and tests.
  absl::Duration injected_sync_delay = absl::ZeroDuration();
  // CompactEvents keeps at least this many of the newest events.
  uint64_t event_retention = 100000;
  // Receives RocksDB's warnings and errors (`error` tells which; its informational lines are
  // dropped). RocksDB writes no LOG file of its own into `path`: on a full disk a failed write
  // to that file makes Debian's librocksdb (built with its assertions) abort the process.
  // Null: dropped too. Called from RocksDB's threads.
  std::function<void(bool error, const std::string& message)> log;
  // Tests only: the file system RocksDB reads and writes through (fault injection, e.g. a disk
  // that reports ENOSPC). Null: the machine's.
  std::shared_ptr<rocksdb::FileSystem> file_system;
};

struct ObjectWrite {
  v1::ObjectKind kind = v1::OBJECT_KIND_UNSPECIFIED;
  std::string key;
  std::string value;  // serialized object; ignored for deletes
  bool deleted = false;
};

struct LoggedEvent {
  uint64_t revision = 0;
  std::string value;  // serialized admitd.v1.WatchEvent
};

// Everything one sequencer batch changed.
struct Batch {
  uint64_t revision = 0;  // the last revision this batch reaches; persisted as the meta revision
  std::vector<ObjectWrite> writes;
  std::vector<LoggedEvent> events;  // strictly increasing revisions
};

// Commits that overlap, for a store whose commit waits on other machines (ha::ReplicatedStore
// waits for a majority of etcd's members): the committer starts the next batches while the
// first are on their way, and finishes them in the order it started them.
//
//   pipeline->Start(batch, [&] { /* Finish() will not block */ });
//   ... more Starts, up to depth() unfinished ...
//   absl::Status committed = pipeline->Finish();  // the oldest started batch
//
// Thread safety: Start and Finish are called by one thread (the committer's), and never while
// the store's Commit or Recover runs.
class CommitPipeline {
 public:
  virtual ~CommitPipeline() = default;
  // Batches that may be started and not yet finished at once; at least 1.
  virtual int depth() const = 0;
  // Starts committing `batch`, which must be one Commit would take after every batch started
  // before it. `ready` is called once, from any thread (possibly before Start returns), when
  // Finish() of this batch will not block.
  virtual void Start(std::shared_ptr<const Batch> batch, std::function<void()> ready) = 0;
  // Ends the oldest started batch with what Commit would have answered for it. A batch started
  // after one that failed fails too (UNAVAILABLE): Recover settles whether it landed.
  // FAILED_PRECONDITION when none is started.
  virtual absl::Status Finish() = 0;
};

class Store {
 public:
  // Opens (creating if needed) the database at options.path. FAILED_PRECONDITION when another
  // process holds it; DATA_LOSS when it cannot be read.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);
  virtual ~Store() = default;

  // Writes the whole batch atomically (one WriteBatch, one fsync when sync is on): after OK every
  // write, every event and the new revision are durable; after an error none of them is visible.
  // UNAVAILABLE when the disk refused the write (full, an I/O error): later Commits fail too
  // until Recover() succeeds.
  // INVALID_ARGUMENT, with nothing written, when a write names a kind that is not stored, when
  // event revisions are not strictly increasing, not above revision(), or above batch.revision,
  // or when batch.revision is below revision(). FAILED_PRECONDITION after Close().
  virtual absl::Status Commit(const Batch& batch) = 0;

  // Calls `fn` for every stored object, kind by kind in kStoredKinds order, keys ascending
  // (bytewise). Stops and returns the first error `fn` returns. The views passed to `fn` are valid
  // only during the call. Sees a consistent state per kind, not across kinds, if Commit runs
  // meanwhile.
  virtual absl::Status ForEachObject(
      const std::function<absl::Status(v1::ObjectKind kind, absl::string_view key,
                                       absl::string_view value)>& fn) const = 0;

  // The revision of the last committed batch (0 for a new store).
  virtual uint64_t revision() const = 0;
  // The oldest revision still in the event log (revision()+1 when the log is empty).
  virtual uint64_t oldest_event_revision() const = 0;

  // Appends to `out` up to `limit` events with revision > after, in order, from batches whose
  // Commit has returned (never an event above the revision() read at the call's start).
  // OUT_OF_RANGE, with `out` unchanged, when events after `after` were compacted away
  // (after + 1 < oldest_event_revision()): the caller must list again.
  virtual absl::Status ReadEvents(uint64_t after, size_t limit,
                                  std::vector<LoggedEvent>* out) const = 0;

  // Drops logged events older than the newest `event_retention` ones, so exactly
  // min(logged, event_retention) remain, and advances oldest_event_revision(). Returns how many
  // it dropped (0 when there was nothing to drop).
  virtual absl::StatusOr<uint64_t> CompactEvents() = 0;

  // Makes the store take writes again after a Commit failed (a full disk, an I/O error): clears
  // the database's error or, when that is not possible, closes and reopens it as Open would.
  // OK once Commit may be tried again; UNAVAILABLE while the disk still refuses (then readers
  // may get UNAVAILABLE too, until a later Recover succeeds). Afterwards revision() and the
  // stored objects are what a fresh Open would find: a batch whose Commit failed is normally
  // absent, but may be present when the disk took it and only reported the failure late (a
  // failed fsync). Serialized with Commit by the caller. FAILED_PRECONDITION after Close().
  virtual absl::Status Recover() = 0;

  // Writes a consistent copy of the whole database (objects, events, revision) into the new
  // directory `dir`, as files a store can be opened on (Store::Open with path `dir`), and
  // returns the revision it holds. Serialized with Commit by the caller. UNIMPLEMENTED for a
  // store without files; FAILED_PRECONDITION after Close() or when `dir` exists.
  virtual absl::StatusOr<uint64_t> Checkpoint(const std::string& dir) const {
    return absl::UnimplementedError("this store keeps no files to copy");
  }

  // The store's overlapping commits, or null when Commit is its only way to commit (a store on
  // one machine, whose commits a single fsync each already group).
  virtual CommitPipeline* pipeline() { return nullptr; }

  // Figures that show the database's health, for the metrics: name (admitd_rocksdb_<name>) and
  // value. Empty for a store that has none, or once closed.
  virtual std::vector<std::pair<std::string, uint64_t>> Health() const { return {}; }

  // Flushes and closes the database. A second Close() returns OK; every other call afterwards
  // fails with FAILED_PRECONDITION. The destructor closes a store that was not closed.
  virtual absl::Status Close() = 0;
};

}  // namespace admitd::store

#endif  // ADMITD_STORE_STORE_H_
