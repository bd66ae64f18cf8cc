#include "clients/shim/shim_config.h"

#include <map>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace admitd::shim {

const char kShimUsage[] = R"(usage: admitd-shim --admitd HOST:PORT --cluster NAME [flags]

Connects one Kubernetes cluster to admitd: batch/v1 Jobs with the label kueue.x-k8s.io/queue-name
become Workloads in admitd, and admitd's decisions start, stop and finish them.

  --admitd HOST:PORT                admitd's gRPC address (required; $ADMITD_SERVER)
  --cluster NAME                    this cluster's name in admitd (required)
  --admitd-tls                      TLS to admitd with the system's CAs (implied by the next four)
  --admitd-ca-file FILE             the CA bundle admitd's certificate must chain to
  --admitd-cert-file FILE, --admitd-key-file FILE
                                    this shim's client certificate for mTLS (reloaded on change)
  --admitd-server-name NAME         the name expected in admitd's certificate (default: the host)
  --admitd-token-file FILE          a bearer token sent with every call, read again when it
                                    changes (a projected service-account token)
  --kubeconfig PATH                 a kubeconfig (its current context); default: in-cluster
                                    (KUBERNETES_SERVICE_HOST/PORT, the service-account token and CA)
  --leader-elect=true|false         elect one leader on a Lease; only it reconciles (default true)
  --leader-election-namespace NS    the Lease's namespace (default $POD_NAMESPACE, else admitd-system)
  --leader-election-id NAME         the Lease's name (default admitd-shim)
  --identity NAME                   this replica in the Lease (default $POD_NAME, else the host name)
  --lease-duration D, --renew-deadline D, --retry-period D
                                    leader election timing (default 15s, 10s, 2s)
  --health-listen ADDR              /healthz, /readyz and /metrics (default 0.0.0.0:8081)
  --otlp-endpoint HOST:PORT         OTLP/gRPC collector for reconcile traces (default: none)
  --trace-sample-ratio R            share of objects whose reconciles are traced (default 0.1)
  --webhook-listen ADDR             the admission webhook's HTTPS address (default 0.0.0.0:9443;
                                    empty: no webhook)
  --webhook-cert-dir DIR            tls.crt and tls.key, reloaded when they change
                                    (default /tmp/k8s-webhook-server/serving-certs)
  --managed-namespaces-exclude LIST namespaces whose Jobs are never managed
                                    (default kube-system,<leader election namespace>)
  --manage-jobs-without-queue-name  manage Jobs that have no queue-name label too
  --multikueue-worker               this cluster is a MultiKueue worker: create the Jobs its
                                    admitd's winning copies carry (--cluster must be the
                                    manager's MultiKueueCluster name for it)
  --mirror-workloads                keep read-only kueue.x-k8s.io/v1beta2 Workload objects in the
                                    cluster mirroring admitd's (needs Kueue's Workload CRD)
  --integrations LIST               the kinds managed (Kueue's integrations.frameworks; default
                                    batch/job; also pod, ray.io/raycluster)
  --feature-gates ElasticJobsViaWorkloadSlices=true|false
  --workers N                       Jobs reconciled at once (default 16)
  --resync-period D                 reconcile every Job again this often (default 10m)
  --log-level debug|info|warning|error
)";

namespace {

absl::Status Bad(const std::string& flag, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

}  // namespace

absl::StatusOr<ShimConfig> ParseShimConfig(const std::vector<std::string>& args, bool* help,
                                           std::string (*env)(const char*)) {
  ShimConfig c;
  c.admitd = env("ADMITD_SERVER");
  bool excluded_set = false;
  std::string excluded;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return c;
    }
    if (arg.rfind("--", 0) != 0) return absl::InvalidArgumentError("unexpected argument " + arg);
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const bool boolean = name == "leader-elect" || name == "manage-jobs-without-queue-name" ||
                         name == "mirror-workloads" || name == "admitd-tls" ||
                         name == "multikueue-worker";
    if (!has_value && !boolean) {
      if (i + 1 >= args.size()) return Bad(name, "needs a value");
      value = args[++i];
    }
    auto flag_bool = [&](bool* out) -> absl::Status {
      if (!has_value || value == "true") {
        *out = true;
      } else if (value == "false") {
        *out = false;
      } else {
        return Bad(name, "must be true or false, not \"" + value + "\"");
      }
      return absl::OkStatus();
    };
    auto duration = [&](absl::Duration* out) -> absl::Status {
      if (!absl::ParseDuration(value, out) || *out <= absl::ZeroDuration()) {
        return Bad(name, "must be a positive duration such as 15s, not \"" + value + "\"");
      }
      return absl::OkStatus();
    };
    absl::Status s;
    if (name == "kubeconfig") c.kubeconfig = value;
    else if (name == "admitd") c.admitd = value;
    else if (name == "cluster") c.cluster = value;
    else if (name == "admitd-tls") s = flag_bool(&c.admitd_tls);
    else if (name == "admitd-ca-file") c.admitd_ca_file = value;
    else if (name == "admitd-cert-file") c.admitd_cert_file = value;
    else if (name == "admitd-key-file") c.admitd_key_file = value;
    else if (name == "admitd-server-name") c.admitd_server_name = value;
    else if (name == "admitd-token-file") c.admitd_token_file = value;
    else if (name == "leader-elect") s = flag_bool(&c.leader_elect);
    else if (name == "leader-election-namespace") c.leader_election_namespace = value;
    else if (name == "leader-election-id") c.leader_election_id = value;
    else if (name == "identity") c.identity = value;
    else if (name == "lease-duration") s = duration(&c.lease_duration);
    else if (name == "renew-deadline") s = duration(&c.renew_deadline);
    else if (name == "retry-period") s = duration(&c.retry_period);
    else if (name == "health-listen") c.health_listen = value;
    else if (name == "otlp-endpoint") c.otlp_endpoint = value;
    else if (name == "trace-sample-ratio") {
      if (!absl::SimpleAtod(value, &c.trace_sample_ratio) || !(c.trace_sample_ratio >= 0) ||
          c.trace_sample_ratio > 1) {
        s = Bad(name, "must be a number from 0 to 1, not \"" + value + "\"");
      }
    }
    else if (name == "webhook-listen") c.webhook_listen = value;
    else if (name == "webhook-cert-dir") c.webhook_cert_dir = value;
    else if (name == "managed-namespaces-exclude") excluded = value, excluded_set = true;
    else if (name == "manage-jobs-without-queue-name") s = flag_bool(&c.manage_jobs_without_queue_name);
    else if (name == "resync-period") s = duration(&c.resync_period);
    else if (name == "mirror-workloads") s = flag_bool(&c.mirror_workloads);
    else if (name == "multikueue-worker") s = flag_bool(&c.multikueue_worker);
    else if (name == "log-level") c.log_level = value;
    else if (name == "integrations") {
      c.integrations.clear();
      for (absl::string_view f : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (f != "batch/job" && f != "pod" && f != "ray.io/raycluster") {
          return Bad(name, absl::StrCat("unknown integration \"", f,
                                        "\" (known: batch/job, pod, ray.io/raycluster)"));
        }
        c.integrations.insert(std::string(f));
      }
    }
    else if (name == "workers") {
      if (!absl::SimpleAtoi(value, &c.workers) || c.workers < 1 || c.workers > 256) {
        s = Bad(name, "must be a number from 1 to 256");
      }
    } else if (name == "feature-gates") {
      for (absl::string_view kv : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
        if (p.first != "ElasticJobsViaWorkloadSlices") {
          return Bad(name, "unknown feature gate \"" + p.first +
                               "\" (known: ElasticJobsViaWorkloadSlices)");
        }
        if (p.second != "true" && p.second != "false") {
          return Bad(name, p.first + " must be true or false");
        }
        c.elastic_jobs = p.second == "true";
      }
    } else {
      return absl::InvalidArgumentError("unknown flag --" + name + " (see --help)");
    }
    if (!s.ok()) return s;
  }
  if (c.admitd.empty()) return Bad("admitd", "is required (or set ADMITD_SERVER)");
  if (c.cluster.empty()) return Bad("cluster", "is required");
  // It becomes the value of a label on every Workload.
  static const std::regex kLabelValue("[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
  if (!std::regex_match(c.cluster, kLabelValue)) {
    return Bad("cluster", "\"" + c.cluster +
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
  if (!excluded_set) excluded = "kube-system," + c.leader_election_namespace;
  for (absl::string_view ns : absl::StrSplit(excluded, ',', absl::SkipEmpty())) {
    c.excluded_namespaces.insert(std::string(ns));
  }
  return c;
}

}  // namespace admitd::shim
