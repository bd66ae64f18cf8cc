// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it, so that of several shim
// replicas only one reconciles (every replica serves the webhook). Kueue's defaults: a 15 s lease,
// 10 s to renew, a try every 2 s. A lease held by another is judged by when this candidate last
// saw its record change (plus the lease duration), never by the holder's clock.
//
//   LeaderElector elector(kube, {.ns = "admitd-system", .name = "admitd-shim", .identity = pod});
//   std::thread t([&] { elector.Run([] { start(); }, [] { stop(); }); });
//
// Thread safety: Run on one thread; Stop and IsLeader from any; TryAcquireOrRenew is for tests
// and Run only.
#ifndef ADMITD_CLIENTS_SHIM_KUBE_LEADER_ELECTION_H_
#define ADMITD_CLIENTS_SHIM_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/shim/kube/kube_client.h"

namespace admitd::shim {

struct LeaderElectionConfig {
  std::string ns;
  std::string name;
  std::string identity;  // unique per replica (the pod's name)
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
};

class LeaderElector {
 public:
  LeaderElector(const KubeClient& client, LeaderElectionConfig config,
                std::function<absl::Time()> clock = [] { return absl::Now(); });

  // One attempt (client-go's tryAcquireOrRenew): creates the Lease when missing, renews it when
  // held, takes it over when its holder's record has not changed for a lease duration. True when
  // this candidate holds the lease afterwards; a lost race (409) is false, not an error.
  absl::StatusOr<bool> TryAcquireOrRenew();

  // Tries every retry period until leading, calls `on_started`, renews every retry period, and
  // when it cannot renew within the renew deadline (or on Stop) calls `on_stopped` and returns.
  void Run(const std::function<void()>& on_started, const std::function<void()>& on_stopped);
  void Stop() { stopped_.store(true); }
  // Gives the lease up when this candidate holds it (an empty holder and a one-second duration,
  // as client-go releases it), so another replica takes over at once. Call after Run returned.
  absl::Status Release();
  bool IsLeader() const { return leading_.load(); }

 private:
  std::string LeasePath() const;

  const KubeClient& client_;
  const LeaderElectionConfig config_;
  const std::function<absl::Time()> clock_;
  std::string observed_record_;  // the Lease spec last read, serialized
  absl::Time observed_at_ = absl::InfinitePast();
  std::atomic<bool> stopped_{false};
  std::atomic<bool> leading_{false};
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_LEADER_ELECTION_H_
