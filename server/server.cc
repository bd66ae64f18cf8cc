#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "grpc/health/v1/health.pb.h"
#include "common/log.h"
#include "server/health_names.h"
#include "server/parse_errors.h"
#include "server/recovery.h"
#include "server/transport_security.h"

namespace admitd {
namespace {

const char* const kServices[] = {"admitd.v1.AdmissionService", "admitd.v1.QueueService"};

// Shutdown keeps refusing calls (UNAVAILABLE) until none arrived for this long, so callers have
// stopped sending before gRPC closes the connections: gRPC cancels a call that arrives after
// that without running it, and CANCELLED does not tell its caller whether it ran.
constexpr absl::Duration kQuietBeforeClose = absl::Milliseconds(100);
// ... but for this long at most, and at most half the grace.
constexpr absl::Duration kMaxRefusingBeforeClose = absl::Seconds(2);

// Every ClusterQueue with its status and the engine's object counts, read on the sequencer
// thread between batches (the metrics' engine gauges, at each scrape); nullopt when the
// sequencer does not answer within a few seconds or refuses (a failed commit).
std::optional<Metrics::EngineState> ReadEngineState(Sequencer* sequencer) {
  struct Read {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    std::optional<Metrics::EngineState> state ABSL_GUARDED_BY(mu);
  };
  auto read = std::make_shared<Read>();
  Command command;
  command.apply = [read](engine::Engine& engine, absl::Time) {
    v1::ListObjectsRequest request;
    request.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    Metrics::EngineState out;
    out.object_counts = engine.ObjectCounts();
    out.weighted_shares = engine.WeightedShares();
    out.local_queue_usages = engine.AdmissionFairSharingUsages();
    while (true) {
      absl::StatusOr<v1::ListObjectsResponse> page = engine.List(request);
      if (!page.ok()) return;
      for (v1::QueueObject& o : *page->mutable_objects()) {
        out.cluster_queues.push_back(std::move(*o.mutable_cluster_queue()));
      }
      if (page->next_page_token().empty()) break;
      request.set_page_token(page->next_page_token());
    }
    absl::MutexLock lock(&read->mu);
    read->state = std::move(out);
  };
  command.respond = [read](const absl::Status&) {
    absl::MutexLock lock(&read->mu);
    read->done = true;
  };
  sequencer->Enqueue(std::move(command));
  absl::MutexLock lock(&read->mu);
  read->mu.AwaitWithTimeout(absl::Condition(&read->done), absl::Seconds(5));
  return read->state;
}


// Gauges of the watch hub and the store, read at each scrape.
std::vector<prometheus::MetricFamily> ServingFamilies(const WatchHub& hub,
                                                      const store::Store& store,
                                                      const tracing::Tracer& tracer) {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  auto one = [&out](const char* name, const char* help, MetricType type, double value) {
    out.push_back(MetricFamilyOf(name, help, type));
    AddSample(&out.back(), {}, value);
  };
  one("admitd_watch_streams", "Open Watch streams.", MetricType::Gauge,
      static_cast<double>(hub.subscribers()));
  one("admitd_watch_lag_revisions",
      "How many revisions the slowest Watch stream has yet to send.", MetricType::Gauge,
      static_cast<double>(hub.MaxLagRevisions()));
  one("admitd_watch_streams_cut_total",
      "Watch streams ended with RESOURCE_EXHAUSTED because they fell too far behind.",
      MetricType::Counter, static_cast<double>(hub.cut_offs()));
  const uint64_t head = store.revision(), oldest = store.oldest_event_revision();
  one("admitd_event_log_events", "Events kept in the store's event log (Watch resumes from it).",
      MetricType::Gauge, static_cast<double>(head + 1 > oldest ? head + 1 - oldest : 0));
  if (tracer.enabled()) {
    one("admitd_tracing_spans_exported_total", "Spans sent to the OTLP collector.",
        MetricType::Counter, static_cast<double>(tracer.spans_exported()));
    one("admitd_tracing_spans_dropped_total",
        "Spans dropped: the export queue was full, or the collector refused or missed them.",
        MetricType::Counter, static_cast<double>(tracer.spans_dropped()));
    one("admitd_tracing_export_failures_total", "OTLP export requests that failed.",
        MetricType::Counter, static_cast<double>(tracer.export_failures()));
  }
  static const auto* const kHelp = new std::map<std::string, std::string>{
      {"write_stopped", "1 while RocksDB stops writes (a write stall), 0 otherwise."},
      {"delayed_write_rate_bytes",
       "The rate in bytes/s RocksDB slows writes to while it delays them."},
      {"pending_compaction_bytes", "Bytes RocksDB estimates compaction has yet to rewrite."},
      {"running_compactions", "Compactions RocksDB is running."},
      {"sst_files_bytes", "Bytes in RocksDB's SST files, every column family."},
      {"memtable_bytes", "Bytes in RocksDB's memtables, every column family."}};
  for (const auto& [name, value] : store.Health()) {
    auto help = kHelp->find(name);
    out.push_back(MetricFamilyOf(absl::StrCat("admitd_rocksdb_", name),
                                 help == kHelp->end() ? "RocksDB property." : help->second,
                                 MetricType::Gauge));
    AddSample(&out.back(), {}, static_cast<double>(value));
  }
  return out;
}
}  // namespace

store::StoreOptions AdmitdServer::StoreOptionsFor(const Config& config) {
  store::StoreOptions store_options;
  store_options.path = config.data_dir;
  store_options.sync = config.sync;
  store_options.injected_sync_delay = config.sync_delay;
  store_options.event_retention = config.event_retention;
  store_options.file_system = config.store_file_system;
  store_options.log = [](bool error, const std::string& message) {
    if (error) {
      ADMITD_LOG(kError, "rocksdb", {{"message", message}});
    } else {
      ADMITD_LOG(kWarning, "rocksdb", {{"message", message}});
    }
  };
  return store_options;
}

absl::StatusOr<std::unique_ptr<AdmitdServer>> AdmitdServer::Start(
    const Config& config, std::function<absl::Time()> clock, std::unique_ptr<store::Store> store,
    const std::vector<grpc::Service*>& services) {
  std::unique_ptr<AdmitdServer> server(new AdmitdServer());
  server->config_ = config;
  // Before the store is opened: bad certificate, authentication or policy files stop the
  // start at once.
  ADMITD_ASSIGN_OR_RETURN(TransportSecurity security, MakeTransportSecurity(config));
  ADMITD_ASSIGN_OR_RETURN(server->access_, MakeAccessControl(config, clock));
  if (store != nullptr) {
    server->store_ = std::move(store);
  } else {
    ADMITD_ASSIGN_OR_RETURN(server->store_, store::Store::Open(StoreOptionsFor(config)));
  }

  engine::EngineOptions engine_options;
  engine_options.backoff_base = absl::Seconds(config.backoff_base_seconds);
  engine_options.backoff_max = absl::Seconds(config.backoff_max_seconds);
  engine_options.backoff_limit_count = static_cast<int>(config.backoff_limit_count);
  engine_options.slice_history_limit = static_cast<int>(config.slice_history_limit);
  engine_options.pod_group_max_roles = static_cast<int>(config.pod_group_max_roles);
  engine_options.pod_unmanaged_namespaces = config.pod_unmanaged_namespaces;
  engine_options.max_object_bytes = static_cast<size_t>(config.max_object_bytes);
  engine_options.max_list_page_bytes = static_cast<size_t>(config.max_list_page_bytes);
  for (const char* gate : {"PodIntegrationFastQuotaRelease", "FastQuotaReleaseInPodIntegration"}) {
    if (auto it = config.feature_gates.find(gate); it != config.feature_gates.end()) {
      engine_options.pod_fast_quota_release = it->second;
    }
  }
  if (auto gate = config.feature_gates.find("ElasticJobsViaWorkloadSlices");
      gate != config.feature_gates.end()) {
    engine_options.elastic_jobs = gate->second;
  }
  if (config.wait_for_pods_ready) {
    engine::EngineOptions::WaitForPodsReady& w = engine_options.wait_for_pods_ready;
    w.enabled = true;
    w.timeout = config.pods_ready_timeout.value_or(absl::Minutes(30));
    w.block_admission = config.pods_ready_block_admission.value_or(false);
    w.recovery_timeout = config.pods_ready_recovery_timeout.value_or(w.timeout);
    w.requeue_from_eviction = config.pods_ready_timestamp != "Creation";
  }
  if (config.admission_fair_sharing) {
    engine::EngineOptions::AdmissionFairSharing& afs = engine_options.admission_fair_sharing;
    afs.enabled = true;
    afs.usage_half_life = config.afs_usage_half_life.value_or(absl::ZeroDuration());
    afs.usage_sampling_interval = config.afs_usage_sampling_interval.value_or(absl::Minutes(5));
    afs.resource_weights = config.afs_resource_weights;
  }
  engine_options.fair_sharing = config.fair_sharing;
  engine_options.fair_preemption_strategies.clear();
  for (const std::string& s : config.fair_sharing_preemption_strategies) {
    engine_options.fair_preemption_strategies.push_back(
        s == "LessThanInitialShare" ? engine::FairPreemptionStrategy::kLessThanInitialShare
                                    : engine::FairPreemptionStrategy::kLessThanOrEqualToFinalShare);
  }
  server->engine_ = std::make_unique<engine::Engine>(engine_options);
  server->hub_ = std::make_unique<WatchHub>(kDefaultWatchBufferEvents,
                                            static_cast<size_t>(config.watch_buffer_bytes));
  server->metrics_ = std::make_unique<Metrics>();
  tracing::TracerOptions trace_options;
  trace_options.endpoint = config.otlp_endpoint;
  trace_options.sample_ratio = config.trace_sample_ratio;
  trace_options.service_name = config.trace_service_name;
  server->tracer_ = tracing::Tracer::Create(std::move(trace_options));
  server->traces_ = std::make_unique<TraceRecorder>(server->tracer_.get());
  SequencerOptions seq_options;
  seq_options.metrics = server->metrics_.get();
  seq_options.traces = server->traces_->enabled() ? server->traces_.get() : nullptr;
  seq_options.manual_scheduling = config.manual_scheduling;
  seq_options.manual_clock = config.manual_clock;
  seq_options.clock = std::move(clock);
  if (config.manual_clock_start.has_value()) {
    // A clock that stands still but for RunSchedulingCycles' advances.
    seq_options.clock = [start = *config.manual_clock_start] { return start; };
  }
  // After a failed commit the engine is rebuilt from the store as at startup, into a new
  // engine that replaces the old one only once complete.
  seq_options.reload = [store = server->store_.get(), engine_options](engine::Engine* engine) {
    engine::Engine fresh(engine_options);
    uint64_t objects = 0;
    ADMITD_RETURN_IF_ERROR(RestoreFromStore(*store, &fresh, &objects));
    *engine = std::move(fresh);
    return absl::OkStatus();
  };
  seq_options.on_health_change = [server = server.get()](const absl::Status& health) {
    absl::MutexLock lock(&server->mu_);
    if (!server->shut_down_) server->SetServing(health.ok());
  };
  server->sequencer_ = std::make_unique<Sequencer>(server->engine_.get(), server->store_.get(),
                                                   server->hub_.get(), seq_options);
  server->metrics_->SetEngineSource(
      [seq = server->sequencer_.get()] { return ReadEngineState(seq); });
  server->metrics_->registry().AddCollector(
      [hub = server->hub_.get(), store = server->store_.get(), tracer = server->tracer_.get()] {
        return ServingFamilies(*hub, *store, *tracer);
      });
  server->context_.sequencer = server->sequencer_.get();
  server->context_.store = server->store_.get();
  server->context_.hub = server->hub_.get();
  server->context_.metrics = server->metrics_.get();
  server->context_.access = server->access_.get();
  server->intake_ =
      std::make_unique<Intake>(config.max_pending_calls, &server->metrics_->registry());
  server->context_.intake = server->intake_.get();
  server->queue_service_ = std::make_unique<QueueServiceImpl>(&server->context_);
  server->admission_service_ = std::make_unique<AdmissionServiceImpl>(&server->context_);
  server->pod_service_ = std::make_unique<PodServiceImpl>(&server->context_);

  // Linking health.pb lets reflection describe grpc.health.v1.Health.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, security.grpc, &server->port_);
  // A replica's leader server binds the address its follower server still serves, so that the
  // handover refuses no connection (server/ha/replica.h); alone, a second process on the same
  // address is an error, not a silent share.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, config.ha_etcd_endpoints.empty() ? 0 : 1);
  builder.RegisterService(server->queue_service_.get());
  builder.RegisterService(server->admission_service_.get());
  builder.RegisterService(server->pod_service_.get());
  for (grpc::Service* service : services) builder.RegisterService(service);
  builder.SetMaxReceiveMessageSize(16 << 20);
  // gRPC's own memory (transport buffers, call arenas) within a budget, a backstop: the intake
  // bound and the stream limit keep calls well under it. Over it gRPC reads more slowly (smaller
  // buffers and flow-control windows), drops new connections and, last, may cancel streams
  // (docs/performance.md#overload).
  grpc::ResourceQuota quota("admitd");
  quota.Resize(static_cast<size_t>(config.grpc_memory_limit));
  builder.SetResourceQuota(quota);
  // What bounds the calls gRPC holds before admitd sees them: a client's calls beyond this many
  // wait in the client, on its connection.
  if (config.max_concurrent_streams > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(config.max_concurrent_streams));
  }
  // Clients that keep long watches open (cluster shims) ping every 30 s to notice a dead
  // connection; accept pings that often even when no data flows.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors = ParseErrorInterceptors();
  // After the parse-error answer, so calls are counted with the status their client gets.
  auto calls = std::make_unique<RpcObserver>(&server->metrics_->registry(), server->tracer_.get());
  server->calls_ = calls.get();
  server->context_.calls = calls.get();
  interceptors.push_back(std::move(calls));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    server->store_->Close().IgnoreError();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  std::string host = config.listen.substr(0, config.listen.rfind(':'));
  server->address_ = absl::StrCat(host, ":", server->port_);
  server->SetServing(false);
  if (grpc::HealthCheckServiceInterface* health = server->grpc_server_->GetHealthCheckService()) {
    health->SetServingStatus(kLivenessService, true);
  }
  ADMITD_LOG(kInfo, "listening",
             {{"addr", server->address_},
              {"data_dir", config.data_dir},
              {"tls", security.metrics == nullptr    ? "off"
                      : config.client_ca_file.empty() ? "on"
                                                      : "mtls"}});

  // Before recovery, which can take a while: /healthz answers meanwhile, /readyz says 503.
  if (!config.metrics_listen.empty()) {
    HttpEndpointOptions metrics_options;
    metrics_options.tls = security.metrics;
    absl::StatusOr<std::unique_ptr<HttpEndpoint>> metrics = StartMetricsEndpoint(
        config.metrics_listen, server->metrics_.get(),
        [s = server.get()] { return s->Readiness(); }, metrics_options);
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
  multikueue::DispatcherOptions mk;
  mk.origin = config.multikueue_origin;
  mk.worker_lost_timeout = config.multikueue_worker_lost_timeout;
  mk.gc_interval = config.multikueue_gc_interval;
  mk.dispatcher_name = config.multikueue_dispatcher;
  mk.step_size = static_cast<int>(config.multikueue_step_size);
  mk.round_timeout = config.multikueue_round_timeout;
  mk.reconnect_backoff = config.multikueue_reconnect_backoff;
  mk.metrics = server->metrics_.get();
  server->dispatcher_ = std::make_unique<multikueue::Dispatcher>(server->sequencer_.get(),
                                                                 server->hub_.get(), mk);
  server->dispatcher_->Start();
  server->context_.ready.store(true, std::memory_order_release);
  server->SetServing(true);
  server->started_ = true;
  ADMITD_LOG(kInfo, "serving", {{"revision", absl::StrCat(server->engine_->revision())},
                                {"manual_scheduling", config.manual_scheduling ? "true" : "false"}});
  return server;
}

absl::Status AdmitdServer::Authorize(const grpc::ServerContextBase& rpc,
                                     const auth::Request& request) const {
  return CheckCall(access_.get(), rpc, request).status();
}

void AdmitdServer::RecordEvent(v1::Event event) {
  sequencer_->Enqueue(Command{
      .apply = [event = std::move(event)](engine::Engine& e, absl::Time now) {
        e.RecordAudit(event, now);
      },
      .respond = [](const absl::Status& commit) {
        if (!commit.ok()) {
          ADMITD_LOG(kWarning, "an audit event was not recorded", {{"error", commit.ToString()}});
        }
      }});
}

absl::Status AdmitdServer::Recover() {
  const absl::Time start = absl::Now();
  uint64_t objects = 0;
  ADMITD_RETURN_IF_ERROR(RestoreFromStore(*store_, engine_.get(), &objects));
  hub_->SetRevision(store_->revision());
  ADMITD_LOG(kInfo, "recovered",
             {{"objects", absl::StrCat(objects)},
              {"revision", absl::StrCat(store_->revision())},
              {"took", absl::FormatDuration(absl::Now() - start)}});
  return absl::OkStatus();
}

absl::Status AdmitdServer::Readiness() {
  if (context_.shutting_down.load(std::memory_order_acquire)) {
    return absl::UnavailableError("admitd is shutting down");
  }
  if (!context_.ready.load(std::memory_order_acquire)) return NotReady();
  return sequencer_->health();
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
    SetServing(false);
  }
  const absl::Time start = absl::Now();
  ADMITD_LOG(kInfo, "shutting down", {{"grace", absl::FormatDuration(grace)}});
  // From here on a new call is refused with UNAVAILABLE before it reaches the sequencer.
  context_.last_refused_ns.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  context_.shutting_down.store(true, std::memory_order_release);
  // The dispatcher writes through the sequencer: it stops first.
  if (dispatcher_) dispatcher_->Stop();
  hub_->Close();
  if (metrics_server_) metrics_server_->Stop();
  sequencer_->ReleaseWaiters();
  // Every command the sequencer accepted is applied, committed and answered with its result
  // while gRPC still runs: none is cancelled.
  sequencer_->Stop();
  // Then keep refusing until callers stop sending, so that no call arrives once gRPC closes.
  const absl::Time refuse_until = start + std::min(grace / 2, kMaxRefusingBeforeClose);
  while (absl::Now() < refuse_until) {
    const absl::Time last_refused =
        absl::FromUnixNanos(context_.last_refused_ns.load(std::memory_order_relaxed));
    if (absl::Now() - last_refused >= kQuietBeforeClose) break;
    absl::SleepFor(absl::Milliseconds(5));
  }
  // The answers are sent; gRPC waits (up to the grace) for them to reach their callers.
  grpc_server_->Shutdown(absl::ToChronoTime(start + grace));
  metrics_server_.reset();
  // The last spans (the calls just answered) go out, for up to 2 s.
  tracer_->Shutdown(absl::Seconds(2));
  if (absl::Status closed = store_->Close(); !closed.ok()) {
    ADMITD_LOG(kError, "closing the store failed", {{"error", closed.ToString()}});
  }
  ADMITD_LOG(kInfo, "stopped",
             {{"revision", absl::StrCat(engine_->revision())},
              {"took", absl::FormatDuration(absl::Now() - start)}});
}

void AdmitdServer::Wait() { grpc_server_->Wait(); }

AdmitdServer::~AdmitdServer() { Shutdown(absl::Seconds(1)); }

}  // namespace admitd
