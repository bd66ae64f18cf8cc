#include "server/ha/log_batch.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_format.h"
#include "admitd/ha/v1/log.pb.h"
#include "zstd.h"

namespace admitd::ha {
namespace {

// Zstandard's fastest level: a batch's objects repeat one another, and level 1 already takes
// most of that, at a few hundred MB/s.
constexpr int kZstdLevel = 1;
// A frame claiming more than this is damaged: no batch the sequencer commits comes near it.
constexpr uint64_t kMaxDecompressedBytes = uint64_t{4} << 30;

// `bytes` as one Zstandard frame with its content's checksum (a damaged frame is refused, never
// decoded into other bytes); empty when that is not smaller.
std::string Compress(const std::string& bytes) {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> context(
      [] {
        ZSTD_CCtx* c = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, kZstdLevel);
        ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
        return c;
      }(),
      ZSTD_freeCCtx);
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  const size_t size =
      ZSTD_compress2(context.get(), out.data(), out.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(size) || size >= bytes.size()) return "";
  out.resize(size);
  return out;
}

absl::StatusOr<std::string> Decompress(absl::string_view frame, uint64_t revision) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
      size > kMaxDecompressedBytes) {
    return absl::DataLossError(
        absl::StrCat("the log's batch ", revision, " is not a Zstandard frame of a known size"));
  }
  std::string out(size, '\0');
  const size_t got = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(got) || got != size) {
    return absl::DataLossError(absl::StrCat("the log's batch ", revision,
                                            " does not decompress: ",
                                            ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short"));
  }
  return out;
}

}  // namespace

std::string EncodeBatch(const store::Batch& batch, std::optional<uint64_t> previous) {
  v1::LogBatch entry;
  entry.set_revision(batch.revision);
  if (previous.has_value()) entry.set_previous(*previous);
  for (const store::ObjectWrite& w : batch.writes) {
    v1::ObjectWrite* out = entry.add_writes();
    out->set_kind(static_cast<int32_t>(w.kind));
    out->set_key(w.key);
    out->set_deleted(w.deleted);
    if (!w.deleted) out->set_value(w.value);
  }
  for (const store::LoggedEvent& e : batch.events) {
    v1::LoggedEvent* out = entry.add_events();
    out->set_revision(e.revision);
    out->set_value(e.value);
  }
  return entry.SerializeAsString();
}

absl::StatusOr<LogEntry> DecodeBatch(absl::string_view bytes) {
  v1::LogBatch entry;
  if (!entry.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat("a log entry of ", bytes.size(),
                                            " bytes is not an admitd.ha.v1.LogBatch"));
  }
  LogEntry decoded;
  if (entry.has_previous()) decoded.previous = entry.previous();
  store::Batch& batch = decoded.batch;
  batch.revision = entry.revision();
  batch.writes.reserve(entry.writes_size());
  for (v1::ObjectWrite& w : *entry.mutable_writes()) {
    store::ObjectWrite out;
    out.kind = static_cast<admitd::v1::ObjectKind>(w.kind());
    out.key = std::move(*w.mutable_key());
    out.value = std::move(*w.mutable_value());
    out.deleted = w.deleted();
    batch.writes.push_back(std::move(out));
  }
  batch.events.reserve(entry.events_size());
  for (v1::LoggedEvent& e : *entry.mutable_events()) {
    batch.events.push_back(store::LoggedEvent{e.revision(), std::move(*e.mutable_value())});
  }
  return decoded;
}

std::vector<std::string> EncodeChunks(const store::Batch& batch, std::optional<uint64_t> previous,
                                      size_t max_chunk_bytes, bool compress) {
  std::string entry = EncodeBatch(batch, previous);
  v1::LogChunk::Codec codec = v1::LogChunk::CODEC_NONE;
  if (compress) {
    if (std::string compressed = Compress(entry); !compressed.empty()) {
      entry = std::move(compressed);
      codec = v1::LogChunk::CODEC_ZSTD;
    }
  }
  const size_t parts = std::max<size_t>(1, (entry.size() + max_chunk_bytes - 1) / max_chunk_bytes);
  std::vector<std::string> chunks;
  chunks.reserve(parts);
  for (size_t i = 0; i < parts; ++i) {
    v1::LogChunk chunk;
    chunk.set_part(static_cast<uint32_t>(i));
    chunk.set_parts(static_cast<uint32_t>(parts));
    chunk.set_data(entry.substr(i * max_chunk_bytes, max_chunk_bytes));
    chunk.set_codec(codec);
    chunks.push_back(chunk.SerializeAsString());
  }
  return chunks;
}

std::string LogPrefix(const std::string& domain) { return absl::StrCat("/admitd/", domain, "/log/"); }

std::string LogEnd(const std::string& domain) { return absl::StrCat("/admitd/", domain, "/log0"); }

std::string LogKey(const std::string& domain, uint64_t revision, uint32_t part) {
  return absl::StrCat(LogPrefix(domain), absl::StrFormat("%020u/%06u", revision, part));
}

bool ParseLogKey(const std::string& domain, absl::string_view key, uint64_t* revision,
                 uint32_t* part) {
  if (!absl::ConsumePrefix(&key, LogPrefix(domain))) return false;
  if (key.size() != 27 || key[20] != '/') return false;
  return absl::SimpleAtoi(key.substr(0, 20), revision) &&
         absl::SimpleAtoi(key.substr(21), part);
}

absl::Status BatchAssembler::Add(absl::string_view key, absl::string_view value) {
  uint64_t revision = 0;
  uint32_t part = 0;
  if (!ParseLogKey(domain_, key, &revision, &part)) {
    return absl::DataLossError(absl::StrCat("\"", key, "\" is not a key of the log of domain ",
                                            domain_));
  }
  v1::LogChunk chunk;
  if (!chunk.ParseFromArray(value.data(), static_cast<int>(value.size())) || chunk.parts() == 0 ||
      chunk.part() != part || chunk.part() >= chunk.parts()) {
    return absl::DataLossError(absl::StrCat("the value of ", key, " is not a chunk of a batch"));
  }
  if (parts_ != 0 && (revision != revision_ || part != next_part_ || chunk.parts() != parts_ ||
                      chunk.codec() != codec_)) {
    return absl::DataLossError(absl::StrCat("the log's batch ", revision_, " has ", next_part_,
                                            " of its ", parts_, " parts, then comes ", key));
  }
  if (parts_ == 0 && part != 0) {
    return absl::DataLossError(absl::StrCat("the log's batch ", revision, " starts at part ", part));
  }
  if (parts_ == 0) {
    revision_ = revision;
    parts_ = chunk.parts();
    codec_ = chunk.codec();
    next_part_ = 0;
    data_.clear();
  }
  data_.append(chunk.data());
  if (++next_part_ < parts_) return absl::OkStatus();
  parts_ = 0;
  std::string data = std::move(data_);
  data_.clear();
  if (codec_ == v1::LogChunk::CODEC_ZSTD) {
    absl::StatusOr<std::string> plain = Decompress(data, revision);
    if (!plain.ok()) return plain.status();
    data = *std::move(plain);
  } else if (codec_ != v1::LogChunk::CODEC_NONE) {
    return absl::DataLossError(
        absl::StrCat("the log's batch ", revision, " is compressed with unknown codec ", codec_));
  }
  absl::StatusOr<LogEntry> batch = DecodeBatch(data);
  if (!batch.ok()) return batch.status();
  if (batch->batch.revision != revision) {
    return absl::DataLossError(absl::StrCat("the log's key ", key,
                                            " holds the batch of revision ", batch->batch.revision));
  }
  complete_.push_back(*std::move(batch));
  return absl::OkStatus();
}

std::vector<LogEntry> BatchAssembler::TakeComplete() {
  std::vector<LogEntry> out;
  out.swap(complete_);
  return out;
}

}  // namespace admitd::ha
