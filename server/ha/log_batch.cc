#include "server/ha/log_batch.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "admitd/ha/v1/log.pb.h"

namespace admitd::ha {

std::string EncodeBatch(const store::Batch& batch) {
  v1::LogBatch entry;
  entry.set_revision(batch.revision);
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

absl::StatusOr<store::Batch> DecodeBatch(absl::string_view bytes) {
  v1::LogBatch entry;
  if (!entry.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat("a log entry of ", bytes.size(),
                                            " bytes is not an admitd.ha.v1.LogBatch"));
  }
  store::Batch batch;
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
  return batch;
}

std::string LogPrefix(const std::string& domain) { return absl::StrCat("/admitd/", domain, "/log/"); }

std::string LogKey(const std::string& domain, uint64_t revision) {
  return absl::StrCat(LogPrefix(domain), absl::StrFormat("%020u", revision));
}

}  // namespace admitd::ha
