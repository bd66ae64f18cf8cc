#include "server/config.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace admitd {

const char kUsage[] =
    "usage: admitd [--listen HOST:PORT] [--data-dir DIR] [--config FILE]\n"
    "              [--metrics-listen HOST:PORT]\n"
    "              [--otlp-endpoint HOST:PORT] [--trace-sample-ratio R] [--trace-service-name S]\n"
    "              [--manual-scheduling] [--manual-clock] [--manual-clock-start RFC3339]\n"
    "              [--log-level debug|info|warning|error]\n"
    "              [--requeuing-backoff-base-seconds N] [--requeuing-backoff-max-seconds N]\n"
    "              [--requeuing-backoff-limit-count N] [--slice-history-limit N]\n"
    "              [--pod-group-max-roles N] [--pod-unmanaged-namespaces NS,NS]\n"
    "              [--event-retention N] [--watch-buffer-bytes N[Ki|Mi|Gi]]\n"
    "              [--max-pending-calls N] [--grpc-memory-limit N[Ki|Mi|Gi]]\n"
    "              [--max-concurrent-streams N]\n"
    "              [--sync-delay DURATION] [--no-sync]\n"
    "              [--max-object-bytes N] [--max-list-page-bytes N]\n"
    "              [--feature-gates Name=true,Other=false]\n"
    "              [--tls-cert-file FILE --tls-private-key-file FILE] [--client-ca-file FILE]\n"
    "              [--require-client-certificate] [--tls-refresh-interval DURATION]\n"
    "              [--authentication-config FILE] [--authorization-policy FILE]\n"
    "              [--allow-insecure-listen]\n"
    "              [--multikueue-origin VALUE] [--multikueue-worker-lost-timeout DURATION]\n"
    "              [--multikueue-gc-interval DURATION] [--multikueue-dispatcher NAME]\n"
    "              [--multikueue-step-size N] [--multikueue-round-timeout DURATION]\n"
    "              [--multikueue-reconnect-backoff DURATION]\n";

namespace {

absl::Status Bad(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

absl::Status ParseDurationValue(absl::string_view where, absl::string_view text,
                                absl::Duration* out) {
  if (!absl::ParseDuration(text, out) || *out < absl::ZeroDuration()) {
    return Bad(where, absl::StrCat("invalid duration \"", text, "\" (want e.g. 2ms, 1s)"));
  }
  return absl::OkStatus();
}

// A manual clock's start, RFC 3339 (2026-01-02T15:04:05Z); it implies the manual clock.
absl::Status ParseClockStart(absl::string_view where, const std::string& text, Config* config) {
  absl::Time start;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &start, &error)) {
    return Bad(where, absl::StrCat("invalid time \"", text,
                                   "\" (want RFC 3339, e.g. 2026-01-02T15:04:05Z)"));
  }
  config->manual_clock_start = start;
  config->manual_clock = true;
  return absl::OkStatus();
}

absl::Status ParseGates(absl::string_view where, absl::string_view text,
                        std::map<std::string, bool>* gates) {
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    bool value;
    if (kv.first.empty() || !absl::SimpleAtob(kv.second, &value)) {
      return Bad(where, absl::StrCat("invalid feature gate \"", item, "\" (want Name=true)"));
    }
    (*gates)[kv.first] = value;
  }
  return absl::OkStatus();
}

// A byte count: digits with an optional Ki, Mi or Gi suffix; at least 1 KiB.
absl::Status ParseBytes(absl::string_view where, absl::string_view text, uint64_t* out) {
  uint64_t unit = 1;
  for (const auto& [suffix, scale] :
       {std::pair<absl::string_view, uint64_t>{"Ki", uint64_t{1} << 10},
        {"Mi", uint64_t{1} << 20},
        {"Gi", uint64_t{1} << 30}}) {
    if (absl::ConsumeSuffix(&text, suffix)) {
      unit = scale;
      break;
    }
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n == 0 || n > (uint64_t{1} << 50) / unit || n * unit < 1024) {
    return Bad(where, absl::StrCat("invalid size \"", text,
                                   "\" (want bytes, at least 1024, e.g. 67108864 or 64Mi)"));
  }
  *out = n * unit;
  return absl::OkStatus();
}

absl::Status CheckLevel(absl::string_view where, const std::string& level) {
  log::Level parsed;
  if (!log::ParseLevel(level, &parsed)) {
    return Bad(where, absl::StrCat("unknown log level \"", level,
                                   "\" (want debug, info, warning or error)"));
  }
  return absl::OkStatus();
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
  if (!(config.trace_sample_ratio >= 0 && config.trace_sample_ratio <= 1)) {
    return Bad("--trace-sample-ratio", "must be between 0 and 1");
  }
  if (config.tls_refresh_interval < absl::Seconds(1)) {
    return Bad("--tls-refresh-interval", "must be at least 1s");
  }
  if (!tls && !config.allow_insecure_listen) {
    for (const auto& [flag, address] : {std::pair<const char*, const std::string&>{
                                            "--listen", config.listen},
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

absl::Status LoadConfigFile(const std::string& path, Config* config) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  if (root.IsNull()) return absl::OkStatus();
  if (!root.IsMap()) return Bad(path, "the config file must be a YAML mapping");
  for (const auto& entry : root) {
    std::string key = entry.first.as<std::string>();
    std::string where = absl::StrCat(path, ": ", key);
    const YAML::Node& value = entry.second;
    try {
      if (key == "listen") {
        config->listen = value.as<std::string>();
      } else if (key == "metricsListen") {
        config->metrics_listen = value.as<std::string>();
      } else if (key == "otlpEndpoint") {
        config->otlp_endpoint = value.as<std::string>();
      } else if (key == "traceSampleRatio") {
        config->trace_sample_ratio = value.as<double>();
      } else if (key == "traceServiceName") {
        config->trace_service_name = value.as<std::string>();
      } else if (key == "dataDir") {
        config->data_dir = value.as<std::string>();
      } else if (key == "manualScheduling") {
        config->manual_scheduling = value.as<bool>();
      } else if (key == "manualClock") {
        config->manual_clock = value.as<bool>();
      } else if (key == "manualClockStart") {
        if (auto s = ParseClockStart(where, value.as<std::string>(), config); !s.ok()) return s;
      } else if (key == "requeuingBackoffBaseSeconds") {
        config->backoff_base_seconds = value.as<int64_t>();
        if (config->backoff_base_seconds < 1) return Bad(where, "must be at least 1");
      } else if (key == "requeuingBackoffMaxSeconds") {
        config->backoff_max_seconds = value.as<int64_t>();
        if (config->backoff_max_seconds < 1) return Bad(where, "must be at least 1");
      } else if (key == "requeuingBackoffLimitCount") {
        config->backoff_limit_count = value.as<int64_t>();
        if (config->backoff_limit_count < 0) return Bad(where, "must not be negative");
      } else if (key == "podUnmanagedNamespaces") {
        if (!value.IsSequence()) return Bad(where, "must be a list of namespace names");
        config->pod_unmanaged_namespaces.clear();
        for (const auto& ns : value) config->pod_unmanaged_namespaces.push_back(ns.as<std::string>());
      } else if (key == "podGroupMaxRoles") {
        config->pod_group_max_roles = value.as<int64_t>();
        if (config->pod_group_max_roles < 1 || config->pod_group_max_roles > 18) {
          return Bad(where, "must be between 1 and 18");
        }
      } else if (key == "maxObjectBytes") {
        config->max_object_bytes = value.as<int64_t>();
      } else if (key == "maxListPageBytes") {
        config->max_list_page_bytes = value.as<int64_t>();
      } else if (key == "sliceHistoryLimit") {
        config->slice_history_limit = value.as<int64_t>();
        if (config->slice_history_limit < 0) return Bad(where, "must not be negative");
      } else if (key == "logLevel") {
        config->log_level = value.as<std::string>();
        if (auto s = CheckLevel(where, config->log_level); !s.ok()) return s;
      } else if (key == "eventRetention") {
        int64_t n = value.as<int64_t>();
        if (n < 1) return Bad(where, "must be at least 1");
        config->event_retention = static_cast<uint64_t>(n);
      } else if (key == "watchBufferBytes") {
        if (auto s = ParseBytes(where, value.as<std::string>(), &config->watch_buffer_bytes);
            !s.ok()) {
          return s;
        }
      } else if (key == "maxPendingCalls") {
        config->max_pending_calls = value.as<int64_t>();
        if (config->max_pending_calls < 0) return Bad(where, "must not be negative");
      } else if (key == "maxConcurrentStreams") {
        config->max_concurrent_streams = value.as<int64_t>();
        if (config->max_concurrent_streams < 0 || config->max_concurrent_streams > INT32_MAX) {
          return Bad(where, "must be between 0 and 2147483647");
        }
      } else if (key == "grpcMemoryLimit") {
        if (auto s = ParseBytes(where, value.as<std::string>(), &config->grpc_memory_limit);
            !s.ok()) {
          return s;
        }
      } else if (key == "syncDelay") {
        if (auto s = ParseDurationValue(where, value.as<std::string>(), &config->sync_delay);
            !s.ok()) {
          return s;
        }
      } else if (key == "sync") {
        config->sync = value.as<bool>();
      } else if (key == "tlsCertFile") {
        config->tls_cert_file = value.as<std::string>();
      } else if (key == "tlsPrivateKeyFile") {
        config->tls_key_file = value.as<std::string>();
      } else if (key == "clientCAFile") {
        config->client_ca_file = value.as<std::string>();
      } else if (key == "requireClientCertificate") {
        config->require_client_certificate = value.as<bool>();
      } else if (key == "tlsRefreshInterval") {
        if (auto s = ParseDurationValue(where, value.as<std::string>(),
                                        &config->tls_refresh_interval);
            !s.ok()) {
          return s;
        }
      } else if (key == "authenticationConfig") {
        config->authentication_config = value.as<std::string>();
      } else if (key == "authorizationPolicy") {
        config->authorization_policy = value.as<std::string>();
      } else if (key == "allowInsecureListen") {
        config->allow_insecure_listen = value.as<bool>();
      } else if (key == "multiKueue") {
        if (!value.IsMap()) return Bad(where, "must be a mapping");
        for (const auto& mk : value) {
          const std::string k = mk.first.as<std::string>();
          const std::string w = absl::StrCat(where, ".", k);
          absl::Status s;
          if (k == "origin") {
            config->multikueue_origin = mk.second.as<std::string>();
          } else if (k == "workerLostTimeout") {
            s = ParseDurationValue(w, mk.second.as<std::string>(),
                                   &config->multikueue_worker_lost_timeout);
          } else if (k == "gcInterval") {
            s = ParseDurationValue(w, mk.second.as<std::string>(), &config->multikueue_gc_interval);
          } else if (k == "dispatcherName") {
            config->multikueue_dispatcher = mk.second.as<std::string>();
          } else if (k == "incrementalDispatcherConfig") {
            config->multikueue_step_size = mk.second["stepSize"].as<int64_t>();
          } else if (k == "roundTimeout") {
            s = ParseDurationValue(w, mk.second.as<std::string>(),
                                   &config->multikueue_round_timeout);
          } else if (k == "reconnectBackoff") {
            s = ParseDurationValue(w, mk.second.as<std::string>(),
                                   &config->multikueue_reconnect_backoff);
          } else {
            return Bad(w, "unknown key (known: origin, workerLostTimeout, gcInterval, "
                          "dispatcherName, incrementalDispatcherConfig, roundTimeout, "
                          "reconnectBackoff)");
          }
          if (!s.ok()) return s;
        }
      } else if (key == "featureGates") {
        if (!value.IsMap()) return Bad(where, "must be a mapping of gate name to true/false");
        for (const auto& gate : value) {
          config->feature_gates[gate.first.as<std::string>()] = gate.second.as<bool>();
        }
      } else {
        return Bad(
            where,
            "unknown key (known: listen, metricsListen, otlpEndpoint, traceSampleRatio, "
            "traceServiceName, dataDir, manualScheduling, manualClock, "
            "sliceHistoryLimit, podGroupMaxRoles, podUnmanagedNamespaces, maxObjectBytes, "
            "maxListPageBytes, "
            "requeuingBackoffBaseSeconds, requeuingBackoffMaxSeconds, "
            "requeuingBackoffLimitCount, logLevel, eventRetention, watchBufferBytes, "
            "maxPendingCalls, grpcMemoryLimit, maxConcurrentStreams, syncDelay, "
            "sync, featureGates, tlsCertFile, tlsPrivateKeyFile, clientCAFile, "
            "requireClientCertificate, tlsRefreshInterval, authenticationConfig, "
            "authorizationPolicy, allowInsecureListen, multiKueue)");
      }
    } catch (const YAML::Exception& e) {
      return Bad(where, absl::StrCat("invalid value: ", e.what()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> ParseConfig(const std::vector<std::string>& args, bool* help) {
  Config config;
  *help = false;
  // The config file is read first so that flags override it wherever they appear.
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--config") {
      if (auto s = LoadConfigFile(args[i + 1], &config); !s.ok()) return s;
    } else if (absl::StartsWith(args[i], "--config=")) {
      if (auto s = LoadConfigFile(args[i].substr(9), &config); !s.ok()) return s;
    }
  }
  if (!args.empty() && absl::StartsWith(args.back(), "--config=")) {
    if (auto s = LoadConfigFile(args.back().substr(9), &config); !s.ok()) return s;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_inline = false;
    if (size_t eq = flag.find('='); absl::StartsWith(flag, "--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    auto next = [&](std::string* out) -> absl::Status {
      if (has_inline) {
        *out = value;
        return absl::OkStatus();
      }
      if (i + 1 >= args.size()) return Bad(flag, "needs a value");
      *out = args[++i];
      return absl::OkStatus();
    };
    std::string v;
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return config;
    } else if (flag == "--config") {
      if (auto s = next(&v); !s.ok()) return s;  // already loaded above
    } else if (flag == "--listen") {
      if (auto s = next(&config.listen); !s.ok()) return s;
    } else if (flag == "--metrics-listen") {
      if (auto s = next(&config.metrics_listen); !s.ok()) return s;
    } else if (flag == "--otlp-endpoint") {
      if (auto s = next(&config.otlp_endpoint); !s.ok()) return s;
    } else if (flag == "--trace-service-name") {
      if (auto s = next(&config.trace_service_name); !s.ok()) return s;
    } else if (flag == "--trace-sample-ratio") {
      if (auto s = next(&v); !s.ok()) return s;
      if (!absl::SimpleAtod(v, &config.trace_sample_ratio)) {
        return Bad(flag, absl::StrCat("\"", v, "\" is not a number"));
      }
    } else if (flag == "--data-dir") {
      if (auto s = next(&config.data_dir); !s.ok()) return s;
    } else if (flag == "--manual-scheduling") {
      config.manual_scheduling = !has_inline || value == "true";
    } else if (flag == "--manual-clock") {
      config.manual_clock = !has_inline || value == "true";
    } else if (flag == "--manual-clock-start") {
      if (auto s = next(&v); !s.ok()) return s;
      if (auto s = ParseClockStart(flag, v, &config); !s.ok()) return s;
    } else if (flag == "--requeuing-backoff-base-seconds" ||
               flag == "--requeuing-backoff-max-seconds" ||
               flag == "--requeuing-backoff-limit-count") {
      if (auto s = next(&v); !s.ok()) return s;
      int64_t n;
      const bool limit = flag == "--requeuing-backoff-limit-count";
      if (!absl::SimpleAtoi(v, &n) || n < (limit ? 0 : 1)) {
        return Bad(flag, limit ? "must be a non-negative integer" : "must be a positive integer");
      }
      (flag == "--requeuing-backoff-base-seconds"  ? config.backoff_base_seconds
       : flag == "--requeuing-backoff-max-seconds" ? config.backoff_max_seconds
                                                   : config.backoff_limit_count) = n;
    } else if (flag == "--pod-unmanaged-namespaces") {
      if (auto s = next(&v); !s.ok()) return s;
      config.pod_unmanaged_namespaces = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else if (flag == "--pod-group-max-roles") {
      if (auto s = next(&v); !s.ok()) return s;
      int64_t n;
      if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 18) return Bad(flag, "must be between 1 and 18");
      config.pod_group_max_roles = n;
    } else if (flag == "--slice-history-limit") {
      if (auto s = next(&v); !s.ok()) return s;
      int64_t n;
      if (!absl::SimpleAtoi(v, &n) || n < 0) return Bad(flag, "must be a non-negative integer");
      config.slice_history_limit = n;
    } else if (flag == "--max-object-bytes" || flag == "--max-list-page-bytes") {
      if (auto s = next(&v); !s.ok()) return s;
      int64_t n;
      if (!absl::SimpleAtoi(v, &n)) return Bad(flag, "must be a number of bytes");
      (flag == "--max-object-bytes" ? config.max_object_bytes : config.max_list_page_bytes) = n;
    } else if (flag == "--no-sync") {
      config.sync = false;
    } else if (flag == "--log-level") {
      if (auto s = next(&config.log_level); !s.ok()) return s;
      if (auto s = CheckLevel(flag, config.log_level); !s.ok()) return s;
    } else if (flag == "--event-retention") {
      if (auto s = next(&v); !s.ok()) return s;
      uint64_t n;
      if (!absl::SimpleAtoi(v, &n) || n < 1) return Bad(flag, "must be a positive integer");
      config.event_retention = n;
    } else if (flag == "--watch-buffer-bytes") {
      if (auto s = next(&v); !s.ok()) return s;
      if (auto s = ParseBytes(flag, v, &config.watch_buffer_bytes); !s.ok()) return s;
    } else if (flag == "--max-pending-calls") {
      if (auto s = next(&v); !s.ok()) return s;
      if (!absl::SimpleAtoi(v, &config.max_pending_calls) || config.max_pending_calls < 0) {
        return Bad(flag, "must be a non-negative integer (0: no bound)");
      }
    } else if (flag == "--max-concurrent-streams") {
      if (auto s = next(&v); !s.ok()) return s;
      if (!absl::SimpleAtoi(v, &config.max_concurrent_streams) ||
          config.max_concurrent_streams < 0 || config.max_concurrent_streams > INT32_MAX) {
        return Bad(flag, "must be an integer between 0 and 2147483647 (0: gRPC's default)");
      }
    } else if (flag == "--grpc-memory-limit") {
      if (auto s = next(&v); !s.ok()) return s;
      if (auto s = ParseBytes(flag, v, &config.grpc_memory_limit); !s.ok()) return s;
    } else if (flag == "--sync-delay") {
      if (auto s = next(&v); !s.ok()) return s;
      if (auto s = ParseDurationValue(flag, v, &config.sync_delay); !s.ok()) return s;
    } else if (flag == "--tls-cert-file") {
      if (auto s = next(&config.tls_cert_file); !s.ok()) return s;
    } else if (flag == "--tls-private-key-file") {
      if (auto s = next(&config.tls_key_file); !s.ok()) return s;
    } else if (flag == "--client-ca-file") {
      if (auto s = next(&config.client_ca_file); !s.ok()) return s;
    } else if (flag == "--require-client-certificate") {
      config.require_client_certificate = !has_inline || value == "true";
    } else if (flag == "--tls-refresh-interval") {
      if (auto s = next(&v); !s.ok()) return s;
      if (auto s = ParseDurationValue(flag, v, &config.tls_refresh_interval); !s.ok()) return s;
    } else if (flag == "--authentication-config") {
      if (auto s = next(&config.authentication_config); !s.ok()) return s;
    } else if (flag == "--authorization-policy") {
      if (auto s = next(&config.authorization_policy); !s.ok()) return s;
    } else if (flag == "--allow-insecure-listen") {
      config.allow_insecure_listen = !has_inline || value == "true";
    } else if (flag == "--multikueue-origin") {
      if (auto s = next(&config.multikueue_origin); !s.ok()) return s;
    } else if (flag == "--multikueue-dispatcher") {
      if (auto s = next(&v); !s.ok()) return s;
      config.multikueue_dispatcher =
          v == "all-at-once"   ? "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
          : v == "incremental" ? "kueue.x-k8s.io/multikueue-dispatcher-incremental"
                               : v;
    } else if (flag == "--multikueue-step-size") {
      if (auto s = next(&v); !s.ok()) return s;
      if (!absl::SimpleAtoi(v, &config.multikueue_step_size)) {
        return Bad(flag, "must be a positive integer");
      }
    } else if (flag == "--multikueue-worker-lost-timeout" || flag == "--multikueue-gc-interval" ||
               flag == "--multikueue-round-timeout" || flag == "--multikueue-reconnect-backoff") {
      if (auto s = next(&v); !s.ok()) return s;
      absl::Duration* d = flag == "--multikueue-worker-lost-timeout"
                              ? &config.multikueue_worker_lost_timeout
                          : flag == "--multikueue-gc-interval" ? &config.multikueue_gc_interval
                          : flag == "--multikueue-round-timeout"
                              ? &config.multikueue_round_timeout
                              : &config.multikueue_reconnect_backoff;
      if (auto s = ParseDurationValue(flag, v, d); !s.ok()) return s;
    } else if (flag == "--feature-gates") {
      if (auto s = next(&v); !s.ok()) return s;
      if (auto s = ParseGates(flag, v, &config.feature_gates); !s.ok()) return s;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", args[i], "\n", kUsage));
    }
  }
  if (config.listen.empty()) return Bad("--listen", "must not be empty");
  if (config.data_dir.empty()) return Bad("--data-dir", "must not be empty");
  // Every object must fit a page, and a page gRPC's receive limits (16 MiB here, 4 MiB by default
  // in clients, which the default page of 3 MiB leaves room under).
  constexpr int64_t kMaxMessage = 16 << 20;
  if (config.max_object_bytes < 1024 || config.max_object_bytes > kMaxMessage) {
    return Bad("--max-object-bytes", absl::StrCat("must be between 1024 and ", kMaxMessage));
  }
  if (config.max_list_page_bytes < config.max_object_bytes ||
      config.max_list_page_bytes > kMaxMessage) {
    return Bad("--max-list-page-bytes",
               absl::StrCat("must be between --max-object-bytes (", config.max_object_bytes,
                            ") and ", kMaxMessage));
  }
  if (auto s = CheckSecurity(config); !s.ok()) return s;
  // Below this gRPC's memory quota would be under pressure with a handful of connections.
  if (config.grpc_memory_limit < (uint64_t{16} << 20)) {
    return Bad("--grpc-memory-limit", "must be at least 16Mi");
  }
  if (config.multikueue_worker_lost_timeout < absl::ZeroDuration()) {
    return Bad("--multikueue-worker-lost-timeout", "must not be negative");
  }
  if (config.multikueue_gc_interval < absl::ZeroDuration()) {
    return Bad("--multikueue-gc-interval", "must not be negative");
  }
  if (config.multikueue_step_size < 1) return Bad("--multikueue-step-size", "must be at least 1");
  if (config.multikueue_dispatcher != "kueue.x-k8s.io/multikueue-dispatcher-all-at-once" &&
      config.multikueue_dispatcher != "kueue.x-k8s.io/multikueue-dispatcher-incremental") {
    // Kueue's external dispatchers write nominations through the Workload API; admitd has no
    // call for that (yet).
    return Bad("--multikueue-dispatcher",
               "must be all-at-once or incremental (kueue.x-k8s.io/multikueue-dispatcher-...)");
  }
  if (config.multikueue_reconnect_backoff < absl::Milliseconds(10) ||
      config.multikueue_round_timeout < absl::Seconds(1)) {
    return Bad("--multikueue-reconnect-backoff",
               "the reconnect backoff must be at least 10ms and the round timeout at least 1s");
  }
  if (config.manual_clock && !config.manual_scheduling) {
    return Bad(config.manual_clock_start ? "--manual-clock-start" : "--manual-clock",
               "is only valid with --manual-scheduling");
  }
  return config;
}

}  // namespace admitd
