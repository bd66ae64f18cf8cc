// AdmitdServer: one running admitd — the store, the engine recovered from it, the sequencer,
// the watch hub and the gRPC server with health checking and reflection. main() runs one;
// in-process tests start one on port 0.
//
// Thread safety: Shutdown may be called from any thread, once.
//
//   Config config;
//   config.listen = "127.0.0.1:0";
//   config.data_dir = dir;
//   ADMITD_ASSIGN_OR_RETURN(auto server, AdmitdServer::Start(config));
//   ... connect to server->address() ...
//   server->Shutdown(absl::Seconds(5));
#ifndef ADMITD_SERVER_SERVER_H_
#define ADMITD_SERVER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/access_control.h"
#include "server/admission_service.h"
#include "server/config.h"
#include "common/trace/tracer.h"
#include "server/dispatch.h"
#include "server/metrics.h"
#include "server/pod_service.h"
#include "server/queue_service.h"
#include "server/rpc_observer.h"
#include "server/sequencer.h"
#include "server/trace_recorder.h"
#include "server/multikueue/dispatcher.h"
#include "server/watch_hub.h"
#include "store/store.h"

namespace admitd {

class AdmitdServer {
 public:
  // Opens the store (or takes `store`, already open: an HA leader's), starts serving (health
  // NOT_SERVING), recovers the engine from the store, then starts the sequencer and flips health
  // to SERVING. Errors: the store cannot be opened (FAILED_PRECONDITION when another admitd holds
  // it), the address cannot be bound, or the stored state cannot be recovered.
  // `services` are served beside admitd's own (an HA leader's replication service).
  static absl::StatusOr<std::unique_ptr<AdmitdServer>> Start(
      const Config& config, std::function<absl::Time()> clock = [] { return absl::Now(); },
      std::unique_ptr<store::Store> store = nullptr,
      const std::vector<grpc::Service*>& services = {});
  // The options of the RocksDB store `config` asks for, logging through admitd's log.
  static store::StoreOptions StoreOptionsFor(const Config& config);
  ~AdmitdServer();

  // "host:port" actually bound (the port resolved when the config asked for port 0).
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // The metrics endpoint's port (0 when --metrics-listen is not set).
  int metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }
  const Metrics& metrics() const { return *metrics_; }
  // The /metrics registry, for collectors of the process around the server (an HA replica's).
  MetricsRegistry& metrics_registry() { return metrics_->registry(); }
  // Whether the caller of `rpc` may make `request` (always OK without an authorization policy):
  // for services added beside admitd's own.
  absl::Status Authorize(const grpc::ServerContextBase& rpc, const auth::Request& request) const;
  // Records `event` (an audit record, as Engine::RecordAudit takes it) in the next batch: it is
  // stored, replicated and watched like every event. Dropped when the sequencer refuses work.
  void RecordEvent(v1::Event event);

  // Flips health to NOT_SERVING and refuses new calls with UNAVAILABLE (they never reach the
  // sequencer), ends Watch streams, answers every command the sequencer accepted with its real
  // result, keeps refusing until callers stop sending (at most half of `grace`, 2 s at most),
  // then shuts gRPC down (calls still running get the rest of `grace`) and closes the store.
  void Shutdown(absl::Duration grace);
  // Blocks until Shutdown has finished.
  void Wait();

  const Sequencer& sequencer() const { return *sequencer_; }

 private:
  AdmitdServer() = default;
  absl::Status Recover();
  void SetServing(bool serving);
  // What GET /readyz reports: OK while calls are taken and the store takes writes.
  absl::Status Readiness();

  Config config_;
  std::string address_;
  int port_ = 0;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<Intake> intake_;  // the bound on calls waiting for the sequencer
  // Traces (both off without --otlp-endpoint); they outlive the sequencer that records into them.
  std::unique_ptr<tracing::Tracer> tracer_;
  std::unique_ptr<TraceRecorder> traces_;
  RpcObserver* calls_ = nullptr;  // owned by grpc_server_
  // What grpc.health.v1 says for every service; /readyz answers it.
  std::atomic<bool> serving_{false};
  std::unique_ptr<HttpEndpoint> metrics_server_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<Sequencer> sequencer_;
  std::unique_ptr<multikueue::Dispatcher> dispatcher_;  // MultiKueue, on every admitd
  std::unique_ptr<AccessControl> access_;
  ServiceContext context_;
  std::unique_ptr<QueueServiceImpl> queue_service_;
  std::unique_ptr<AdmissionServiceImpl> admission_service_;
  std::unique_ptr<PodServiceImpl> pod_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  absl::Mutex mu_;
  bool started_ = false;  // set once Start completed; Shutdown is a no-op before that
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_SERVER_H_
