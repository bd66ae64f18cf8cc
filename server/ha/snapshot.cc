#include "server/ha/snapshot.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"

namespace admitd::ha {
namespace {

constexpr size_t kChunkBytes = 1 << 20;

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

absl::Status SyncPath(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot open ", path, " to sync it"));
  const int rc = fsync(fd);
  close(fd);
  if (rc != 0) return absl::InternalError(absl::StrCat("cannot sync ", path));
  return absl::OkStatus();
}

}  // namespace

SnapshotService::SnapshotService(std::string domain, const store::Store* store,
                                 std::string data_dir, absl::Duration pin_for)
    : domain_(std::move(domain)),
      store_(store),
      data_dir_(std::move(data_dir)),
      pin_for_(pin_for) {}

void SnapshotService::SetAuthorizer(
    std::function<absl::Status(const grpc::ServerContextBase&)> authorize) {
  absl::MutexLock lock(&mu_);
  authorize_ = std::move(authorize);
}

uint64_t SnapshotService::TrimLimit(absl::Time now,
                                    const std::map<std::string, uint64_t>& registered) {
  absl::MutexLock lock(&mu_);
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  for (auto it = pins_.begin(); it != pins_.end();) {
    const Pin& pin = it->second;
    auto replica = registered.find(pin.replica);
    const bool applied = pin.until != absl::InfiniteFuture() && replica != registered.end() &&
                         replica->second >= pin.revision;
    if (pin.until < now || applied) {
      it = pins_.erase(it);
      continue;
    }
    limit = std::min(limit, pin.revision);
    ++it;
  }
  return limit;
}

grpc::Status SnapshotService::Snapshot(grpc::ServerContext* context,
                                       const v1::SnapshotRequest* request,
                                       grpc::ServerWriter<v1::SnapshotChunk>* writer) {
  if (request->domain() != domain_) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("this admitd leads HA domain ", domain_, ", not ",
                                     request->domain()));
  }
  std::function<absl::Status(const grpc::ServerContextBase&)> authorize;
  {
    absl::MutexLock lock(&mu_);
    authorize = authorize_;
  }
  if (!authorize) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this replica is not serving yet");
  }
  if (absl::Status allowed = authorize(*context); !allowed.ok()) return ToGrpc(allowed);
  int number = 0;
  {
    absl::MutexLock lock(&mu_);
    number = next_++;
    // Pinned at 0 until the checkpoint says its revision: nothing is trimmed meanwhile.
    pins_[number] = Pin{request->replica(), 0, absl::InfiniteFuture()};
  }
  const std::string dir = absl::StrCat(data_dir_, ".snapshot-", getpid(), "-", number);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  absl::Cleanup done = [&] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    absl::MutexLock lock(&mu_);
    pins_[number].until = absl::Now() + pin_for_;
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<uint64_t> revision = store_->Checkpoint(dir);
  if (!revision.ok()) return ToGrpc(revision.status());
  {
    absl::MutexLock lock(&mu_);
    pins_[number].revision = *revision;
  }
  v1::SnapshotChunk header;
  header.set_revision(*revision);
  std::vector<std::string> paths;
  uint64_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    v1::SnapshotFile* file = header.add_files();
    file->set_name(entry.path().filename().string());
    file->set_size(entry.file_size());
    total += entry.file_size();
    paths.push_back(entry.path().string());
  }
  if (!writer->Write(header)) return grpc::Status(grpc::StatusCode::CANCELLED, "the replica left");
  std::string buffer(kChunkBytes, '\0');
  for (size_t i = 0; i < paths.size(); ++i) {
    std::ifstream in(paths[i], std::ios::binary);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const std::streamsize n = in.gcount();
      if (n <= 0) break;
      v1::SnapshotChunk chunk;
      chunk.set_file_index(static_cast<uint32_t>(i));
      chunk.set_data(buffer.data(), static_cast<size_t>(n));
      if (context->IsCancelled() || !writer->Write(chunk)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the replica left");
      }
    }
  }
  ADMITD_LOG(kInfo, "sent a snapshot",
             {{"replica", request->replica()},
              {"revision", absl::StrCat(*revision)},
              {"files", absl::StrCat(paths.size())},
              {"bytes", absl::StrCat(total)},
              {"took", absl::FormatDuration(absl::Now() - start)}});
  return grpc::Status::OK;
}

absl::StatusOr<uint64_t> FetchSnapshot(const std::shared_ptr<grpc::Channel>& channel,
                                       const std::string& domain, const std::string& replica,
                                       const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("snapshot: ", dir, " exists"));
  }
  bool kept = false;
  absl::Cleanup remove = [&] {
    if (!kept) std::filesystem::remove_all(dir, ec);
  };
  if (!std::filesystem::create_directories(dir, ec)) {
    return absl::InternalError(absl::StrCat("cannot make ", dir, ": ", ec.message()));
  }
  auto stub = v1::Replication::NewStub(channel);
  grpc::ClientContext context;
  v1::SnapshotRequest request;
  request.set_domain(domain);
  request.set_replica(replica);
  std::unique_ptr<grpc::ClientReader<v1::SnapshotChunk>> reader = stub->Snapshot(&context, request);
  v1::SnapshotChunk header;
  if (!reader->Read(&header)) {
    grpc::Status s = reader->Finish();
    return absl::Status(s.ok() ? absl::StatusCode::kUnavailable
                               : static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("snapshot: ", s.error_message()));
  }
  std::vector<uint64_t> written(header.files_size(), 0);
  std::vector<std::ofstream> files;
  for (const v1::SnapshotFile& f : header.files()) {
    const std::filesystem::path name(f.name());
    if (name.has_parent_path() || f.name().empty() || f.name() == "." || f.name() == "..") {
      return absl::DataLossError(absl::StrCat("snapshot: a file named \"", f.name(), "\""));
    }
    files.emplace_back(dir + "/" + f.name(), std::ios::binary | std::ios::trunc);
  }
  v1::SnapshotChunk chunk;
  while (reader->Read(&chunk)) {
    const uint32_t i = chunk.file_index();
    if (i >= files.size() || written[i] + chunk.data().size() > header.files(i).size()) {
      context.TryCancel();
      reader->Finish();
      return absl::DataLossError(absl::StrCat("snapshot: more bytes than announced for file ", i));
    }
    files[i].write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    written[i] += chunk.data().size();
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("snapshot: ", s.error_message()));
  }
  for (size_t i = 0; i < files.size(); ++i) {
    files[i].close();
    if (!files[i] || written[i] != header.files(static_cast<int>(i)).size()) {
      return absl::DataLossError(absl::StrCat("snapshot: file ", header.files(i).name(), " has ",
                                              written[i], " of ", header.files(i).size(),
                                              " bytes"));
    }
    if (absl::Status synced = SyncPath(dir + "/" + header.files(i).name(), O_RDONLY);
        !synced.ok()) {
      return synced;
    }
  }
  if (absl::Status synced = SyncPath(dir, O_RDONLY | O_DIRECTORY); !synced.ok()) return synced;
  kept = true;
  return header.revision();
}

}  // namespace admitd::ha
