#include "server/config.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd {
namespace {

using ::testing::HasSubstr;

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigTest, DefaultsWithoutFlags) {
  bool help = true;
  absl::StatusOr<Config> config = ParseConfig({}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(help);
  EXPECT_EQ(config->listen, "127.0.0.1:50051");
  EXPECT_EQ(config->data_dir, "data");
  EXPECT_FALSE(config->manual_scheduling);
  EXPECT_TRUE(config->sync);
}

TEST(ConfigTest, WatchBufferBytes) {
  bool help;
  absl::StatusOr<Config> config = ParseConfig({}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->watch_buffer_bytes, uint64_t{64} << 20);
  config = ParseConfig({"--watch-buffer-bytes", "8Mi"}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->watch_buffer_bytes, uint64_t{8} << 20);
  config = ParseConfig({"--watch-buffer-bytes=4096"}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->watch_buffer_bytes, 4096u);
  for (const char* bad : {"0", "12", "1Ti", "-1Mi", "lots"}) {
    config = ParseConfig({"--watch-buffer-bytes", bad}, &help);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  std::string path = WriteFile("watch.yaml", "watchBufferBytes: 1Gi\n");
  config = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->watch_buffer_bytes, uint64_t{1} << 30);
}

TEST(ConfigTest, OverloadBounds) {
  bool help;
  absl::StatusOr<Config> config = ParseConfig({}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_pending_calls, 2048);
  EXPECT_EQ(config->max_concurrent_streams, 2048);
  EXPECT_EQ(config->grpc_memory_limit, uint64_t{256} << 20);
  config = ParseConfig({"--max-pending-calls", "100", "--grpc-memory-limit=64Mi",
                        "--max-concurrent-streams", "300"},
                       &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_pending_calls, 100);
  EXPECT_EQ(config->max_concurrent_streams, 300);
  EXPECT_EQ(config->grpc_memory_limit, uint64_t{64} << 20);
  config = ParseConfig({"--max-pending-calls=0"}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_pending_calls, 0);  // no bound
  for (const char* bad : {"-1", "many", ""}) {
    config = ParseConfig({"--max-pending-calls", bad}, &help);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const char* bad : {"0", "1Mi", "15Mi", "lots"}) {
    config = ParseConfig({"--grpc-memory-limit", bad}, &help);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  for (const char* bad : {"-1", "3000000000", "x"}) {
    config = ParseConfig({"--max-concurrent-streams", bad}, &help);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  std::string path = WriteFile(
      "overload.yaml", "maxPendingCalls: 512\ngrpcMemoryLimit: 1Gi\nmaxConcurrentStreams: 0\n");
  config = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_pending_calls, 512);
  EXPECT_EQ(config->grpc_memory_limit, uint64_t{1} << 30);
  EXPECT_EQ(config->max_concurrent_streams, 0);
  path = WriteFile("overload_bad.yaml", "maxPendingCalls: -5\n");
  config = ParseConfig({"--config", path}, &help);
  EXPECT_THAT(config.status().message(), HasSubstr("maxPendingCalls"));
}

TEST(ConfigTest, FlagsInBothForms) {
  bool help;
  absl::StatusOr<Config> config =
      ParseConfig({"--listen", "0.0.0.0:7000", "--data-dir=/tmp/x", "--manual-scheduling",
                   "--sync-delay", "2ms", "--event-retention=10", "--feature-gates",
                   "ElasticJobsViaWorkloadSlices=false", "--allow-insecure-listen"},
                  &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen, "0.0.0.0:7000");
  EXPECT_EQ(config->data_dir, "/tmp/x");
  EXPECT_TRUE(config->manual_scheduling);
  EXPECT_EQ(config->sync_delay, absl::Milliseconds(2));
  EXPECT_EQ(config->event_retention, 10u);
  EXPECT_EQ(config->feature_gates.at("ElasticJobsViaWorkloadSlices"), false);
}

TEST(ConfigTest, FileIsReadAndFlagsWin) {
  std::string path = WriteFile("admitd.yaml",
                               "listen: 127.0.0.1:6000\n"
                               "dataDir: /var/lib/admitd\n"
                               "manualScheduling: true\n"
                               "logLevel: debug\n"
                               "syncDelay: 1ms\n"
                               "featureGates:\n  ElasticJobsViaWorkloadSlices: true\n");
  bool help;
  absl::StatusOr<Config> config = ParseConfig({"--listen", "127.0.0.1:7001", "--config", path},
                                              &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen, "127.0.0.1:7001");  // the flag, though it came first
  EXPECT_EQ(config->data_dir, "/var/lib/admitd");
  EXPECT_TRUE(config->manual_scheduling);
  EXPECT_EQ(config->log_level, "debug");
  EXPECT_EQ(config->sync_delay, absl::Milliseconds(1));
}

TEST(ConfigTest, Tracing) {
  bool help;
  absl::StatusOr<Config> off = ParseConfig({}, &help);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->otlp_endpoint, "");
  EXPECT_EQ(off->trace_sample_ratio, 0.1);
  std::string path = WriteFile("traced.yaml",
                               "otlpEndpoint: jaeger:4317\ntraceSampleRatio: 0.5\n"
                               "traceServiceName: admitd-eu\n");
  absl::StatusOr<Config> file = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->otlp_endpoint, "jaeger:4317");
  EXPECT_EQ(file->trace_sample_ratio, 0.5);
  EXPECT_EQ(file->trace_service_name, "admitd-eu");
  absl::StatusOr<Config> flags =
      ParseConfig({"--config", path, "--trace-sample-ratio", "1"}, &help);
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->trace_sample_ratio, 1);
  for (const char* bad : {"1.5", "-0.1", "half", "nan"}) {
    absl::StatusOr<Config> c = ParseConfig({"--trace-sample-ratio", bad}, &help);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(c.status().message()), ::testing::HasSubstr("--trace-sample-ratio"))
        << bad;
  }
}

TEST(ConfigTest, UnknownKeyNamesFileAndKey) {
  std::string path = WriteFile("bad.yaml", "listen: x:1\nlistenn: y\n");
  bool help;
  absl::StatusOr<Config> config = ParseConfig({"--config", path}, &help);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("bad.yaml: listenn: unknown key"));
}

TEST(ConfigTest, BadValuesAreRejected) {
  bool help;
  EXPECT_EQ(ParseConfig({"--sync-delay", "soon"}, &help).status().message(),
            "--sync-delay: must be a duration such as 15s or 2ms, not \"soon\"");
  EXPECT_EQ(ParseConfig({"--log-level", "loud"}, &help).status().message(),
            "--log-level: must be debug, info, warning or error, not \"loud\"");
  EXPECT_THAT(ParseConfig({"--event-retention", "0"}, &help).status().message(),
              HasSubstr("must be a positive integer"));
  EXPECT_THAT(ParseConfig({"--bogus"}, &help).status().message(), HasSubstr("unknown flag --bogus"));
  EXPECT_THAT(ParseConfig({"--listen"}, &help).status().message(), HasSubstr("needs a value"));
  std::string path = WriteFile("badtype.yaml", "manualScheduling: maybe\n");
  EXPECT_THAT(ParseConfig({"--config", path}, &help).status().message(),
              HasSubstr("badtype.yaml: manualScheduling: must be true or false, not \"maybe\""));
  // The same bound reads the same from a flag and from the file.
  path = WriteFile("retention.yaml", "eventRetention: 0\n");
  EXPECT_THAT(ParseConfig({"--config", path}, &help).status().message(),
              HasSubstr("retention.yaml: eventRetention: must be a positive integer, not \"0\""));
}

TEST(ConfigTest, UnknownNamesAreRefusedWithTheClosestKnownOne) {
  bool help;
  EXPECT_EQ(ParseConfig({"--data-dr", "x"}, &help).status().message(),
            "unknown flag --data-dr (did you mean --data-dir?)");
  std::string path = WriteFile("typo.yaml", "manualClockStrat: 2025-01-01T00:00:00Z\n");
  EXPECT_EQ(ParseConfig({"--config", path}, &help).status().message(),
            path + ": manualClockStrat: unknown key (did you mean manualClockStart?)");
  path = WriteFile("far.yaml", "zzz: 1\n");
  EXPECT_THAT(ParseConfig({"--config", path}, &help).status().message(),
              HasSubstr("manualClockStart"));  // the list of known keys is the table's
  path = WriteFile("mk.yaml", "multiKueue: {dispatcherNam: incremental}\n");
  EXPECT_EQ(ParseConfig({"--config", path}, &help).status().message(),
            path + ": multiKueue.dispatcherNam: unknown key (did you mean dispatcherName?)");
  path = WriteFile("gates.yaml", "featureGates: {NoSuchGate: true}\n");
  EXPECT_THAT(ParseConfig({"--config", path}, &help).status().message(),
              HasSubstr("gates.yaml: featureGates: unknown feature gate \"NoSuchGate\""));
  EXPECT_THAT(ParseConfig({"stray"}, &help).status().message(),
              HasSubstr("unexpected argument \"stray\""));
}

TEST(ConfigTest, MultiKueueSettingsFromFlagsAndFile) {
  bool help;
  std::string path = WriteFile("mk-ok.yaml",
                               "multiKueue:\n"
                               "  origin: eu\n"
                               "  dispatcherName: incremental\n"
                               "  incrementalDispatcherConfig: {stepSize: 5}\n"
                               "  workerLostTimeout: 2m\n");
  absl::StatusOr<Config> file = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->multikueue_origin, "eu");
  EXPECT_EQ(file->multikueue_dispatcher, "kueue.x-k8s.io/multikueue-dispatcher-incremental");
  EXPECT_EQ(file->multikueue_step_size, 5);
  EXPECT_EQ(file->multikueue_worker_lost_timeout, absl::Minutes(2));
  absl::StatusOr<Config> flags = ParseConfig({"--multikueue-dispatcher", "all-at-once"}, &help);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->multikueue_dispatcher, "kueue.x-k8s.io/multikueue-dispatcher-all-at-once");
  EXPECT_THAT(ParseConfig({"--multikueue-dispatcher", "random"}, &help).status().message(),
              HasSubstr("--multikueue-dispatcher: must be all-at-once or incremental"));
}

TEST(ConfigTest, HelpListsEveryFlag) {
  const std::string usage = Usage();
  Config scratch;
  const settings::Table table = ConfigTable(&scratch);
  for (const settings::Setting& s : table.settings()) {
    if (!s.flag.empty()) {
      EXPECT_THAT(usage, HasSubstr("  " + s.flag)) << s.flag;
    }
  }
}

TEST(ConfigTest, Help) {
  bool help = false;
  ASSERT_TRUE(ParseConfig({"--help"}, &help).ok());
  EXPECT_TRUE(help);
}

TEST(ConfigTest, ManualClockNeedsManualScheduling) {
  bool help;
  absl::StatusOr<Config> alone = ParseConfig({"--manual-clock"}, &help);
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(alone.status().message()),
              HasSubstr("--manual-clock: is only valid with --manual-scheduling"));
  absl::StatusOr<Config> both = ParseConfig({"--manual-scheduling", "--manual-clock"}, &help);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_TRUE(both->manual_clock);
  EXPECT_FALSE(both->manual_clock_start.has_value());
}

TEST(ConfigTest, ManualClockStartIsAnRfc3339TimeAndImpliesTheManualClock) {
  bool help;
  absl::StatusOr<Config> start = ParseConfig(
      {"--manual-scheduling", "--manual-clock-start", "2025-03-04T05:06:07.5+01:00"}, &help);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_TRUE(start->manual_clock);
  ASSERT_TRUE(start->manual_clock_start.has_value());
  EXPECT_EQ(*start->manual_clock_start,
            absl::FromUnixSeconds(1741061167) + absl::Milliseconds(500));
  absl::StatusOr<Config> alone = ParseConfig({"--manual-clock-start", "2025-03-04T05:06:07Z"}, &help);
  EXPECT_THAT(std::string(alone.status().message()),
              HasSubstr("--manual-clock-start: is only valid with --manual-scheduling"));
  absl::StatusOr<Config> bad =
      ParseConfig({"--manual-scheduling", "--manual-clock-start", "yesterday"}, &help);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("--manual-clock-start: invalid time \"yesterday\""));
}

TEST(ConfigTest, RequeuingBackoffFromFlagsAndFile) {
  bool help;
  absl::StatusOr<Config> defaults = ParseConfig({}, &help);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->backoff_base_seconds, 60);
  EXPECT_EQ(defaults->backoff_max_seconds, 3600);
  EXPECT_EQ(defaults->backoff_limit_count, -1);
  absl::StatusOr<Config> flags =
      ParseConfig({"--requeuing-backoff-base-seconds", "5", "--requeuing-backoff-max-seconds=50",
                   "--requeuing-backoff-limit-count", "3"},
                  &help);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->backoff_base_seconds, 5);
  EXPECT_EQ(flags->backoff_max_seconds, 50);
  EXPECT_EQ(flags->backoff_limit_count, 3);
  EXPECT_FALSE(ParseConfig({"--requeuing-backoff-base-seconds", "0"}, &help).ok());
  const std::string path = WriteFile("backoff.yaml",
                                     "requeuingBackoffBaseSeconds: 7\n"
                                     "requeuingBackoffLimitCount: 0\n");
  absl::StatusOr<Config> file = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->backoff_base_seconds, 7);
  EXPECT_EQ(file->backoff_limit_count, 0);
}

TEST(ConfigTest, PodAndSliceSettingsFromFlagsAndFile) {
  bool help;
  absl::StatusOr<Config> defaults = ParseConfig({}, &help);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->pod_group_max_roles, 18);
  EXPECT_EQ(defaults->slice_history_limit, 5);
  EXPECT_EQ(defaults->pod_unmanaged_namespaces,
            (std::vector<std::string>{"kube-system", "admitd-system"}));
  absl::StatusOr<Config> flags =
      ParseConfig({"--pod-group-max-roles", "8", "--pod-unmanaged-namespaces", "a,b",
                   "--slice-history-limit", "0", "--metrics-listen", "127.0.0.1:9090"},
                  &help);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->pod_group_max_roles, 8);
  EXPECT_EQ(flags->pod_unmanaged_namespaces, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(flags->slice_history_limit, 0);
  EXPECT_EQ(flags->metrics_listen, "127.0.0.1:9090");
  EXPECT_FALSE(ParseConfig({"--pod-group-max-roles", "19"}, &help).ok());
  EXPECT_FALSE(ParseConfig({"--slice-history-limit", "-1"}, &help).ok());
  const std::string path = WriteFile("pods.yaml",
                                     "podGroupMaxRoles: 4\n"
                                     "podUnmanagedNamespaces: [ops]\n"
                                     "sliceHistoryLimit: 2\n"
                                     "metricsListen: 0.0.0.0:9100\n"
                                     "allowInsecureListen: true\n");
  absl::StatusOr<Config> file = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->pod_group_max_roles, 4);
  EXPECT_EQ(file->pod_unmanaged_namespaces, (std::vector<std::string>{"ops"}));
  EXPECT_EQ(file->slice_history_limit, 2);
  EXPECT_EQ(file->metrics_listen, "0.0.0.0:9100");
}

TEST(ConfigTest, PlaintextOnlyOnLoopbackUnlessAllowed) {
  bool help;
  for (const char* address : {"127.0.0.1:1", "[::1]:1", "localhost:1"}) {
    EXPECT_TRUE(ParseConfig({"--listen", address, "--metrics-listen", address}, &help).ok())
        << address;
  }
  for (const char* address : {"0.0.0.0:1", ":1", "[::]:1", "10.0.0.1:1", "admitd:1"}) {
    absl::StatusOr<Config> refused = ParseConfig({"--listen", address}, &help);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(refused.status().message(),
                HasSubstr("is not a loopback address and TLS is off")) << address;
    EXPECT_TRUE(ParseConfig({"--listen", address, "--allow-insecure-listen"}, &help).ok());
    EXPECT_TRUE(ParseConfig({"--listen", address, "--tls-cert-file", "c", "--tls-private-key-file",
                             "k"},
                            &help)
                    .ok());
  }
  EXPECT_THAT(ParseConfig({"--metrics-listen", "0.0.0.0:9090"}, &help).status().message(),
              HasSubstr("--metrics-listen: 0.0.0.0:9090 is not a loopback address"));
}

TEST(ConfigTest, TlsAndAuthSettingsMustAgree) {
  bool help;
  EXPECT_THAT(ParseConfig({"--tls-cert-file", "c"}, &help).status().message(),
              HasSubstr("--tls-private-key-file: TLS needs both"));
  EXPECT_THAT(ParseConfig({"--client-ca-file", "ca"}, &help).status().message(),
              HasSubstr("client certificates need TLS"));
  EXPECT_THAT(ParseConfig({"--tls-cert-file", "c", "--tls-private-key-file", "k",
                           "--require-client-certificate"},
                          &help)
                  .status()
                  .message(),
              HasSubstr("needs --client-ca-file"));
  EXPECT_THAT(ParseConfig({"--authentication-config", "a.yaml"}, &help).status().message(),
              HasSubstr("only taken over TLS"));
  const std::string path = WriteFile("tls.yaml",
                                     "tlsCertFile: /tls/tls.crt\n"
                                     "tlsPrivateKeyFile: /tls/tls.key\n"
                                     "clientCAFile: /tls/ca.crt\n"
                                     "requireClientCertificate: true\n"
                                     "tlsRefreshInterval: 2s\n"
                                     "authenticationConfig: /etc/authn.yaml\n"
                                     "authorizationPolicy: /etc/policy.yaml\n"
                                     "listen: 0.0.0.0:50051\n");
  absl::StatusOr<Config> file = ParseConfig({"--config", path}, &help);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->tls_cert_file, "/tls/tls.crt");
  EXPECT_EQ(file->tls_key_file, "/tls/tls.key");
  EXPECT_EQ(file->client_ca_file, "/tls/ca.crt");
  EXPECT_TRUE(file->require_client_certificate);
  EXPECT_EQ(file->tls_refresh_interval, absl::Seconds(2));
  EXPECT_EQ(file->authentication_config, "/etc/authn.yaml");
  EXPECT_EQ(file->authorization_policy, "/etc/policy.yaml");
}

TEST(ConfigTest, HaFlagsAndTheirRefusals) {
  bool help;
  absl::StatusOr<Config> c =
      ParseConfig({"--ha-etcd-endpoints", "e1:2379,e2:2379", "--ha-domain", "prod", "--ha-id", "r1",
                   "--ha-lease-ttl", "3s", "--ha-etcd-ca-file", "/ca.crt", "--ha-etcd-cert-file",
                   "/tls.crt", "--ha-etcd-key-file", "/tls.key"},
                  &help);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ha_etcd_endpoints, (std::vector<std::string>{"e1:2379", "e2:2379"}));
  EXPECT_EQ(c->ha_domain, "prod");
  EXPECT_EQ(c->ha_id, "r1");
  EXPECT_EQ(c->ha_lease_ttl, absl::Seconds(3));
  EXPECT_EQ(c->ha_etcd_ca_file, "/ca.crt");
  EXPECT_EQ(c->ha_etcd_cert_file, "/tls.crt");
  EXPECT_EQ(c->ha_etcd_key_file, "/tls.key");

  EXPECT_EQ(ParseConfig({"--ha-etcd-ca-file", "/ca.crt"}, &help).status().message(),
            "--ha-etcd-ca-file: is only valid with --ha-etcd-endpoints");
  EXPECT_EQ(ParseConfig({"--ha-etcd-endpoints", "e:1", "--ha-etcd-cert-file", "/tls.crt"}, &help)
                .status()
                .message(),
            "--ha-etcd-cert-file: and --ha-etcd-key-file are given together or not at all");
  EXPECT_EQ(ParseConfig({"--ha-etcd-endpoints", "e:1", "--manual-scheduling"}, &help)
                .status()
                .message(),
            "--ha-etcd-endpoints: is not valid with --manual-scheduling or --manual-clock");
  EXPECT_THAT(ParseConfig({"--ha-etcd-endpoints", "e:1", "--ha-lease-ttl", "100ms"}, &help)
                  .status()
                  .message(),
              HasSubstr("--ha-lease-ttl"));
}

}  // namespace
}  // namespace admitd
