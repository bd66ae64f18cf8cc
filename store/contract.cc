#include "store/contract.h"

#include "absl/strings/str_cat.h"
#include "store/keys.h"

namespace admitd::store {

absl::Status CheckBatch(const Batch& batch, uint64_t revision) {
  for (size_t i = 0; i < batch.writes.size(); ++i) {
    if (FamilyFor(batch.writes[i].kind).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("write ", i, " (key \"", batch.writes[i].key, "\") names object kind ",
                       static_cast<int>(batch.writes[i].kind), ", which is not stored"));
    }
  }
  if (batch.revision < revision) {
    return absl::InvalidArgumentError(absl::StrCat("batch revision ", batch.revision,
                                                   " is below the store's revision ", revision));
  }
  uint64_t previous = revision;
  for (const LoggedEvent& event : batch.events) {
    if (event.revision <= previous) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event revision ", event.revision, " does not follow ", previous,
          ": events must be strictly increasing and above the store's revision ", revision));
    }
    previous = event.revision;
  }
  if (previous > batch.revision) {
    return absl::InvalidArgumentError(
        absl::StrCat("event revision ", previous, " is above the batch revision ", batch.revision));
  }
  return absl::OkStatus();
}

absl::Status CompactedAway(uint64_t after, uint64_t floor) {
  return absl::OutOfRangeError(absl::StrCat(
      "events after revision ", after, " were compacted away; the oldest retained revision is ",
      floor, ": list again and watch from the list's revision"));
}

absl::Status StoreClosed(absl::string_view path) {
  if (path.empty()) return absl::FailedPreconditionError("the store is closed");
  return absl::FailedPreconditionError(absl::StrCat("the store at ", path, " is closed"));
}

}  // namespace admitd::store
