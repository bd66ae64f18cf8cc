#include "clients/shim/shim_config.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"

namespace admitd::shim {

namespace {

constexpr const char* kKnownIntegrations[] = {"batch/job",
                                              "pod",
                                              "ray.io/raycluster",
                                              "ray.io/rayjob",
                                              "jobset.x-k8s.io/jobset",
                                              "kubeflow.org/pytorchjob",
                                              "deployment",
                                              "statefulset"};

std::string KnownIntegrations() { return absl::StrJoin(kKnownIntegrations, ", "); }

settings::Parser Integrations(std::set<std::string>* out) {
  return [out](const std::string& value) {
    std::set<std::string> parsed;
    for (absl::string_view f : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      if (std::find(std::begin(kKnownIntegrations), std::end(kKnownIntegrations), f) ==
          std::end(kKnownIntegrations)) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown integration \"", f, "\" (known: ", KnownIntegrations(), ")"));
      }
      parsed.insert(std::string(f));
    }
    *out = std::move(parsed);
    return absl::OkStatus();
  };
}

settings::Parser Gates(bool* elastic_jobs) {
  return [elastic_jobs](const std::string& value) {
    for (absl::string_view kv : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      if (p.first != "ElasticJobsViaWorkloadSlices") {
        return absl::InvalidArgumentError("unknown feature gate \"" + p.first +
                                          "\" (known: ElasticJobsViaWorkloadSlices)");
      }
      if (p.second != "true" && p.second != "false") {
        return absl::InvalidArgumentError(p.first + " must be true or false");
      }
      *elastic_jobs = p.second == "true";
    }
    return absl::OkStatus();
  };
}

}  // namespace

settings::Table ShimConfigTable(ShimConfig* c) {
  using namespace settings;  // NOLINT: the parsers read as a declaration
  const absl::Duration positive = absl::Nanoseconds(1);
  Table t("admitd-shim");
  auto add = [&t](Setting s) { t.Add(std::move(s)); };
  add({.flag = "--admitd",
       .value = "HOST:PORT",
       .help = "admitd's gRPC address, or an HA group's replicas as HOST:PORT,HOST:PORT,... "
               "(required; $ADMITD_SERVER)",
       .parse = String(&c->admitd)});
  add({.flag = "--admitd-follow-leader",
       .help = "send calls to the leader among the addresses --admitd resolves to, e.g. a "
               "headless Service of an HA group (implied by a list)",
       .switch_value = "true",
       .parse = Bool(&c->admitd_follow_leader)});
  add({.flag = "--cluster",
       .value = "NAME",
       .help = "this cluster's name in admitd (required)",
       .parse = String(&c->cluster)});
  add({.flag = "--admitd-tls",
       .help = "TLS to admitd with the system's CAs (implied by the next four)",
       .switch_value = "true",
       .parse = Bool(&c->admitd_tls)});
  add({.flag = "--admitd-ca-file",
       .value = "FILE",
       .help = "the CA bundle admitd's certificate must chain to",
       .parse = String(&c->admitd_ca_file)});
  add({.flag = "--admitd-cert-file",
       .value = "FILE",
       .help = "this shim's client certificate for mTLS (reloaded on change)",
       .parse = String(&c->admitd_cert_file)});
  add({.flag = "--admitd-key-file",
       .value = "FILE",
       .help = "the client certificate's key",
       .parse = String(&c->admitd_key_file)});
  add({.flag = "--admitd-server-name",
       .value = "NAME",
       .help = "the name expected in admitd's certificate (default: the host)",
       .parse = String(&c->admitd_server_name)});
  add({.flag = "--admitd-token-file",
       .value = "FILE",
       .help = "a bearer token sent with every call, read again when it changes (a projected "
               "service-account token)",
       .parse = String(&c->admitd_token_file)});
  add({.flag = "--kubeconfig",
       .value = "PATH",
       .help =
           "a kubeconfig (its current context); unset: in-cluster (KUBERNETES_SERVICE_HOST/PORT, "
           "the service-account token and CA)",
       .parse = String(&c->kubeconfig)});
  add({.flag = "--leader-elect",
       .value = "true|false",
       .help = "elect one leader on a Lease; only it reconciles",
       .default_text = "true",
       .switch_value = "true",
       .parse = Bool(&c->leader_elect)});
  add({.flag = "--leader-election-namespace",
       .value = "NS",
       .help = "the Lease's namespace (default $POD_NAMESPACE, else admitd-system)",
       .parse = String(&c->leader_election_namespace)});
  add({.flag = "--leader-election-id",
       .value = "NAME",
       .help = "the Lease's name",
       .default_text = "admitd-shim",
       .parse = String(&c->leader_election_id)});
  add({.flag = "--identity",
       .value = "NAME",
       .help = "this replica in the Lease (default $POD_NAME, else the host name)",
       .parse = String(&c->identity)});
  add({.flag = "--lease-duration",
       .value = "D",
       .help = "how long a Lease holds",
       .default_text = "15s",
       .parse = Duration(&c->lease_duration, positive)});
  add({.flag = "--renew-deadline",
       .value = "D",
       .help = "how long the leader tries to renew before it gives up leading",
       .default_text = "10s",
       .parse = Duration(&c->renew_deadline, positive)});
  add({.flag = "--retry-period",
       .value = "D",
       .help = "between two tries to acquire or renew",
       .default_text = "2s",
       .parse = Duration(&c->retry_period, positive)});
  add({.flag = "--health-listen",
       .value = "ADDR",
       .help = "/healthz, /readyz and /metrics",
       .default_text = "0.0.0.0:8081",
       .parse = String(&c->health_listen)});
  add({.flag = "--otlp-endpoint",
       .value = "HOST:PORT",
       .help = "OTLP/gRPC collector for reconcile traces; unset: none",
       .parse = String(&c->otlp_endpoint)});
  add({.flag = "--trace-sample-ratio",
       .value = "R",
       .help = "share of objects whose reconciles are traced",
       .default_text = "0.1",
       .parse = Double(&c->trace_sample_ratio, 0, 1)});
  add({.flag = "--webhook-listen",
       .value = "ADDR",
       .help = "the admission webhook's HTTPS address (empty: no webhook)",
       .default_text = "0.0.0.0:9443",
       .parse = String(&c->webhook_listen)});
  add({.flag = "--webhook-cert-dir",
       .value = "DIR",
       .help = "tls.crt and tls.key, reloaded when they change",
       .default_text = "/tmp/k8s-webhook-server/serving-certs",
       .parse = String(&c->webhook_cert_dir)});
  add({.flag = "--managed-namespaces-exclude",
       .value = "NS,...",
       .help = "namespaces whose jobs are never managed (default kube-system,<leader election "
               "namespace>)",
       .parse = [c](const std::string& v) {
         c->excluded_namespaces.clear();
         for (absl::string_view ns : absl::StrSplit(v, ',', absl::SkipEmpty())) {
           c->excluded_namespaces.insert(std::string(ns));
         }
         c->excluded_namespaces_given = true;
         return absl::OkStatus();
       }});
  add({.flag = "--manage-jobs-without-queue-name",
       .help = "manage jobs that have no queue-name label too",
       .switch_value = "true",
       .parse = Bool(&c->manage_jobs_without_queue_name)});
  add({.flag = "--multikueue-worker",
       .help = "this cluster is a MultiKueue worker: create the Jobs its admitd's winning copies "
               "carry (--cluster must be the manager's MultiKueueCluster name for it)",
       .switch_value = "true",
       .parse = Bool(&c->multikueue_worker)});
  add({.flag = "--mirror-workloads",
       .help = "keep read-only kueue.x-k8s.io/v1beta2 Workload objects in the cluster mirroring "
               "admitd's (needs Kueue's Workload CRD)",
       .switch_value = "true",
       .parse = Bool(&c->mirror_workloads)});
  add({.flag = "--integrations",
       .value = "LIST",
       .help = "the kinds managed (Kueue's integrations.frameworks): " + KnownIntegrations(),
       .default_text = "batch/job",
       .parse = Integrations(&c->integrations)});
  add({.flag = "--feature-gates",
       .value = "ElasticJobsViaWorkloadSlices=true|false",
       .help = "elastic Jobs and RayClusters through workload slices",
       .default_text = "true",
       .parse = Gates(&c->elastic_jobs)});
  add({.flag = "--workers",
       .value = "N",
       .help = "objects reconciled at once",
       .default_text = "16",
       .parse = Int(&c->workers, 1, 256)});
  add({.flag = "--resync-period",
       .value = "D",
       .help = "reconcile every object again this often",
       .default_text = "10m",
       .parse = Duration(&c->resync_period, positive)});
  add({.flag = "--log-level",
       .value = "debug|info|warning|error",
       .help = "the least severe log lines written",
       .default_text = "info",
       .parse = Checked(&c->log_level, log::IsLevel, "debug, info, warning or error")});
  return t;
}

std::string ShimUsage() {
  ShimConfig scratch;
  return absl::StrCat(
      "usage: admitd-shim --admitd HOST:PORT --cluster NAME [flags]\n\n"
      "Connects one Kubernetes cluster to admitd: its Jobs, RayClusters and pods with the label\n"
      "kueue.x-k8s.io/queue-name become Workloads in admitd, and admitd's decisions start, stop\n"
      "and finish them.\n\n",
      ShimConfigTable(&scratch).FlagHelp());
}

namespace {

absl::Status Bad(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

}  // namespace

absl::StatusOr<ShimConfig> ParseShimConfig(const std::vector<std::string>& args, bool* help,
                                           std::string (*env)(const char*)) {
  ShimConfig c;
  c.admitd = env("ADMITD_SERVER");
  absl::StatusOr<settings::CommandLine> line = ShimConfigTable(&c).Parse(args);
  if (!line.ok()) return line.status();
  if (line->help) {
    *help = true;
    return c;
  }
  if (c.admitd.empty()) return Bad("admitd", "is required (or set ADMITD_SERVER)");
  if (c.cluster.empty()) return Bad("cluster", "is required");
  // It becomes the value of a label on every Workload.
  static const std::regex kLabelValue("[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
  if (!std::regex_match(c.cluster, kLabelValue)) {
    return Bad("cluster",
               "\"" + c.cluster +
                   "\" is not a valid label value (at most 63 characters: letters, "
                   "digits, '-', '_' or '.', starting and ending with a letter or digit)");
  }
  if (c.renew_deadline >= c.lease_duration) {
    return Bad("renew-deadline", "must be shorter than --lease-duration");
  }
  if (c.leader_election_namespace.empty()) c.leader_election_namespace = env("POD_NAMESPACE");
  if (c.leader_election_namespace.empty()) c.leader_election_namespace = "admitd-system";
  if (c.identity.empty()) c.identity = env("POD_NAME");
  if (c.identity.empty()) c.identity = env("HOSTNAME");
  if (c.identity.empty()) c.identity = "admitd-shim";
  if (!c.excluded_namespaces_given) {
    c.excluded_namespaces = {"kube-system", c.leader_election_namespace};
  }
  return c;
}

}  // namespace admitd::shim
