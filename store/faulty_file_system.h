// FaultyFileSystem: a RocksDB FileSystem for tests that passes everything to the machine's file
// system until told to fail. Then every file creation, append, flush and sync fails with the
// chosen fault, as a full disk (IOStatus::NoSpace, errno ENOSPC) or a failing one (IOError,
// EIO) would, and nothing reaches the files; reads keep working. Hand it to the store through
// StoreOptions::file_system (or Config::store_file_system for a whole server). Test-only.
//
// Thread safety: SetFault and failures may be called from any thread while RocksDB uses the
// file system from its own threads.
//
//   auto fs = std::make_shared<FaultyFileSystem>();
//   auto store = Store::Open({.path = dir, .file_system = fs});
//   fs->SetFault(FaultyFileSystem::Fault::kNoSpace);  // the disk is full
//   EXPECT_EQ((*store)->Commit(batch).code(), absl::StatusCode::kUnavailable);
//   fs->SetFault(FaultyFileSystem::Fault::kNone);     // space returns
//   EXPECT_TRUE((*store)->Recover().ok());
#ifndef ADMITD_STORE_FAULTY_FILE_SYSTEM_H_
#define ADMITD_STORE_FAULTY_FILE_SYSTEM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "rocksdb/file_system.h"

namespace admitd::store {

class FaultyFileSystem : public rocksdb::FileSystemWrapper {
 public:
  enum class Fault { kNone, kNoSpace, kIOError };

  FaultyFileSystem() : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FaultyFileSystem"; }

  void SetFault(Fault fault) { fault_.store(fault, std::memory_order_release); }
  // Operations failed so far.
  uint64_t failures() const { return failures_.load(std::memory_order_acquire); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Check(); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->NewWritableFile(name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<File>(std::move(file), this);
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Check(); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->ReopenWritableFile(name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<File>(std::move(file), this);
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Check(); !s.ok()) return s;
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->ReuseWritableFile(name, old_name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<File>(std::move(file), this);
    return s;
  }

 private:
  // Every write through a file opened for writing checks the fault first.
  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> file, FaultyFileSystem* fs)
        : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), fs_(fs) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Append(data, options, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, info, dbg);
    }
    rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Flush(options, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Sync(options, dbg);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Fsync(options, dbg);
    }
    rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rocksdb::IOOptions& options,
                                rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_->Check(); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::RangeSync(offset, nbytes, options, dbg);
    }

   private:
    FaultyFileSystem* const fs_;
  };

  rocksdb::IOStatus Check() {
    switch (fault_.load(std::memory_order_acquire)) {
      case Fault::kNone:
        return rocksdb::IOStatus::OK();
      case Fault::kNoSpace:
        failures_.fetch_add(1, std::memory_order_acq_rel);
        return rocksdb::IOStatus::NoSpace("injected: no space left on device");
      case Fault::kIOError:
        failures_.fetch_add(1, std::memory_order_acq_rel);
        return rocksdb::IOStatus::IOError("injected: input/output error");
    }
    return rocksdb::IOStatus::OK();
  }

  std::atomic<Fault> fault_{Fault::kNone};
  std::atomic<uint64_t> failures_{0};
};

}  // namespace admitd::store

#endif  // ADMITD_STORE_FAULTY_FILE_SYSTEM_H_
