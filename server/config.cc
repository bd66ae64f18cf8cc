#include "server/config.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "server/config_kueue.h"

namespace admitd {

const char* const kKnownFeatureGates[3] = {"ElasticJobsViaWorkloadSlices",
                                           "PodIntegrationFastQuotaRelease",
                                           "FastQuotaReleaseInPodIntegration"};

namespace {

constexpr char kAllAtOnce[] = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
constexpr char kIncremental[] = "kueue.x-k8s.io/multikueue-dispatcher-incremental";
// Every object must fit a page, and a page gRPC's receive limits (16 MiB here, 4 MiB by default
// in clients, which the default page of 3 MiB leaves room under).
constexpr int64_t kMaxMessage = 16 << 20;

absl::Status Bad(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// A manual clock's start, RFC 3339 (2026-01-02T15:04:05Z); it implies the manual clock.
settings::Parser ClockStart(Config* config) {
  return [config](const std::string& text) {
    absl::Time start;
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, text, &start, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid time \"", text, "\" (want RFC 3339, e.g. 2026-01-02T15:04:05Z)"));
    }
    config->manual_clock_start = start;
    config->manual_clock = true;
    return absl::OkStatus();
  };
}

// Name=true,Other=false (a YAML mapping reads the same); names admitd knows.
settings::Parser Gates(std::map<std::string, bool>* gates) {
  return [gates](const std::string& text) {
    std::map<std::string, bool> parsed;
    for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      bool value;
      if (kv.first.empty() || !absl::SimpleAtob(kv.second, &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid feature gate \"", item, "\" (want Name=true)"));
      }
      if (std::find(std::begin(kKnownFeatureGates), std::end(kKnownFeatureGates), kv.first) ==
          std::end(kKnownFeatureGates)) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown feature gate \"", kv.first,
                         "\" (known: ", absl::StrJoin(kKnownFeatureGates, ", "), ")"));
      }
      parsed[kv.first] = value;
    }
    for (const auto& [name, value] : parsed) (*gates)[name] = value;
    return absl::OkStatus();
  };
}

// Kueue's dispatcher names; all-at-once and incremental stand for them.
settings::Parser Dispatcher(std::string* out) {
  return [out](const std::string& name) {
    const std::string full = name == "all-at-once"   ? kAllAtOnce
                             : name == "incremental" ? kIncremental
                                                     : name;
    if (full != kAllAtOnce && full != kIncremental) {
      // Kueue's external dispatchers write nominations through the Workload API; admitd has no
      // call for that (yet).
      return absl::InvalidArgumentError(absl::StrCat("must be all-at-once or incremental (",
                                                     kAllAtOnce, " or ", kIncremental, "), not \"",
                                                     name, "\""));
    }
    *out = full;
    return absl::OkStatus();
  };
}

// "127.0.0.1:50051", "[::1]:9090" and "localhost:1" are loopback; "0.0.0.0:1", ":1" and any
// other host are not.
bool Loopback(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::Status CheckSecurity(const Config& config) {
  const bool tls = !config.tls_cert_file.empty() || !config.tls_key_file.empty();
  if (tls && (config.tls_cert_file.empty() || config.tls_key_file.empty())) {
    return Bad(config.tls_cert_file.empty() ? "--tls-cert-file" : "--tls-private-key-file",
               "TLS needs both a certificate and its private key");
  }
  if (!tls && !config.client_ca_file.empty()) {
    return Bad("--client-ca-file", "client certificates need TLS (--tls-cert-file)");
  }
  if (config.require_client_certificate && config.client_ca_file.empty()) {
    return Bad("--require-client-certificate", "needs --client-ca-file");
  }
  if (!tls && !config.authentication_config.empty()) {
    return Bad("--authentication-config",
               "bearer tokens are only taken over TLS (--tls-cert-file)");
  }
  if (!tls && !config.allow_insecure_listen) {
    for (const auto& [flag, address] :
         {std::pair<const char*, const std::string&>{"--listen", config.listen},
          {"--metrics-listen", config.metrics_listen}}) {
      if (!address.empty() && !Loopback(address)) {
        return Bad(flag, absl::StrCat(address,
                                      " is not a loopback address and TLS is off: set "
                                      "--tls-cert-file and --tls-private-key-file, or "
                                      "--allow-insecure-listen to serve plaintext"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

settings::Table ConfigTable(Config* c) {
  using namespace settings;  // NOLINT: the parsers read as a declaration
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  Table t("admitd");
  auto add = [&t](Setting s) { t.Add(std::move(s)); };
  add({.flag = "--config",
       .value = "FILE",
       .help = "a YAML file whose keys are the config keys below; flags win over it",
       .parse = [](const std::string&) { return absl::OkStatus(); }});
  add({.flag = "--listen",
       .key = "listen",
       .value = "HOST:PORT",
       .help = "the gRPC address",
       .default_text = "127.0.0.1:50051",
       .parse = NonEmpty(&c->listen)});
  add({.flag = "--data-dir",
       .key = "dataDir",
       .value = "DIR",
       .help = "where the RocksDB store is kept",
       .default_text = "data",
       .parse = NonEmpty(&c->data_dir)});
  add({.flag = "--log-level",
       .key = "logLevel",
       .value = "debug|info|warning|error",
       .help = "the least severe log lines written (logfmt, on stderr)",
       .default_text = "info",
       .parse = Checked(&c->log_level, log::IsLevel, "debug, info, warning or error")});
  add({.flag = "--metrics-listen",
       .key = "metricsListen",
       .value = "HOST:PORT",
       .help = "serve Prometheus metrics (GET /metrics), /healthz and /readyz here; unset: no "
               "HTTP endpoint",
       .parse = String(&c->metrics_listen)});
  add({.flag = "--otlp-endpoint",
       .key = "otlpEndpoint",
       .value = "HOST:PORT",
       .help = "export traces over OTLP/gRPC (plaintext) to this collector; unset: no traces",
       .parse = String(&c->otlp_endpoint)});
  add({.flag = "--trace-sample-ratio",
       .key = "traceSampleRatio",
       .value = "R",
       .help = "the share of root traces recorded, 0 to 1 (a sampled traceparent is always "
               "followed)",
       .default_text = "0.1",
       .parse = Double(&c->trace_sample_ratio, 0, 1)});
  add({.flag = "--trace-service-name",
       .key = "traceServiceName",
       .value = "NAME",
       .help = "service.name of the exported spans",
       .default_text = "admitd",
       .parse = String(&c->trace_service_name)});
  add({.flag = "--manual-scheduling",
       .key = "manualScheduling",
       .help = "run scheduling cycles only when RunSchedulingCycles asks (tests)",
       .switch_value = "true",
       .parse = Bool(&c->manual_scheduling)});
  add({.flag = "--manual-clock",
       .key = "manualClock",
       .help = "with --manual-scheduling: RunSchedulingCycles moves the server clock forward",
       .switch_value = "true",
       .parse = Bool(&c->manual_clock)});
  add({.flag = "--manual-clock-start",
       .key = "manualClockStart",
       .value = "RFC3339",
       .help = "the manual clock's start (implies --manual-clock); it stands still between "
               "advances",
       .parse = ClockStart(c)});
  add({.flag = "--feature-gates",
       .key = "featureGates",
       .value = "Name=true,...",
       .help = "ElasticJobsViaWorkloadSlices (on), PodIntegrationFastQuotaRelease (off; alias "
               "FastQuotaReleaseInPodIntegration); the key is a mapping of name to true/false",
       .parse = Gates(&c->feature_gates)});
  add({.flag = "--requeuing-backoff-base-seconds",
       .key = "requeuingBackoffBaseSeconds",
       .value = "N",
       .help = "the first requeue delay after an admission-check retry",
       .default_text = "60",
       .parse = Int(&c->backoff_base_seconds, 1, kUnbounded)});
  add({.flag = "--requeuing-backoff-max-seconds",
       .key = "requeuingBackoffMaxSeconds",
       .value = "N",
       .help = "the longest requeue delay",
       .default_text = "3600",
       .parse = Int(&c->backoff_max_seconds, 1, kUnbounded)});
  add({.flag = "--requeuing-backoff-limit-count",
       .key = "requeuingBackoffLimitCount",
       .value = "N",
       .help = "requeues before a workload is deactivated",
       .default_text = "unlimited",
       .parse = Int(&c->backoff_limit_count, 0, kUnbounded)});
  add({.flag = "--slice-history-limit",
       .key = "sliceHistoryLimit",
       .value = "N",
       .help = "finished workload slices kept per elastic job",
       .default_text = "5",
       .parse = Int(&c->slice_history_limit, 0, kUnbounded)});
  add({.flag = "--pod-group-max-roles",
       .key = "podGroupMaxRoles",
       .value = "N",
       .help = "distinct roles (pod templates) allowed in one pod group",
       .default_text = "18",
       .parse = Int(&c->pod_group_max_roles, 1, 18)});
  add({.flag = "--pod-unmanaged-namespaces",
       .key = "podUnmanagedNamespaces",
       .value = "NS,...",
       .help = "namespaces whose plain pods are never managed (the key is a list)",
       .default_text = "kube-system,admitd-system",
       .parse = List(&c->pod_unmanaged_namespaces)});
  add({.flag = "--event-retention",
       .key = "eventRetention",
       .value = "N",
       .help = "changes kept in the event log that Watch resumes from",
       .default_text = "100000",
       .parse = Uint(&c->event_retention, 1)});
  add({.flag = "--max-object-bytes",
       .key = "maxObjectBytes",
       .value = "N",
       .help = "the largest object accepted",
       .default_text = "1572864",
       .parse = Int(&c->max_object_bytes, 1024, kMaxMessage)});
  add({.flag = "--max-list-page-bytes",
       .key = "maxListPageBytes",
       .value = "N",
       .help = "the most bytes of objects in one List page (at least --max-object-bytes)",
       .default_text = "3145728",
       .parse = Int(&c->max_list_page_bytes, 1024, kMaxMessage)});
  add({.flag = "--watch-buffer-bytes",
       .key = "watchBufferBytes",
       .value = "N[Ki|Mi|Gi]",
       .help = "what one Watch stream may have waiting to be sent; a stream further behind ends "
               "with RESOURCE_EXHAUSTED",
       .default_text = "64Mi",
       .parse = Bytes(&c->watch_buffer_bytes, 1024)});
  add({.flag = "--max-pending-calls",
       .key = "maxPendingCalls",
       .value = "N",
       .help = "calls waiting for the sequencer; more are refused with RESOURCE_EXHAUSTED "
               "(0: no bound)",
       .default_text = "2048",
       .parse = Int(&c->max_pending_calls, 0, kUnbounded)});
  add({.flag = "--max-concurrent-streams",
       .key = "maxConcurrentStreams",
       .value = "N",
       .help = "calls one connection may have open at once (0: gRPC's default)",
       .default_text = "2048",
       .parse = Int(&c->max_concurrent_streams, 0, INT32_MAX)});
  add({.flag = "--grpc-memory-limit",
       .key = "grpcMemoryLimit",
       .value = "N[Ki|Mi|Gi]",
       .help = "gRPC's own memory quota (its transports and calls)",
       .default_text = "256Mi",
       .parse = Bytes(&c->grpc_memory_limit, uint64_t{16} << 20)});
  add({.flag = "--sync-delay",
       .key = "syncDelay",
       .value = "DURATION",
       .help = "a delay injected after every fsync (benchmarks)",
       .default_text = "0s",
       .parse = Duration(&c->sync_delay)});
  add({.flag = "--no-sync",
       .help = "do not fsync commits (an acknowledged write may be lost)",
       .switch_value = "true",
       .parse = NegatedBool(&c->sync)});
  add({.key = "sync",
       .help = "fsync every commit (false: as --no-sync)",
       .default_text = "true",
       .parse = Bool(&c->sync)});
  add({.flag = "--tls-cert-file",
       .key = "tlsCertFile",
       .value = "FILE",
       .help = "TLS on the gRPC and metrics ports: the certificate (with --tls-private-key-file; "
               "re-read when it changes)",
       .parse = String(&c->tls_cert_file)});
  add({.flag = "--tls-private-key-file",
       .key = "tlsPrivateKeyFile",
       .value = "FILE",
       .help = "the certificate's private key",
       .parse = String(&c->tls_key_file)});
  add({.flag = "--client-ca-file",
       .key = "clientCAFile",
       .value = "FILE",
       .help = "verify client certificates against this CA bundle (mTLS)",
       .parse = String(&c->client_ca_file)});
  add({.flag = "--require-client-certificate",
       .key = "requireClientCertificate",
       .help = "refuse a TLS handshake without a client certificate",
       .switch_value = "true",
       .parse = Bool(&c->require_client_certificate)});
  add({.flag = "--tls-refresh-interval",
       .key = "tlsRefreshInterval",
       .value = "DURATION",
       .help = "how often the TLS files are checked for changes",
       .default_text = "10s",
       .parse = Duration(&c->tls_refresh_interval, absl::Seconds(1))});
  add({.flag = "--authentication-config",
       .key = "authenticationConfig",
       .value = "FILE",
       .help = "bearer tokens: service-account and OIDC issuers (needs TLS)",
       .parse = String(&c->authentication_config)});
  add({.flag = "--authorization-policy",
       .key = "authorizationPolicy",
       .value = "FILE",
       .help = "roles and bindings; unset: every caller may do everything",
       .parse = String(&c->authorization_policy)});
  add({.flag = "--allow-insecure-listen",
       .key = "allowInsecureListen",
       .help = "serve plaintext on an address other than loopback",
       .switch_value = "true",
       .parse = Bool(&c->allow_insecure_listen)});
  add({.flag = "--multikueue-origin",
       .key = "multiKueue.origin",
       .value = "VALUE",
       .help = "the origin label value of the copies this manager makes",
       .default_text = "multikueue",
       .parse = NonEmpty(&c->multikueue_origin)});
  add({.flag = "--multikueue-worker-lost-timeout",
       .key = "multiKueue.workerLostTimeout",
       .value = "DURATION",
       .help = "how long a workload admitted by an unreachable worker keeps its admission",
       .default_text = "15m",
       .parse = Duration(&c->multikueue_worker_lost_timeout)});
  add({.flag = "--multikueue-gc-interval",
       .key = "multiKueue.gcInterval",
       .value = "DURATION",
       .help = "how often orphaned copies are collected (0: never)",
       .default_text = "1m",
       .parse = Duration(&c->multikueue_gc_interval)});
  add({.flag = "--multikueue-dispatcher",
       .key = "multiKueue.dispatcherName",
       .value = "NAME",
       .help = "all-at-once or incremental (or Kueue's full names)",
       .default_text = "all-at-once",
       .parse = Dispatcher(&c->multikueue_dispatcher)});
  add({.flag = "--multikueue-step-size",
       .key = "multiKueue.incrementalDispatcherConfig.stepSize",
       .value = "N",
       .help = "workers the incremental dispatcher adds per round",
       .default_text = "3",
       .parse = Int(&c->multikueue_step_size, 1, kUnbounded)});
  add({.flag = "--multikueue-round-timeout",
       .key = "multiKueue.roundTimeout",
       .value = "DURATION",
       .help = "how long an incremental round waits before the next",
       .default_text = "5m",
       .parse = Duration(&c->multikueue_round_timeout, absl::Seconds(1))});
  add({.flag = "--multikueue-reconnect-backoff",
       .key = "multiKueue.reconnectBackoff",
       .value = "DURATION",
       .help = "the first delay before reconnecting to a lost worker",
       .default_text = "5s",
       .parse = Duration(&c->multikueue_reconnect_backoff, absl::Milliseconds(10))});
  add({.flag = "--ha-etcd-endpoints",
       .key = "ha.etcdEndpoints",
       .value = "HOST:PORT,...",
       .help = "run as one replica of an HA group whose log and leader election are in this "
               "etcd cluster (docs/high-availability.md); unset: alone, without etcd",
       .parse = List(&c->ha_etcd_endpoints)});
  add({.flag = "--ha-domain",
       .key = "ha.domain",
       .value = "NAME",
       .help = "the admission domain: its replicas elect one leader and share one log",
       .default_text = "default",
       .parse = NonEmpty(&c->ha_domain)});
  add({.flag = "--ha-id",
       .key = "ha.id",
       .value = "NAME",
       .help = "this replica's name in the domain",
       .default_text = "the host name",
       .parse = NonEmpty(&c->ha_id)});
  add({.flag = "--ha-advertise-address",
       .key = "ha.advertiseAddress",
       .value = "HOST:PORT",
       .help = "where the other replicas send clients while this one leads",
       .default_text = "--listen",
       .parse = NonEmpty(&c->ha_advertise_address)});
  add({.flag = "--ha-lease-ttl",
       .key = "ha.leaseTTL",
       .value = "DURATION",
       .help = "the leader's lease in etcd: a leader that cannot renew it for this long is "
               "replaced",
       .default_text = "5s",
       .parse = Duration(&c->ha_lease_ttl, absl::Seconds(1))});
  add({.flag = "--ha-log-trim-interval",
       .key = "ha.logTrimInterval",
       .value = "DURATION",
       .help = "how often the leader deletes from etcd the part of the replicated log every live "
               "replica has applied, and compacts etcd's history",
       .default_text = "10s",
       .parse = Duration(&c->ha_log_trim_interval, absl::Milliseconds(100))});
  add({.flag = "--ha-commits-in-flight",
       .key = "ha.commitsInFlight",
       .value = "N",
       .help = "batches the leader has on their way to etcd at once: etcd commits concurrent "
               "requests together, so more of them raise throughput (each answered in order)",
       .default_text = "8",
       .parse = Int(&c->ha_commits_in_flight, 1, 64)});
  add({.flag = "--ha-etcd-ca-file",
       .key = "ha.etcdCAFile",
       .value = "FILE",
       .help = "TLS to etcd: the CA bundle etcd's certificate must chain to (reloaded on change)",
       .parse = String(&c->ha_etcd_ca_file)});
  add({.flag = "--ha-etcd-cert-file",
       .key = "ha.etcdCertFile",
       .value = "FILE",
       .help = "TLS to etcd: this replica's client certificate, for an etcd with "
               "--client-cert-auth (reloaded on change)",
       .parse = String(&c->ha_etcd_cert_file)});
  add({.flag = "--ha-etcd-key-file",
       .key = "ha.etcdKeyFile",
       .value = "FILE",
       .help = "TLS to etcd: the client certificate's key",
       .parse = String(&c->ha_etcd_key_file)});
  AddKueueSections(&t, c);
  return t;
}

std::string Usage() {
  Config scratch;
  return absl::StrCat(
      "usage: admitd [flags]\n\n"
      "Admission as a service: Kueue's admission decisions over gRPC, with the state in an\n"
      "embedded RocksDB. Every flag but --config and --no-sync is also a key of the config "
      "file.\n\n",
      ConfigTable(&scratch).FlagHelp());
}

absl::Status LoadConfigFile(const std::string& path, Config* config) {
  return ConfigTable(config).LoadYamlFile(path);
}

absl::StatusOr<Config> ParseConfig(const std::vector<std::string>& args, bool* help) {
  Config config;
  *help = false;
  const settings::Table table = ConfigTable(&config);
  absl::StatusOr<settings::CommandLine> line = table.Scan(args);
  if (!line.ok()) return line.status();
  if (line->help) {
    *help = true;
    return config;
  }
  // The config file is read first so that flags override it wherever they appear.
  if (const std::string* file = line->Last("--config"); file != nullptr) {
    if (absl::Status s = table.LoadYamlFile(*file); !s.ok()) return s;
  }
  if (absl::Status s = table.Apply(*line); !s.ok()) return s;
  if (config.max_list_page_bytes < config.max_object_bytes) {
    return Bad("--max-list-page-bytes",
               absl::StrCat("must be between --max-object-bytes (", config.max_object_bytes,
                            ") and ", kMaxMessage));
  }
  if (auto s = CheckSecurity(config); !s.ok()) return s;
  if (auto s = ResolveKueueSections(&config); !s.ok()) return s;
  if (!config.ha_etcd_endpoints.empty() && (config.manual_scheduling || config.manual_clock)) {
    return Bad("--ha-etcd-endpoints", "is not valid with --manual-scheduling or --manual-clock");
  }
  if (config.ha_etcd_endpoints.empty()) {
    for (const auto& [flag, value] : {std::pair{"--ha-etcd-ca-file", &config.ha_etcd_ca_file},
                                      std::pair{"--ha-etcd-cert-file", &config.ha_etcd_cert_file},
                                      std::pair{"--ha-etcd-key-file", &config.ha_etcd_key_file}}) {
      if (!value->empty()) return Bad(flag, "is only valid with --ha-etcd-endpoints");
    }
  }
  if (config.ha_etcd_cert_file.empty() != config.ha_etcd_key_file.empty()) {
    return Bad("--ha-etcd-cert-file", "and --ha-etcd-key-file are given together or not at all");
  }
  if (config.manual_clock && !config.manual_scheduling) {
    return Bad(config.manual_clock_start ? "--manual-clock-start" : "--manual-clock",
               "is only valid with --manual-scheduling");
  }
  return config;
}

}  // namespace admitd
