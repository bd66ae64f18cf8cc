// Replica's leader side beyond serving: trimming the replicated log (server/ha/replica.h).
#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/ha/replica.h"

namespace admitd::ha {

void Replica::TrimLoop() {
  // Followers register every second or so; until each live one has, the leader cannot know
  // what they still need (a new group's followers have not registered at all yet).
  if (ShutDown(2 * config_.ha_lease_ttl)) return;
  uint64_t trimmed = 0;
  do {
    // The lowest revision a live replica applied (their entries go with their leases), this
    // leader's own, and that of every snapshot being sent or not yet applied.
    etcdserverpb::RangeRequest range;
    range.set_key(absl::StrCat("/admitd/", config_.ha_domain, "/replicas/"));
    range.set_range_end(absl::StrCat("/admitd/", config_.ha_domain, "/replicas0"));
    absl::StatusOr<etcdserverpb::RangeResponse> replicas = etcd_->Range(range);
    if (!replicas.ok()) continue;
    std::map<std::string, uint64_t> registered;
    uint64_t upto = leader_store_->revision();
    for (const mvccpb::KeyValue& kv : replicas->kvs()) {
      uint64_t applied = 0;
      if (!absl::SimpleAtoi(kv.value(), &applied)) continue;
      registered[kv.key().substr(range.key().size())] = applied;
      upto = std::min(upto, applied);
    }
    upto = std::min(upto, snapshots_->TrimLimit(absl::Now(), registered));
    if (upto <= trimmed) continue;
    if (absl::Status s = log_->Trim(upto); !s.ok()) {
      ADMITD_LOG(kWarning, "cannot trim the replicated log", {{"error", s.ToString()}});
      continue;
    }
    ADMITD_LOG(kDebug, "trimmed the replicated log",
               {{"through", absl::StrCat(upto)}, {"replicas", absl::StrCat(registered.size())}});
    trimmed = upto;
  } while (!ShutDown(config_.ha_log_trim_interval));
}

}  // namespace admitd::ha
