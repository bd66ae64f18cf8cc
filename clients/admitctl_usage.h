// admitctl's help text: its commands, flags and environment (printed by `admitctl help` and
// after a usage error).
#ifndef ADMITD_CLIENTS_ADMITCTL_USAGE_H_
#define ADMITD_CLIENTS_ADMITCTL_USAGE_H_

namespace admitd {

inline constexpr char kUsage[] = R"(usage: admitctl [--server HOST:PORT] [TLS FLAGS] COMMAND ...

  apply -f FILE|DIR|- [-f ...]        create or update queue objects; submit Workload documents
  submit -f FILE                      submit Workload manifests
  import -f FILE [--cluster NAME]     record Workloads admitted by a running Kueue (with their
                                      status) as admitted, without scheduling them; workloads
                                      Kueue made for pods become pod Workloads of --cluster
  get KIND [NAME] [-n NS | -A] [-o json]
                                      kinds: resourceflavor(s)/rf/flavor, cohort(s),
                                      clusterqueue(s)/cq, localqueue(s)/lq,
                                      workloadpriorityclass(es)/wpc,
                                      admissioncheck(s)/ac, namespace(s)/ns,
                                      workload(s)/wl, event(s)/ev
  delete KIND NAME [-n NS]
  admit NAME [-n NS] [--wait] [--timeout 30s]
  explain NAME [-n NS]                why a workload is pending, and what the next attempt would do
  release NAME [-n NS] --finished[=succeeded|failed] | --stopped | --reclaimable PODSET=N,...
  resize NAME [-n NS] --count PODSET=N [--count ...] [--generation G]
  resize --job-uid UID [--job-kind Job --job-name NAME --job-api-version batch/v1] [-n NS]
         --count PODSET=N [--count ...] [--generation G]
                                      change a job's pod counts: in place (scale-down, or not
                                      admitted yet), or a new workload slice (scale-up of an
                                      admitted elastic job; needs the job's new generation)
  deactivate NAME [-n NS]             set spec.active=false (evicts a workload holding quota)
  activate NAME [-n NS]               set spec.active=true (requeues it)
  check NAME CHECK STATE [-n NS] [--message TEXT] [--requeue-after SECONDS]
                                      report an admission check: Pending, Ready, Retry, Rejected
  directives --cluster NAME           what a pod shim of that cluster must still do (UNGATE,
                                      DELETE, REMOVE_FINALIZER), per pod
  events [NAME] [-n NS | -A] [-w]     the events recorded on workloads (Kueue's types, reasons
                                      and messages), oldest first; -w keeps following
  audit [-w]                          the audit trail: who applied, deleted or imported what,
                                      and when, oldest first (as far as the event log reaches)
  watch [--since REV] [--kind KIND] [-n NS]
  cycles [N] [--advance SECONDS]      run N scheduling cycles (with --manual-scheduling); with
                                      --manual-clock, move the clock forward first
  version

The server defaults to $ADMITD_SERVER, else localhost:50051.
TLS flags (each defaults to its environment variable):
  --tls                               TLS with the system's CAs (implied by the flags below)
  --ca-file FILE                      CA bundle for the server's certificate ($ADMITD_CA_FILE)
  --cert-file FILE --key-file FILE    client certificate for mTLS ($ADMITD_CERT_FILE,
                                      $ADMITD_KEY_FILE)
  --server-name NAME                  the name expected in the server's certificate
  --token-file FILE                   bearer token, e.g. an OIDC ID token ($ADMITD_TOKEN_FILE,
                                      or the token itself in $ADMITD_TOKEN)
Tracing:
  --trace                             record this command's calls in a new sampled trace and
                                      print its id (stderr), to find them in the trace backend
  $TRACEPARENT                        a W3C traceparent the calls continue instead
Exit codes: 0 ok, 1 the server refused or failed, 2 bad usage or manifest.
)";

}  // namespace admitd

#endif  // ADMITD_CLIENTS_ADMITCTL_USAGE_H_
