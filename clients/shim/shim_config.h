// The admitd-shim command line: each flag declared once in ShimConfigTable (its meaning, default
// and parser), from which the parse, --help and docs/configuration.md's table come; errors name
// the flag.
//
//   absl::StatusOr<ShimConfig> config = ParseShimConfig(args, &help);
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_SHIM_CONFIG_H_
#define ADMITD_CLIENTS_SHIM_SHIM_CONFIG_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/settings.h"

namespace admitd::shim {

struct ShimConfig {
  std::string kubeconfig;  // empty: in-cluster
  std::string admitd;      // host:port, or host:port,host:port,... (an HA group)
  bool admitd_follow_leader = false;  // implied by a list
  // TLS to admitd: its CA, this shim's client certificate, the name in admitd's certificate, and
  // a bearer token file (a projected service-account token). Any of them turns TLS on.
  bool admitd_tls = false;
  std::string admitd_ca_file;
  std::string admitd_cert_file;
  std::string admitd_key_file;
  std::string admitd_server_name;
  std::string admitd_token_file;
  std::string cluster;
  bool leader_elect = true;
  std::string leader_election_namespace;  // default $POD_NAMESPACE, else admitd-system
  std::string leader_election_id = "admitd-shim";
  std::string identity;                   // default $POD_NAME, else the host name
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  std::string health_listen = "0.0.0.0:8081";
  // OpenTelemetry traces of reconciles (OTLP/gRPC, plaintext; empty: none) and the share of
  // objects whose reconciles are recorded.
  std::string otlp_endpoint;
  double trace_sample_ratio = 0.1;
  std::string webhook_listen = "0.0.0.0:9443";  // empty: no webhook server
  std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  std::set<std::string> excluded_namespaces;  // default kube-system and the lease namespace
  bool excluded_namespaces_given = false;     // --managed-namespaces-exclude was given
  bool manage_jobs_without_queue_name = false;
  bool mirror_workloads = false;  // read-only Kueue Workload objects in the cluster
  bool multikueue_worker = false;  // create the Jobs of winning MultiKueue copies
  bool elastic_jobs = true;  // the ElasticJobsViaWorkloadSlices gate
  // Kueue's integrations.frameworks: "batch/job" (the default), "pod", "ray.io/raycluster".
  std::set<std::string> integrations = {"batch/job"};
  int workers = 16;
  absl::Duration resync_period = absl::Minutes(10);
  std::string log_level = "info";
};

// The shim's flags, each writing into `config`.
settings::Table ShimConfigTable(ShimConfig* config);
// The --help text.
std::string ShimUsage();

// `env` looks up POD_NAMESPACE / POD_NAME / HOSTNAME (getenv in main). INVALID_ARGUMENT names the
// flag at fault.
absl::StatusOr<ShimConfig> ParseShimConfig(const std::vector<std::string>& args, bool* help,
                                           std::string (*env)(const char*));

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_SHIM_CONFIG_H_
