// What an HA replica tells about itself (docs/high-availability.md, "Observing a group"): its
// role, the leader's term, the last revision of the log it applied, how far behind the log it
// may be, and how often it took the leadership over. Exposed as Prometheus gauges on the
// replica's /metrics, a follower's as well as the leader's:
//
//   admitd_ha_role{domain,role="leader"|"follower"}  1 for the replica's role, 0 for the other
//   admitd_ha_term{domain}                           the leader's term this replica knows of
//   admitd_ha_applied_revision{domain}               the last revision in this replica's store
//   admitd_ha_replication_lag_seconds{domain}        0 on the leader; on a follower, the time
//                                                    since it last read the log to its end
//   admitd_ha_failovers_total{domain}                times this replica took the leadership over
//
//   HaStatus status("prod");
//   status.AddTo(registry);
//   status.Applied(revision, absl::Now());  // after each read of the log to its end
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_SERVER_HA_HA_STATUS_H_
#define ADMITD_SERVER_HA_HA_STATUS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics_registry.h"

namespace admitd::ha {

class HaStatus {
 public:
  explicit HaStatus(std::string domain) : domain_(std::move(domain)) {}

  // Adds the gauges as a collector of `registry` (which must not outlive this).
  void AddTo(MetricsRegistry& registry) const;

  // A follower read the log to its end at `now`, its store then at `revision`.
  void Applied(uint64_t revision, absl::Time now);
  void SetTerm(int64_t term) { term_.store(term); }
  // This replica took the leadership over; its store is at `revision`, and from then on at
  // what `revision_now` says (read at each scrape).
  void Leading(int64_t term, uint64_t revision, std::function<uint64_t()> revision_now = nullptr);

  bool leading() const { return leading_.load(); }
  uint64_t applied_revision() const { return applied_.load(); }
  // Seconds since the log was last read to its end (0 while leading, or before the first read).
  double LagSeconds(absl::Time now) const;

 private:
  const std::string domain_;
  std::atomic<bool> leading_{false};
  std::atomic<int64_t> term_{0};
  std::atomic<uint64_t> applied_{0};
  std::atomic<int64_t> caught_up_unix_nanos_{0};  // 0: never
  std::atomic<int64_t> failovers_{0};
  mutable absl::Mutex mu_;
  std::function<uint64_t()> revision_now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_HA_STATUS_H_
