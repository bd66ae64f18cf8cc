#!/usr/bin/env bash
# Checks the deployment files with whichever tools are present, skipping what is absent, so CI
# can run it on a machine with or without them (`scripts/dev.sh test` fetches helm and sets HELM):
#   helm (from $HELM, else PATH): lint --strict each chart, render it with several sets of values,
#     check that the rendered YAML parses and has the expected kinds (with Debian's python3-yaml),
#     and make sure bad values are refused, each for the reason given;
#   docker-compose: validate docker-compose.yaml (a schema check; no engine is needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}

# Fails the script unless rendering chart $1 with the values after $2 fails with a message that
# contains $2 (so a refusal for another reason does not count).
must_refuse() {
  local chart=$1 reason=$2 out
  shift 2
  if out=$("$HELM" template r "$chart" "$@" 2>&1 >/dev/null); then
    echo "helm: rendering $chart with $* should have failed" >&2
    exit 1
  fi
  if [[ "$out" != *"$reason"* ]]; then
    echo "helm: rendering $chart with $* failed, but not for \"$reason\":" >&2
    echo "$out" >&2
    exit 1
  fi
}

# Every document a mapping with apiVersion, kind and metadata.name; the kinds, sorted, as argv[1]
# says; a webhook configuration's caBundle the same CA as a rendered certificate Secret's.
VALIDATE='
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]
for d in docs:
    assert isinstance(d, dict) and d.get("apiVersion") and d.get("kind"), d
    assert d.get("metadata", {}).get("name"), d
kinds = " ".join(sorted(d["kind"] for d in docs))
assert kinds == sys.argv[1], "kinds: got [%s], want [%s]" % (kinds, sys.argv[1])
cas = [d["data"]["ca.crt"] for d in docs if d["kind"] == "Secret" and "ca.crt" in d.get("data", {})]
for d in docs:
    if d["kind"].endswith("WebhookConfiguration"):
        for w in d["webhooks"]:
            assert w["clientConfig"]["caBundle"] in cas or not cas, w["name"] + ": caBundle"
'
if "$PYTHON" -c 'import yaml' 2>/dev/null; then
  have_yaml=1
else
  have_yaml=0
  echo "helm: $PYTHON with yaml not found: rendered kinds checked, YAML parsing skipped"
fi

# Renders chart $1 with the values after $2, and checks the result has the kinds $2 (sorted,
# space-separated, one per object).
must_render() {
  local chart=$1 kinds=$2 out
  shift 2
  out=$("$HELM" template r "$chart" --namespace admitd-system "$@")
  if [ "$have_yaml" = 1 ]; then
    "$PYTHON" -c "$VALIDATE" "$kinds" <<<"$out" ||
      { echo "helm: rendering $chart with $*: unexpected output" >&2; exit 1; }
  else
    local got
    got=$(grep '^kind: ' <<<"$out" | cut -d' ' -f2 | LC_ALL=C sort | paste -sd' ')
    [ "$got" = "$kinds" ] ||
      { echo "helm: rendering $chart with $*: kinds [$got], want [$kinds]" >&2; exit 1; }
  fi
}

# Renders the admitd chart $1 with prometheusRule.enabled and the values after $2, and checks
# that the dashboards ConfigMap holds the dashboards' files unchanged and the PrometheusRule's spec
# is the rule file with the job selector replaced; $2 (JSON) says what else to expect: the
# ConfigMap's labels (exactly these beside the chart's) and namespace, the PrometheusRule's
# labels, namespace and jobRegex. Needs python3-yaml (skipped without).
OBSERVABILITY='
import glob, json, os, sys, yaml
chart, values = sys.argv[1], json.loads(sys.argv[2])
docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]
dash = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboards")]
rule = [d for d in docs if d["kind"] == "PrometheusRule"]
assert len(dash) == 1 and len(rule) == 1, "want one dashboards ConfigMap and one PrometheusRule"
dash, rule = dash[0], rule[0]
files = sorted(glob.glob(os.path.join(chart, "dashboards", "*.json")))
assert sorted(dash["data"]) == [os.path.basename(f) for f in files], sorted(dash["data"])
for f in files:
    with open(f) as fh:
        assert json.loads(dash["data"][os.path.basename(f)]) == json.load(fh), f
own = {k: v for k, v in dash["metadata"]["labels"].items() if "kubernetes.io/" not in k
       and not k.startswith("helm.sh/")}
assert own == values["labels"], ("dashboards labels", own)
assert dash["metadata"]["namespace"] == values["dashboardsNamespace"], dash["metadata"]
assert rule["apiVersion"] == "monitoring.coreos.com/v1"
assert rule["metadata"]["namespace"] == values["ruleNamespace"], rule["metadata"]
for k, v in values["ruleLabels"].items():
    assert rule["metadata"]["labels"].get(k) == v, ("rule label", k)
with open(os.path.join(chart, "prometheus", "admitd-rules.yaml")) as fh:
    text = fh.read().replace("job=~\"admitd.*\"", "job=~%s" % json.dumps(values["jobRegex"]))
assert rule["spec"] == yaml.safe_load(text), "the PrometheusRule spec differs from the rule file"
'
must_ship_observability() {
  local chart=$1 want=$2 out
  shift 2
  [ "$have_yaml" = 1 ] || { echo "helm: dashboards and rules content: skipped (no yaml)"; return; }
  out=$("$HELM" template r "$chart" --namespace admitd-system --set prometheusRule.enabled=true "$@")
  "$PYTHON" -c "$OBSERVABILITY" "$chart" "$want" <<<"$out" ||
    { echo "helm: rendering $chart with $*: dashboards or rules differ" >&2; exit 1; }
}

# Renders chart $1 with the values after $3, and checks that its webhook configurations hold the
# webhooks $2 (names sorted, space-separated) and that the shim's arguments hold $3 ("-": no
# --integrations flag).
must_have_webhooks() {
  local chart=$1 names=$2 integrations=$3 out got flag
  shift 3
  out=$("$HELM" template r "$chart" --namespace admitd-system "$@")
  got=$(grep -E '^  - name: [a-z]+\.kb\.io$' <<<"$out" | sed 's/.*name: //' | LC_ALL=C sort |
    paste -sd' ')
  [ "$got" = "$names" ] ||
    { echo "helm: rendering $chart with $*: webhooks [$got], want [$names]" >&2; exit 1; }
  flag=$(grep -oE -- '--integrations=[^ "]*' <<<"$out" || true)
  [ "${flag:--}" = "$integrations" ] ||
    { echo "helm: rendering $chart with $*: [$flag], want [$integrations]" >&2; exit 1; }
}

if [ -n "${HELM:-}" ] && [ ! -x "$HELM" ]; then
  echo "helm: HELM=$HELM is not an executable" >&2  # asked for explicitly, so not a skip
  exit 1
fi
HELM=${HELM:-$(command -v helm || true)}
if [ -n "$HELM" ]; then
  chart=helm/admitd
  "$HELM" lint --strict "$chart"
  # Two ConfigMaps: admitd's config and the Grafana dashboards.
  must_render "$chart" "ConfigMap ConfigMap Secret Service Service StatefulSet"
  must_render "$chart" "ConfigMap ConfigMap Secret Service Service StatefulSet" \
    --set config.featureGates.ElasticJobsViaWorkloadSlices=true \
    --set persistence.storageClass=fast --set service.port=443
  # TLS from a Secret of one's own; TLS off; client certificates, tokens and a policy.
  must_render "$chart" "ConfigMap ConfigMap Service Service StatefulSet" --set tls.secretName=mine
  must_render "$chart" "ConfigMap ConfigMap Service Service StatefulSet" --set tls.enabled=false
  must_render "$chart" "ConfigMap ConfigMap Secret Service Service StatefulSet" \
    -f "$chart/ci/auth-values.yaml"
  # Dashboards off; alerting rules on.
  must_render "$chart" "ConfigMap Secret Service Service StatefulSet" \
    --set grafanaDashboards.enabled=false
  must_render "$chart" "ConfigMap ConfigMap PrometheusRule Secret Service Service StatefulSet" \
    --set prometheusRule.enabled=true
  must_render "$chart" "ConfigMap PrometheusRule Secret Service Service StatefulSet" \
    --set prometheusRule.enabled=true --set grafanaDashboards.enabled=false
  must_ship_observability "$chart" '{"labels": {"grafana_dashboard": "1"},
    "dashboardsNamespace": "admitd-system", "ruleNamespace": "admitd-system", "ruleLabels": {},
    "jobRegex": "admitd.*"}'
  must_ship_observability "$chart" '{"labels": {"dashboards": "admitd"},
    "dashboardsNamespace": "monitoring", "ruleNamespace": "monitoring",
    "ruleLabels": {"release": "prom"}, "jobRegex": "admitd|r-admitd"}' \
    --set grafanaDashboards.labels.grafana_dashboard=null \
    --set grafanaDashboards.labels.dashboards=admitd --set grafanaDashboards.namespace=monitoring \
    --set prometheusRule.namespace=monitoring --set prometheusRule.labels.release=prom \
    --set 'prometheusRule.jobRegex=admitd|r-admitd'
  must_refuse "$chart" "tls.enabled needs metrics.enabled" --set metrics.enabled=false
  must_refuse "$chart" "auth.authenticationConfig needs tls.enabled" \
    -f "$chart/ci/auth-values.yaml" --set tls.enabled=false
  must_refuse "$chart" "replicaCount is 2" --set replicaCount=2
  must_refuse "$chart" "replicaCount is 0" --set replicaCount=0
  must_refuse "$chart" "/config/logLevel" --set config.logLevel=verbose
  must_refuse "$chart" "unknownKey" --set config.unknownKey=1
  must_refuse "$chart" "unknownKey" --set grafanaDashboards.unknownKey=1
  must_refuse "$chart" "unknownKey" --set prometheusRule.unknownKey=1
  must_refuse "$chart" "/prometheusRule/enabled" --set-string prometheusRule.enabled=yes
  echo "helm chart $chart: ok"

  chart=helm/admitd-shim
  required=(--set admitd.address=admitd.admitd-system.svc:50051 --set cluster.name=c1)
  all="ClusterRole ClusterRoleBinding Deployment MutatingWebhookConfiguration"
  all+=" PodDisruptionBudget Role RoleBinding Secret Service ServiceAccount"
  all+=" ValidatingWebhookConfiguration"
  "$HELM" lint --strict "$chart" "${required[@]}"
  must_render "$chart" "$all" "${required[@]}"
  must_render "$chart" "${all/Secret /}" "${required[@]}" \
    --set webhook.certificate.existingSecret=shim-cert --set webhook.certificate.caBundle=Q0E= \
    --set webhook.failurePolicy=Ignore --set manageJobsWithoutQueueName=true
  must_render "$chart" "ClusterRole ClusterRoleBinding Deployment ServiceAccount" "${required[@]}" \
    --set webhook.enabled=false --set leaderElection.enabled=false --set replicaCount=1
  must_have_webhooks "$chart" "mjob.kb.io vjob.kb.io" - "${required[@]}"
  must_render "$chart" "$all" "${required[@]}" --set integrations.pods=true
  # TLS to admitd with its CA, a client certificate and the projected token; and plaintext.
  secure=$("$HELM" template r "$chart" "${required[@]}" --set admitd.tls.caSecret=admitd-ca \
    --set admitd.tls.clientCertSecret=shim-client --set admitd.tls.serverName=admitd)
  for want in --admitd-ca-file=/etc/admitd-ca/ca.crt --admitd-cert-file= \
      --admitd-token-file=/var/run/secrets/admitd/token "audience: \"admitd\"" \
      "secretName: admitd-ca" "secretName: shim-client"; do
    grep -q -- "$want" <<<"$secure" ||
      { echo "helm: rendering $chart with admitd TLS: no $want" >&2; exit 1; }
  done
  plain=$("$HELM" template r "$chart" "${required[@]}" --set admitd.tls.enabled=false \
    --set admitd.token.enabled=false)
  if grep -q -- "--admitd-t" <<<"$plain"; then
    echo "helm: rendering $chart with admitd TLS off: TLS flags remain" >&2
    exit 1
  fi
  must_refuse "$chart" "admitd.token.enabled needs admitd.tls.enabled" "${required[@]}" \
    --set admitd.tls.enabled=false
  must_have_webhooks "$chart" "mjob.kb.io mpod.kb.io vjob.kb.io vpod.kb.io" \
    --integrations=batch/job,pod "${required[@]}" --set integrations.pods=true
  must_have_webhooks "$chart" "mjob.kb.io mraycluster.kb.io vjob.kb.io vraycluster.kb.io" \
    --integrations=batch/job,ray.io/raycluster "${required[@]}" --set integrations.rayclusters=true
  must_have_webhooks "$chart" \
    "mjob.kb.io mpod.kb.io mraycluster.kb.io vjob.kb.io vpod.kb.io vraycluster.kb.io" \
    --integrations=batch/job,pod,ray.io/raycluster "${required[@]}" \
    --set integrations.pods=true --set integrations.rayclusters=true
  grep -q 'rayclusters/status' <<<"$("$HELM" template r "$chart" "${required[@]}" \
    --set integrations.rayclusters=true)" ||
    { echo "helm: rendering $chart with integrations.rayclusters: no rayclusters/status rule" >&2
      exit 1; }
  # Mirroring: the flag and the rules for Kueue's Workloads; pods: the rule for pods/status.
  mirrored=$("$HELM" template r "$chart" "${required[@]}" --set mirrorWorkloads=true \
    --set integrations.pods=true)
  for want in --mirror-workloads workloads/status pods/status; do
    grep -q -- "$want" <<<"$mirrored" ||
      { echo "helm: rendering $chart with mirrorWorkloads and pods: no $want" >&2; exit 1; }
  done
  if "$HELM" template r "$chart" "${required[@]}" | grep -q -- '--mirror-workloads'; then
    echo "helm: $chart passes --mirror-workloads by default" >&2
    exit 1
  fi
  must_refuse "$chart" "/admitd" --set cluster.name=c1
  must_refuse "$chart" "/cluster" --set admitd.address=admitd:50051
  must_refuse "$chart" "/admitd/address" "${required[@]}" --set admitd.address=admitd
  must_refuse "$chart" "/replicaCount" "${required[@]}" --set replicaCount=0
  must_refuse "$chart" "/webhook/failurePolicy" "${required[@]}" --set webhook.failurePolicy=Maybe
  must_refuse "$chart" "unknownKey" "${required[@]}" --set unknownKey=1
  must_refuse "$chart" "/cluster/name" "${required[@]}" --set cluster.name=a/b
  must_refuse "$chart" "unknownKey" "${required[@]}" --set webhook.unknownKey=1
  must_refuse "$chart" "unknownKey" "${required[@]}" --set integrations.unknownKey=1
  must_refuse "$chart" "/integrations/pods" "${required[@]}" --set-string integrations.pods=yes
  must_refuse "$chart" "/integrations/rayclusters" "${required[@]}" \
    --set-string integrations.rayclusters=yes
  must_refuse "$chart" "/webhook/certificate/caBundle" "${required[@]}" \
    --set webhook.certificate.existingSecret=shim-cert
  must_refuse "$chart" "leaderElection.enabled=false" "${required[@]}" \
    --set leaderElection.enabled=false
  echo "helm chart $chart: ok"
else
  echo "helm charts: skipped: helm not found"
fi

if command -v docker-compose >/dev/null; then
  docker-compose -f docker-compose.yaml config -q
  echo "docker-compose.yaml: ok"
else
  echo "docker-compose.yaml: skipped: docker-compose not found"
fi
