// The replicated log's entries (docs/high-availability.md): a committed store::Batch as the
// leader writes it to etcd and every follower applies it to its own store, and the etcd key of
// each entry. The encoding is admitd.ha.v1.LogBatch (protos/admitd/ha/v1/log.proto).
//
//   std::string entry = EncodeBatch(batch);
//   absl::StatusOr<store::Batch> again = DecodeBatch(entry);  // equal to `batch`
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_HA_LOG_BATCH_H_
#define ADMITD_SERVER_HA_LOG_BATCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/store.h"

namespace admitd::ha {

std::string EncodeBatch(const store::Batch& batch);
// DATA_LOSS when `entry` is not an encoded batch.
absl::StatusOr<store::Batch> DecodeBatch(absl::string_view entry);

// The key of the entry reaching `revision` in `domain`'s log: /admitd/<domain>/log/ and the
// revision in 20 zero-padded digits, so that keys sort as their revisions do.
std::string LogKey(const std::string& domain, uint64_t revision);
// The prefix every entry key of `domain` starts with.
std::string LogPrefix(const std::string& domain);

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_LOG_BATCH_H_
