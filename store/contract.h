// The parts of the Store contract (store/store.h) that every implementation checks the same
// way: which batches Commit accepts, and the errors callers match on. Pure functions; safe from
// any thread.
#ifndef ADMITD_STORE_CONTRACT_H_
#define ADMITD_STORE_CONTRACT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "store/store.h"

namespace admitd::store {

// OK when `batch` may be committed on top of `revision`: every write names a stored kind, event
// revisions are strictly increasing, above `revision` and at most batch.revision, and
// batch.revision is not below `revision`. INVALID_ARGUMENT saying which rule broke otherwise.
absl::Status CheckBatch(const Batch& batch, uint64_t revision);

// OUT_OF_RANGE for a read after `after` when events below `floor` were compacted away.
absl::Status CompactedAway(uint64_t after, uint64_t floor);

// FAILED_PRECONDITION for a call on a closed store; `path` may be empty.
absl::Status StoreClosed(absl::string_view path);

}  // namespace admitd::store

#endif  // ADMITD_STORE_CONTRACT_H_
