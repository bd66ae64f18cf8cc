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
#include "server/ha/replicated_store.h"
#include "server/ha/snapshot.h"
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
  // The local store's options: the config's, without an fsync per batch (the log is durable).
  store::StoreOptions LocalStoreOptions() const;
  // One round of following (replica_follow.cc): bootstraps the store when the log cannot bring
  // it up to date (another log's, or behind the trimmed log), applies the log, and registers
  // the revision applied. OK when the store follows the log: then this replica may lead.
  absl::Status FollowOnce();
  // Replaces the store with a snapshot of the leader's.
  absl::Status Bootstrap(const ReplicatedLog::State& state);
  // /admitd/<domain>/replicas/<id> = the revision applied, bound to a lease of the replica's
  // own: the leader trims the log up to the lowest live replica's.
  absl::Status Register(uint64_t revision);
  void Unregister();
  // The name of the log this store follows (a file in the data dir); "" when none.
  std::string ReadLogId() const;
  absl::Status WriteLogId(const std::string& id) const;
  // While leading (replica_trim.cc): every --ha-log-trim-interval, trims the log up to the
  // lowest revision every live replica and every snapshot being sent has, until shutdown.
  void TrimLoop();

  // A follower's /metrics (the HA gauges), /healthz and /readyz (503: not the leader), on
  // --metrics-listen.
  absl::Status StartFollowerEndpoint(const HttpEndpointOptions& options);
  // The audit event of this replica's election, recorded through the leader's server.
  ::admitd::v1::Event LeaderElectedEvent(absl::Duration took) const;

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
  int64_t registry_lease_ = 0;  // Register's lease; 0: none
  ReplicatedStore* leader_store_ = nullptr;  // while leading, owned by server_
  std::unique_ptr<SnapshotService> snapshots_;  // while leading, served by server_
  std::unique_ptr<AdmitdServer> server_;  // while leading
  mutable absl::Mutex mu_;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread runner_;
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_REPLICA_H_
