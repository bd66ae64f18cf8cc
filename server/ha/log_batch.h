// The replicated log's entries (docs/high-availability.md): a committed store::Batch as the
// leader writes it to etcd and every follower applies it to its own store, and the etcd keys of
// each entry. The encoding is admitd.ha.v1.LogBatch (protos/admitd/ha/v1/log.proto), compressed
// with Zstandard, cut into LogChunks of a bounded size, one key each, so that no etcd request
// exceeds etcd's limits. Compression matters: etcd's members spend their CPU on bytes (the WAL,
// the raft messages to each other, the answers to every follower's reads), and a batch's objects
// repeat one another's field names, queues and shapes.
//
//   std::vector<std::string> chunks = EncodeChunks(batch, previous, 1 << 20);  // parts 0..n-1
//   BatchAssembler assembler(domain);
//   for (int i = 0; i < chunks.size(); ++i) assembler.Add(LogKey(domain, batch.revision, i), chunks[i]);
//   std::vector<LogEntry> entries = assembler.TakeComplete();  // {{batch, previous}}
//
// Thread safety: the functions are pure; a BatchAssembler is used by one thread at a time.
#ifndef ADMITD_SERVER_HA_LOG_BATCH_H_
#define ADMITD_SERVER_HA_LOG_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/store.h"

namespace admitd::ha {

// One entry of the log: a batch and, when the entry names it, the revision of the batch before
// it (LogBatch.previous), which a store must be at to apply it.
struct LogEntry {
  store::Batch batch;
  std::optional<uint64_t> previous;
};

std::string EncodeBatch(const store::Batch& batch, std::optional<uint64_t> previous = {});
// DATA_LOSS when `entry` is not an encoded batch.
absl::StatusOr<LogEntry> DecodeBatch(absl::string_view entry);

// `batch`'s entry as the values of its parts: chunks of at most `max_chunk_bytes` (> 0) of the
// encoded LogBatch each, one chunk when it fits. With `compress`, the encoding is a Zstandard
// frame when that is smaller (CODEC_ZSTD), as it is otherwise (CODEC_NONE).
std::vector<std::string> EncodeChunks(const store::Batch& batch, std::optional<uint64_t> previous,
                                      size_t max_chunk_bytes, bool compress = true);

// The key of part `part` of the entry reaching `revision` in `domain`'s log: /admitd/<domain>/log/,
// the revision in 20 zero-padded digits, '/', the part in 6, so that keys sort as (revision,
// part) do.
std::string LogKey(const std::string& domain, uint64_t revision, uint32_t part = 0);
// The prefix every entry key of `domain` starts with, and the first key after all of them (the
// end of an etcd range over the log).
std::string LogPrefix(const std::string& domain);
std::string LogEnd(const std::string& domain);
// The revision and part a key of `domain`'s log names; false when it is not such a key.
bool ParseLogKey(const std::string& domain, absl::string_view key, uint64_t* revision,
                 uint32_t* part);

// Puts batches back together from the log's keys read in key order.
class BatchAssembler {
 public:
  explicit BatchAssembler(std::string domain) : domain_(std::move(domain)) {}

  // The next key of the log and its value. DATA_LOSS when the key is not a log
  // key, the value not a chunk, the part not the one expected next (a part missing in the
  // middle, or a batch left incomplete before the next one starts), or the batch's data does not
  // decompress.
  absl::Status Add(absl::string_view key, absl::string_view value);
  // The entries completed so far, in order; they are not returned again.
  std::vector<LogEntry> TakeComplete();
  // The revision of the batch whose parts have started but not all arrived; 0 when none.
  uint64_t incomplete_revision() const { return parts_ == 0 ? 0 : revision_; }

 private:
  const std::string domain_;
  std::vector<LogEntry> complete_;
  uint64_t revision_ = 0;  // of the batch being put together
  uint32_t parts_ = 0;     // its number of parts; 0 between batches
  uint32_t next_part_ = 0;
  int codec_ = 0;  // v1::LogChunk::Codec of the batch being put together
  std::string data_;
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_LOG_BATCH_H_
