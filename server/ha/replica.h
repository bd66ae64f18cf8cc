// One admitd replica of an HA group (docs/high-availability.md), what main() runs when
// --ha-etcd-endpoints is set.
//
// It opens its own RocksDB store and, as a follower, serves FollowerServer (health NOT_SERVING,
// every call refused naming the leader) while it applies the replicated log to its store and
// campaigns for the domain's leader key. Once elected it takes the log over onto its store
// (ReplicatedLog::TakeOver), starts a whole AdmitdServer on the same address over a
// ReplicatedStore (both servers bind it with SO_REUSEPORT for the moment they overlap) and stops
// the follower server: from then on every batch is acknowledged only once etcd has it.
// A leader that loses its lease exits at once with status 3, for its supervisor to start it
// again as a follower: its engine holds state nobody else will accept, and the fence already
// refuses its writes.
//
//   ADMITD_ASSIGN_OR_RETURN(std::unique_ptr<Replica> replica, Replica::Start(config));
//   ... until SIGTERM ...
//   replica->Shutdown(absl::Seconds(10));
//
// Thread safety: Shutdown may be called from any thread, once.
#ifndef ADMITD_SERVER_HA_REPLICA_H_
#define ADMITD_SERVER_HA_REPLICA_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/config.h"
#include "server/ha/etcd_client.h"
#include "common/http_endpoint.h"
#include "common/metrics_registry.h"
#include "server/ha/follower_server.h"
#include "server/ha/ha_status.h"
#include "server/ha/leader_election.h"
#include "server/ha/replicated_log.h"
#include "server/server.h"
#include "store/store.h"

namespace admitd::ha {

class Replica {
 public:
  // The exit status of a leader that lost its lease.
  static constexpr int kLostLeadership = 3;

  // Opens the store and serves as a follower; campaigns on a thread of its own. Errors: the
  // config's TLS files, the store (as AdmitdServer::Start), the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Replica>> Start(const Config& config);
  ~Replica();

  void Shutdown(absl::Duration grace);

 private:
  explicit Replica(const Config& config) : config_(config), status_(config.ha_domain) {}
  // Follows until elected or shut down, then leads.
  void Run();
  // Whether Shutdown was called, waiting at most `wait` for it.
  bool ShutDown(absl::Duration wait);
  // A follower's /metrics (the HA gauges), /healthz and /readyz (503: not the leader), on
  // --metrics-listen.
  absl::Status StartFollowerEndpoint(const HttpEndpointOptions& options);
  // The audit event of this replica's election, recorded through the leader's server.
  v1::Event LeaderElectedEvent(absl::Duration took) const;

  Config config_;  // listen and the advertised address resolved once bound
  std::string id_;       // in the domain
  std::string address_;  // advertised to clients
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<LeaderElection> election_;
  std::unique_ptr<ReplicatedLog> log_;
  std::unique_ptr<FollowerServer> follower_;
  std::unique_ptr<store::Store> local_;  // until the leader's server takes it
  HaStatus status_;                      // outlives both servers' metrics registries
  LeaderInfo last_leader_;               // the last one seen while following
  std::unique_ptr<MetricsRegistry> follower_metrics_;
  std::unique_ptr<HttpEndpoint> follower_http_;  // while following
  std::unique_ptr<AdmitdServer> server_;  // while leading
  mutable absl::Mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread runner_;
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_REPLICA_H_
