// Config: the server's settings, from a YAML file and command-line flags (flags win).
//
//   listen: 127.0.0.1:50051
//   metricsListen: 127.0.0.1:9090   # GET /metrics, /healthz, /readyz; unset: no HTTP endpoint
//   otlpEndpoint: localhost:4317    # OTLP/gRPC collector for traces; unset: no traces
//   traceSampleRatio: 0.1           # share of root traces recorded (0 to 1)
//   dataDir: /var/lib/admitd
//   manualScheduling: false
//   manualClock: false      # only with manualScheduling: RunSchedulingCycles moves the clock
//   requeuingBackoffBaseSeconds: 60
//   requeuingBackoffMaxSeconds: 3600
//   requeuingBackoffLimitCount: 5   # unset: unlimited
//   logLevel: info
//   eventRetention: 100000
//   watchBufferBytes: 64Mi  # per Watch stream; one that falls further behind is ended
//   maxPendingCalls: 2048   # calls waiting for the sequencer; more are refused (0: no bound)
//   grpcMemoryLimit: 256Mi  # gRPC's resource quota: its transport and call memory
//   maxConcurrentStreams: 2048  # calls open at once on one connection (0: gRPC's default)
//   syncDelay: 0ms          # injected after every fsync (benchmarks)
//   sync: true
//   sliceHistoryLimit: 5
//   featureGates: {ElasticJobsViaWorkloadSlices: true}
//   tlsCertFile: /etc/admitd/tls/tls.crt       # TLS on the gRPC and metrics ports
//   tlsPrivateKeyFile: /etc/admitd/tls/tls.key
//   clientCAFile: /etc/admitd/tls/ca.crt       # verify client certificates (mTLS)
//   requireClientCertificate: false
//   tlsRefreshInterval: 10s
//   authenticationConfig: /etc/admitd/authn.yaml  # bearer tokens (service accounts, OIDC)
//   authorizationPolicy: /etc/admitd/policy.yaml  # roles and bindings; unset: all allowed
//   allowInsecureListen: false  # plaintext on a non-loopback address
//   fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]}
//   waitForPodsReady: {timeout: 10m, blockAdmission: false, requeuingStrategy: {...}}
//   admissionFairSharing: {usageHalfLifeTime: 168h, usageSamplingInterval: 5m}
//
// Each setting is declared once, in ConfigTable: its flag, its key, its parser and its help line,
// from which the --help text and docs/configuration.md's table come. Unknown keys and bad values
// are errors naming the file and the key (or the flag); an unknown name gets the closest known one
// suggested.
#ifndef ADMITD_SERVER_CONFIG_H_
#define ADMITD_SERVER_CONFIG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/settings.h"

namespace rocksdb {
class FileSystem;
}  // namespace rocksdb

namespace admitd {

struct Config {
  std::string listen = "127.0.0.1:50051";
  // Prometheus metrics and health over HTTP (GET /metrics, /healthz, /readyz); empty: off.
  std::string metrics_listen;
  // OpenTelemetry traces: the OTLP/gRPC collector (host:port, plaintext; empty: no traces), the
  // share of root traces recorded (parent-based: a call whose traceparent is sampled is always
  // recorded), and service.name.
  std::string otlp_endpoint;
  double trace_sample_ratio = 0.1;
  std::string trace_service_name = "admitd";
  std::string data_dir = "data";
  bool manual_scheduling = false;
  bool manual_clock = false;
  // With manual_clock: where the clock starts. Set, the clock stands still between advances, so a
  // recorded scenario replays with its own timestamps; unset, it runs from the machine's time.
  std::optional<absl::Time> manual_clock_start;
  // Requeue backoff after an admission-check retry (§9.4 of the semantics).
  int64_t backoff_base_seconds = 60;
  int64_t backoff_max_seconds = 3600;
  int64_t backoff_limit_count = -1;  // negative: unlimited
  // Finished workload slices kept per elastic job (older ones are deleted).
  int64_t slice_history_limit = 5;
  // Distinct roles (pod templates) allowed in one pod group: Kueue's 18 (MaxPodSets), or fewer.
  int64_t pod_group_max_roles = 18;
  // Namespaces whose pods are never managed (Kueue's managedJobsNamespaceSelector default
  // excludes kube-system and its own namespace).
  std::vector<std::string> pod_unmanaged_namespaces = {"kube-system", "admitd-system"};
  // Size limits: the largest object accepted and the most bytes of objects in one List page.
  int64_t max_object_bytes = 1536 * 1024;
  int64_t max_list_page_bytes = 3 * 1024 * 1024;
  std::string log_level = "info";
  uint64_t event_retention = 100000;
  // Bytes of events one Watch stream may have waiting to be sent (beside 10,000 events); a
  // stream that falls further behind ends with RESOURCE_EXHAUSTED.
  uint64_t watch_buffer_bytes = uint64_t{64} << 20;
  // Calls waiting for the sequencer (queued, being applied or committed, not yet answered) at
  // most; a call beyond is refused with RESOURCE_EXHAUSTED and a retry delay (server/intake.h).
  // Reads may exceed it by a quarter. 0: no bound. As many as one connection may have open
  // (max_concurrent_streams), so the calls of one client are held back by its streams, not
  // refused; the bound sheds the load of many connections at once.
  int64_t max_pending_calls = 2048;
  // gRPC's resource quota (grpc::ResourceQuota): the memory its transports and calls may take.
  uint64_t grpc_memory_limit = uint64_t{256} << 20;
  // Streams (calls) one client connection may have open at once (HTTP/2
  // SETTINGS_MAX_CONCURRENT_STREAMS): a client's further calls wait in the client. What bounds
  // the calls gRPC holds before admitd sees them. 0: gRPC's default (no limit).
  int64_t max_concurrent_streams = 2048;
  absl::Duration sync_delay = absl::ZeroDuration();
  bool sync = true;
  std::map<std::string, bool> feature_gates;
  // TLS for the gRPC and metrics ports (both files, or neither). The files are read again when
  // they change, at most once per tls_refresh_interval.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Client certificates are asked for and verified against this CA bundle; a verified one is
  // the caller's identity. With require_client_certificate, a handshake without one fails.
  std::string client_ca_file;
  bool require_client_certificate = false;
  absl::Duration tls_refresh_interval = absl::Seconds(10);
  // Bearer tokens (server/auth/token_authenticator.h) and the authorization policy
  // (server/auth/policy.h); with a policy, every call needs an identity the policy allows.
  std::string authentication_config;
  std::string authorization_policy;
  // Serve plaintext on an address other than loopback (refused otherwise).
  bool allow_insecure_listen = false;
  // MultiKueue (docs/multikueue.md), Kueue's multiKueue configuration: the origin label value of
  // the copies this manager makes, how long a workload admitted by an unreachable worker keeps
  // its admission, how often orphaned copies are collected (0: never), the dispatcher (AllAtOnce
  // or Incremental) with its step and round, and the first reconnection delay.
  std::string multikueue_origin = "multikueue";
  absl::Duration multikueue_worker_lost_timeout = absl::Minutes(15);
  absl::Duration multikueue_gc_interval = absl::Minutes(1);
  std::string multikueue_dispatcher = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
  int64_t multikueue_step_size = 3;
  absl::Duration multikueue_round_timeout = absl::Minutes(5);
  absl::Duration multikueue_reconnect_backoff = absl::Seconds(5);
  // High availability (docs/high-availability.md): the etcd members (host:port each; empty: one
  // admitd alone, without etcd), the admission domain whose replicas elect one leader, this
  // replica's name in it (default: the host name), the address followers send clients to
  // (default: --listen) and the leader's lease.
  std::vector<std::string> ha_etcd_endpoints;
  std::string ha_domain = "default";
  std::string ha_id;
  std::string ha_advertise_address;
  absl::Duration ha_lease_ttl = absl::Seconds(5);
  absl::Duration ha_log_trim_interval = absl::Seconds(10);
  // Batches the leader has on their way to etcd at once (ReplicatedStore's pipeline depth).
  int ha_commits_in_flight = 8;
  // TLS to etcd: its CA bundle, and this replica's client certificate and key.
  std::string ha_etcd_ca_file;
  std::string ha_etcd_cert_file;
  std::string ha_etcd_key_file;
  // Fair sharing (§19 of the semantics; config_kueue.h), Kueue's fairSharing section: on when
  // the section is present (v1beta2) or as its `enable` says (v1beta1), and the preemption
  // strategies tried in order.
  bool fair_sharing = false;
  std::optional<bool> fair_sharing_enable;
  std::vector<std::string> fair_sharing_preemption_strategies;
  // waitForPodsReady (§21; config_kueue.h), Kueue's section: on when present (v1beta2) or as
  // its `enable` says (v1beta1). Unset fields take the defaults of the spelling used: timeout
  // 30m (v1beta2) or 5m (v1beta1), blockAdmission false (v1beta2) or true (v1beta1),
  // recoveryTimeout = timeout (0: none), timestamp Eviction. Its requeuingStrategy's backoff
  // fields are requeuingBackoff*Seconds and requeuingBackoffLimitCount above.
  bool wait_for_pods_ready = false;
  std::optional<bool> wait_for_pods_ready_enable;
  std::optional<absl::Duration> pods_ready_timeout;
  std::optional<bool> pods_ready_block_admission;
  std::optional<absl::Duration> pods_ready_recovery_timeout;
  std::string pods_ready_timestamp = "Eviction";
  // Admission fair sharing (§20; config_kueue.h), Kueue's admissionFairSharing section: on when
  // present. The half-life of the usage (0: no memory), how often it is sampled (default 5m)
  // and the weight of each resource in it (unlisted: 1).
  bool admission_fair_sharing = false;
  std::optional<absl::Duration> afs_usage_half_life;
  std::optional<absl::Duration> afs_usage_sampling_interval;
  std::map<std::string, double> afs_resource_weights;
  // Tests only (no flag or key): the file system the store's RocksDB uses, e.g. one that fails
  // writes like a full disk. Null: the machine's.
  std::shared_ptr<rocksdb::FileSystem> store_file_system;
};

// Parses `argv` (and the file named by --config, read first: flags win). INVALID_ARGUMENT names
// the flag, or the file and key, at fault; `*help` is set for --help.
absl::StatusOr<Config> ParseConfig(const std::vector<std::string>& args, bool* help);

// Reads a YAML config file into `config`, overwriting the keys it sets.
absl::Status LoadConfigFile(const std::string& path, Config* config);

// admitd's settings, each writing into `config`.
settings::Table ConfigTable(Config* config);
// The --help text.
std::string Usage();
// The feature gates admitd knows.
extern const char* const kKnownFeatureGates[3];

}  // namespace admitd

#endif  // ADMITD_SERVER_CONFIG_H_
