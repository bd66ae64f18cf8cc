#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "grpc/health/v1/health.pb.h"
#include "server/log.h"

namespace admitd {
namespace {

const char* const kServices[] = {"admitd.v1.AdmissionService", "admitd.v1.QueueService"};

}  // namespace

absl::StatusOr<std::unique_ptr<AdmitdServer>> AdmitdServer::Start(
    const Config& config, std::function<absl::Time()> clock) {
  std::unique_ptr<AdmitdServer> server(new AdmitdServer());
  server->config_ = config;

  store::StoreOptions store_options;
  store_options.path = config.data_dir;
  store_options.sync = config.sync;
  store_options.injected_sync_delay = config.sync_delay;
  store_options.event_retention = config.event_retention;
  ADMITD_ASSIGN_OR_RETURN(server->store_, store::Store::Open(store_options));

  engine::EngineOptions engine_options;
  engine_options.backoff_base = absl::Seconds(config.backoff_base_seconds);
  engine_options.backoff_max = absl::Seconds(config.backoff_max_seconds);
  engine_options.backoff_limit_count = static_cast<int>(config.backoff_limit_count);
  engine_options.slice_history_limit = static_cast<int>(config.slice_history_limit);
  engine_options.pod_group_max_roles = static_cast<int>(config.pod_group_max_roles);
  engine_options.pod_unmanaged_namespaces = config.pod_unmanaged_namespaces;
  for (const char* gate : {"PodIntegrationFastQuotaRelease", "FastQuotaReleaseInPodIntegration"}) {
    if (auto it = config.feature_gates.find(gate); it != config.feature_gates.end()) {
      engine_options.pod_fast_quota_release = it->second;
    }
  }
  if (auto gate = config.feature_gates.find("ElasticJobsViaWorkloadSlices");
      gate != config.feature_gates.end()) {
    engine_options.elastic_jobs = gate->second;
  }
  server->engine_ = std::make_unique<engine::Engine>(engine_options);
  server->hub_ = std::make_unique<WatchHub>();
  server->metrics_ = std::make_unique<Metrics>();
  SequencerOptions seq_options;
  seq_options.metrics = server->metrics_.get();
  seq_options.manual_scheduling = config.manual_scheduling;
  seq_options.manual_clock = config.manual_clock;
  seq_options.clock = std::move(clock);
  server->sequencer_ = std::make_unique<Sequencer>(server->engine_.get(), server->store_.get(),
                                                   server->hub_.get(), seq_options);
  server->finisher_ = std::make_unique<Finisher>();
  server->context_.sequencer = server->sequencer_.get();
  server->context_.finisher = server->finisher_.get();
  server->context_.store = server->store_.get();
  server->context_.hub = server->hub_.get();
  server->context_.metrics = server->metrics_.get();
  server->queue_service_ = std::make_unique<QueueServiceImpl>(&server->context_);
  server->admission_service_ = std::make_unique<AdmissionServiceImpl>(&server->context_);
  server->pod_service_ = std::make_unique<PodServiceImpl>(&server->context_);

  // Linking health.pb lets reflection describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->queue_service_.get());
  builder.RegisterService(server->admission_service_.get());
  builder.RegisterService(server->pod_service_.get());
  builder.SetMaxReceiveMessageSize(16 << 20);
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    server->store_->Close().IgnoreError();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  std::string host = config.listen.substr(0, config.listen.rfind(':'));
  server->address_ = absl::StrCat(host, ":", server->port_);
  server->SetServing(false);
  ADMITD_LOG(kInfo, "listening", {{"addr", server->address_}, {"data_dir", config.data_dir}});

  // Before recovery, which can take a while: /healthz answers meanwhile, /readyz says 503.
  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<HttpEndpoint>> metrics = StartMetricsEndpoint(
        config.metrics_listen, server->metrics_.get(),
        [s = server.get()] { return s->serving_.load(std::memory_order_acquire); });
    if (!metrics.ok()) {
      server->grpc_server_->Shutdown();
      server->store_->Close().IgnoreError();
      return metrics.status();
    }
    server->metrics_server_ = *std::move(metrics);
  }
  if (absl::Status recovered = server->Recover(); !recovered.ok()) {
    server->grpc_server_->Shutdown();
    server->store_->Close().IgnoreError();
    return recovered;
  }
  server->sequencer_->Start();
  server->context_.ready.store(true, std::memory_order_release);
  server->SetServing(true);
  server->started_ = true;
  ADMITD_LOG(kInfo, "serving", {{"revision", absl::StrCat(server->engine_->revision())},
                                {"manual_scheduling", config.manual_scheduling ? "true" : "false"}});
  return server;
}

absl::Status AdmitdServer::Recover() {
  const absl::Time start = absl::Now();
  uint64_t objects = 0;
  ADMITD_RETURN_IF_ERROR(store_->ForEachObject(
      [&](v1::ObjectKind kind, absl::string_view key, absl::string_view value) -> absl::Status {
        ++objects;
        if (kind == v1::OBJECT_KIND_WORKLOAD) {
          v1::Workload workload;
          if (!workload.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
            return absl::DataLossError(absl::StrCat("stored workload ", key, " cannot be parsed"));
          }
          return engine_->Restore(workload);
        }
        if (kind == v1::OBJECT_KIND_POD) {
          v1::PodObservation pod;
          if (!pod.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
            return absl::DataLossError(absl::StrCat("stored pod ", key, " cannot be parsed"));
          }
          return engine_->Restore(pod);
        }
        v1::QueueObject object;
        if (!object.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return absl::DataLossError(absl::StrCat("stored object ", key, " cannot be parsed"));
        }
        return engine_->Restore(object);
      }));
  ADMITD_RETURN_IF_ERROR(engine_->FinishRestore(store_->revision()));
  hub_->SetRevision(store_->revision());
  ADMITD_LOG(kInfo, "recovered",
             {{"objects", absl::StrCat(objects)},
              {"revision", absl::StrCat(store_->revision())},
              {"took", absl::FormatDuration(absl::Now() - start)}});
  return absl::OkStatus();
}

void AdmitdServer::SetServing(bool serving) {
  serving_.store(serving, std::memory_order_release);
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus("", serving);
  for (const char* service : kServices) health->SetServingStatus(service, serving);
}

void AdmitdServer::Shutdown(absl::Duration grace) {
  if (!started_) return;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  ADMITD_LOG(kInfo, "shutting down", {{"grace", absl::FormatDuration(grace)}});
  SetServing(false);
  hub_->Close();
  if (metrics_server_) metrics_server_->Stop();
  sequencer_->ReleaseWaiters();
  grpc_server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  sequencer_->Stop();
  if (absl::Status closed = store_->Close(); !closed.ok()) {
    ADMITD_LOG(kError, "closing the store failed", {{"error", closed.ToString()}});
  }
  ADMITD_LOG(kInfo, "stopped", {{"revision", absl::StrCat(engine_->revision())}});
}

void AdmitdServer::Wait() { grpc_server_->Wait(); }

AdmitdServer::~AdmitdServer() { Shutdown(absl::Seconds(1)); }

}  // namespace admitd
