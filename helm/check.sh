#!/usr/bin/env bash
# Checks the deployment files with whichever tools are present, skipping what is absent, so CI
# can run it on a machine with or without them (`scripts/dev.sh test` fetches helm and sets HELM):
#   helm (from $HELM, else PATH): lint --strict each chart, render it with several sets of values
#     (admitd alone and as an HA group), check that the rendered YAML parses and has the expected
#     kinds and shape (with Debian's python3-yaml), and make sure bad values are refused, each for
#     the reason given;
#   docker-compose: validate docker-compose.yaml with and without its ha profile (a schema check;
#     no engine is needed), and the ha profile's services against each other.
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

# Renders the admitd chart $1 in HA mode with the values after $2, and checks the group's shape
# against $2 (JSON: replicas, tls, etcdTLS (a Secret name or null), antiAffinity, domain,
# endpoints, leaseTTL): a StatefulSet of that many replicas started in parallel and replaced by
# hand (OnDelete), each pod passing its name as --ha-id and its stable name through the peers
# Service as --ha-advertise-address (plus the etcd certificate flags and mount only with
# etcdTLS); readiness that only the leader passes and startup and liveness that followers pass;
# a peers Service that publishes not-ready pods; a budget that never blocks a drain; the
# anti-affinity; the ha section of the config file. Needs python3-yaml (skipped without).
# shellcheck disable=SC2016  # $(POD_NAME) is Kubernetes' expansion, expected as it is
HA_CHECK='
import json, sys, yaml
want = json.loads(sys.argv[1])
ns, name = "admitd-system", "r-admitd"
docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]
def one(kind, obj_name=name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == obj_name]
    assert len(found) == 1, "want one %s %s" % (kind, obj_name)
    return found[0]
sts, peers, pdb = one("StatefulSet"), one("Service", name + "-headless"), one("PodDisruptionBudget")
spec = sts["spec"]
assert spec["replicas"] == want["replicas"], spec["replicas"]
assert spec["podManagementPolicy"] == "Parallel", spec.get("podManagementPolicy")
assert spec["updateStrategy"] == {"type": "OnDelete"}, spec.get("updateStrategy")
assert spec["serviceName"] == peers["metadata"]["name"]
assert peers["spec"]["clusterIP"] == "None" and peers["spec"]["publishNotReadyAddresses"] is True
pod = spec["template"]["spec"]
(c,) = pod["containers"]
args = c["args"]
assert args[:3] == ["--config=/etc/admitd/admitd.yaml", "--ha-id=$(POD_NAME)",
    "--ha-advertise-address=$(POD_NAME).%s-headless.%s.svc:50051" % (name, ns)], args
env = {e["name"]: e for e in c["env"]}
assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}, env
etcd_flags = [a for a in args if a.startswith("--ha-etcd-")]
mounts = {m["name"]: m for m in c["volumeMounts"]}
volumes = {v["name"]: v for v in pod["volumes"]}
if want["etcdTLS"]:
    d = "/etc/admitd-etcd-tls"
    assert etcd_flags == ["--ha-etcd-ca-file=%s/ca.crt" % d, "--ha-etcd-cert-file=%s/tls.crt" % d,
                          "--ha-etcd-key-file=%s/tls.key" % d], etcd_flags
    assert mounts["etcd-tls"]["mountPath"] == d and mounts["etcd-tls"]["readOnly"] is True
    assert volumes["etcd-tls"]["secret"]["secretName"] == want["etcdTLS"]
    assert sorted(i["key"] for i in volumes["etcd-tls"]["secret"]["items"]) == \
        ["ca.crt", "tls.crt", "tls.key"]
else:
    assert not etcd_flags and "etcd-tls" not in mounts and "etcd-tls" not in volumes, etcd_flags
startup, live, ready = c["startupProbe"], c["livenessProbe"], c["readinessProbe"]
if want["tls"]:
    for probe, path in ((startup, "/healthz"), (live, "/healthz"), (ready, "/readyz")):
        assert probe["httpGet"] == {"scheme": "HTTPS", "port": "metrics", "path": path}, probe
else:
    for probe in (startup, live):
        assert probe["grpc"] == {"port": 50051, "service": "liveness"}, probe
    assert ready["grpc"].get("service", "") == "" and ready["grpc"]["port"] == 50051, ready
labels = spec["selector"]["matchLabels"]
assert pdb["apiVersion"] == "policy/v1" and pdb["spec"]["selector"]["matchLabels"] == labels
assert pdb["spec"]["minAvailable"] == 0 and "maxUnavailable" not in pdb["spec"], pdb["spec"]
assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow", pdb["spec"]
term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
anti = pod["affinity"]["podAntiAffinity"]
if want["antiAffinity"] == "required":
    assert anti == {"requiredDuringSchedulingIgnoredDuringExecution": [term]}, anti
else:
    assert anti == {"preferredDuringSchedulingIgnoredDuringExecution":
                    [{"weight": 100, "podAffinityTerm": term}]}, anti
config = yaml.safe_load(one("ConfigMap")["data"]["admitd.yaml"])
assert config["ha"] == {"etcdEndpoints": want["endpoints"], "domain": want["domain"],
                        "leaseTTL": want["leaseTTL"]}, config["ha"]
assert not config.get("manualScheduling"), config
'
must_form_ha_group() {
  local chart=$1 want=$2 out
  shift 2
  [ "$have_yaml" = 1 ] || { echo "helm: HA group content: skipped (no yaml)"; return; }
  out=$("$HELM" template r "$chart" --namespace admitd-system --set ha.enabled=true "$@")
  "$PYTHON" -c "$HA_CHECK" "$want" <<<"$out" ||
    { echo "helm: rendering $chart in HA mode with $*: not the expected group" >&2; exit 1; }
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
  # Alone (the default): no HA flag, no ha section, no disruption budget (the kinds above).
  if "$HELM" template r "$chart" | grep -qE -- '--ha-|^    ha:'; then
    echo "helm: rendering $chart without ha.enabled: HA settings present" >&2
    exit 1
  fi
  # HA: a group of replicas on etcd, leader-only readiness, a budget; with several value sets.
  etcd=(--set 'ha.etcd.endpoints={etcd-0.etcd:2379,etcd-1.etcd:2379,etcd-2.etcd:2379}')
  endpoints='["etcd-0.etcd:2379", "etcd-1.etcd:2379", "etcd-2.etcd:2379"]'
  "$HELM" lint --strict "$chart" --set ha.enabled=true "${etcd[@]}" --set ha.etcd.tls=etcd-client \
    >/dev/null || { echo "helm: lint of $chart in HA mode failed" >&2; exit 1; }
  group="PodDisruptionBudget Secret Service Service StatefulSet"
  must_render "$chart" "ConfigMap ConfigMap $group" --set ha.enabled=true "${etcd[@]}"
  must_render "$chart" "ConfigMap ConfigMap ${group/Secret /}" --set ha.enabled=true "${etcd[@]}" \
    --set tls.enabled=false
  must_render "$chart" "ConfigMap ${group/Secret/PrometheusRule Secret}" --set ha.enabled=true \
    "${etcd[@]}" -f "$chart/ci/auth-values.yaml" --set grafanaDashboards.enabled=false \
    --set prometheusRule.enabled=true
  must_form_ha_group "$chart" '{"replicas": 3, "tls": true, "etcdTLS": null,
    "antiAffinity": "preferred", "domain": "admitd-system-r-admitd", "leaseTTL": "5s",
    "endpoints": '"$endpoints"'}' "${etcd[@]}"
  must_form_ha_group "$chart" '{"replicas": 5, "tls": false, "etcdTLS": "etcd-client",
    "antiAffinity": "required", "domain": "queues", "leaseTTL": "2s",
    "endpoints": ["10.0.0.7:2379"]}' --set 'ha.etcd.endpoints={10.0.0.7:2379}' \
    --set ha.replicas=5 --set tls.enabled=false --set ha.etcd.tls=etcd-client \
    --set ha.podAntiAffinity=required --set ha.domain=queues --set ha.leaseTTL=2s
  # A podAntiAffinity of one's own replaces the chart's; the rest of affinity is kept.
  node=affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
  node+=".nodeSelectorTerms[0].matchExpressions[0]"
  anti="affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
  own=$("$HELM" template r "$chart" --set ha.enabled=true "${etcd[@]}" --set "$node.key=pool" \
    --set "$node.operator=Exists" --set "$anti.weight=7" --set "$anti.podAffinityTerm.topologyKey=zone")
  for want in "key: pool" "weight: 7" "topologyKey: zone"; do
    grep -q -- "$want" <<<"$own" ||
      { echo "helm: rendering $chart in HA mode with an affinity: no $want" >&2; exit 1; }
  done
  if grep -q "kubernetes.io/hostname" <<<"$own"; then
    echo "helm: rendering $chart in HA mode: the chart's anti-affinity overrode the given one" >&2
    exit 1
  fi
  # The serving certificate the chart makes names every replica (the followers' hint).
  if command -v openssl >/dev/null && [ "$have_yaml" = 1 ]; then
    sans=$("$HELM" template r "$chart" --namespace admitd-system --set ha.enabled=true \
      "${etcd[@]}" |
      "$PYTHON" -c 'import base64, sys, yaml
[sys.stdout.write(base64.b64decode(d["data"]["tls.crt"]).decode())
 for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "Secret"]' |
      openssl x509 -noout -ext subjectAltName)
    for want in "DNS:*.r-admitd-headless.admitd-system.svc" "DNS:r-admitd.admitd-system.svc"; do
      grep -qF -- "$want" <<<"$sans" ||
        { echo "helm: the HA serving certificate does not name $want: $sans" >&2; exit 1; }
    done
  fi
  must_refuse "$chart" "ha.enabled needs ha.etcd.endpoints" --set ha.enabled=true
  must_refuse "$chart" "replicaCount is 3, but must stay 1" --set ha.enabled=true "${etcd[@]}" \
    --set replicaCount=3
  must_refuse "$chart" "ha.enabled does not go with config.manualScheduling" --set ha.enabled=true \
    "${etcd[@]}" --set config.manualScheduling=true
  must_refuse "$chart" "/ha/replicas" --set ha.enabled=true "${etcd[@]}" --set ha.replicas=1
  must_refuse "$chart" "/ha/etcd/endpoints/0" --set ha.enabled=true \
    --set 'ha.etcd.endpoints={etcd-0.etcd}'
  must_refuse "$chart" "/ha/etcd/endpoints/0" --set ha.enabled=true \
    --set 'ha.etcd.endpoints={http://etcd:2379}'
  must_refuse "$chart" "/ha/podAntiAffinity" --set ha.enabled=true "${etcd[@]}" \
    --set ha.podAntiAffinity=sometimes
  must_refuse "$chart" "/ha/leaseTTL" --set ha.enabled=true "${etcd[@]}" --set ha.leaseTTL=5
  must_refuse "$chart" "/ha/domain" --set ha.enabled=true "${etcd[@]}" --set ha.domain=a/b
  must_refuse "$chart" "/ha/enabled" --set-string ha.enabled=yes
  must_refuse "$chart" "unknownKey" --set ha.unknownKey=1
  must_refuse "$chart" "unknownKey" --set ha.etcd.unknownKey=1
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
  must_have_webhooks "$chart" "mjob.kb.io mjobset.kb.io vjob.kb.io vjobset.kb.io" \
    --integrations=batch/job,jobset.x-k8s.io/jobset "${required[@]}" \
    --set integrations.jobsets=true
  must_have_webhooks "$chart" "mjob.kb.io mrayjob.kb.io vjob.kb.io vrayjob.kb.io" \
    --integrations=batch/job,ray.io/rayjob "${required[@]}" --set integrations.rayjobs=true
  must_have_webhooks "$chart" \
    "mjob.kb.io mpod.kb.io mpytorchjob.kb.io mraycluster.kb.io mrayjob.kb.io vjob.kb.io vpod.kb.io vpytorchjob.kb.io vraycluster.kb.io vrayjob.kb.io" \
    --integrations=batch/job,pod,ray.io/raycluster,ray.io/rayjob,kubeflow.org/pytorchjob \
    "${required[@]}" --set integrations.pods=true --set integrations.rayclusters=true \
    --set integrations.rayjobs=true --set integrations.pytorchjobs=true
  must_have_webhooks "$chart" \
    "mdeployment.kb.io mjob.kb.io mpod.kb.io mstatefulset.kb.io vdeployment.kb.io vjob.kb.io vpod.kb.io vstatefulset.kb.io" \
    --integrations=batch/job,deployment,statefulset "${required[@]}" \
    --set integrations.deployments=true --set integrations.statefulsets=true
  grep -q 'resources: \[replicasets\]' <<<"$("$HELM" template r "$chart" "${required[@]}" \
    --set integrations.deployments=true)" ||
    { echo "helm: rendering $chart with integrations.deployments: no replicasets rule" >&2
      exit 1; }
  grep -q 'pods/status' <<<"$("$HELM" template r "$chart" "${required[@]}" \
    --set integrations.deployments=true)" ||
    { echo "helm: rendering $chart with integrations.deployments: no pods/status rule" >&2
      exit 1; }
  must_have_webhooks "$chart" "mjob.kb.io mpytorchjob.kb.io vjob.kb.io vpytorchjob.kb.io" \
    --integrations=batch/job,kubeflow.org/pytorchjob "${required[@]}" \
    --set integrations.pytorchjobs=true
  grep -q 'jobsets/status' <<<"$("$HELM" template r "$chart" "${required[@]}" \
    --set integrations.jobsets=true)" ||
    { echo "helm: rendering $chart with integrations.jobsets: no jobsets/status rule" >&2
      exit 1; }
  grep -q 'rayclusters/status' <<<"$("$HELM" template r "$chart" "${required[@]}" \
    --set integrations.rayclusters=true)" ||
    { echo "helm: rendering $chart with integrations.rayclusters: no rayclusters/status rule" >&2
      exit 1; }
  # A MultiKueue worker: the flag, and create/delete on the kinds it makes objects of.
  worker=$("$HELM" template r "$chart" "${required[@]}" --set multikueueWorker=true \
    --set integrations.jobsets=true)
  for want in '--multikueue-worker' 'patch, create, delete\]'; do
    grep -q -- "$want" <<<"$worker" ||
      { echo "helm: rendering $chart with multikueueWorker: no $want" >&2; exit 1; }
  done
  # A worker whose kinds run as pods (Deployments) creates the pods its copies carry.
  grep -q 'patch, delete, create\]' <<<"$("$HELM" template r "$chart" "${required[@]}" \
    --set multikueueWorker=true --set integrations.deployments=true)" ||
    { echo "helm: rendering $chart with multikueueWorker and deployments: no pods create" >&2
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

# The compose file as docker-compose resolves it: the ha profile's etcd members and admitd
# replicas carry that profile and nothing else does, so a plain `up` starts what it did before;
# each replica names itself after its service, advertises its service name and lists every etcd
# member; each member and replica has a volume of its own.
COMPOSE_HA='
import sys, yaml
services = yaml.safe_load(sys.stdin)["services"]
ha = {n for n, s in services.items() if "profiles" in s}
etcd = sorted(n for n in ha if n.startswith("etcd-"))
replicas = sorted(n for n in ha if n.startswith("admitd-ha-"))
assert len(etcd) == 3 and len(replicas) == 3 and ha == set(etcd + replicas), sorted(ha)
for name in ha:
    assert services[name]["profiles"] == ["ha"], name
for name, s in services.items():
    if name not in ha:
        assert not set(s.get("depends_on", {})) & ha, name + " depends on the ha profile"
endpoints = ",".join("%s:2379" % n for n in etcd)
volumes = []
for name in replicas:
    cmd = services[name]["command"]
    flags = dict(zip(cmd[1::2], cmd[2::2]))
    assert cmd[0] == "--allow-insecure-listen", cmd
    assert flags == {"--ha-etcd-endpoints": endpoints, "--ha-domain": "compose",
                     "--ha-id": name, "--ha-advertise-address": name + ":50051"}, flags
    assert set(services[name]["depends_on"]) == set(etcd), name
    volumes += [v.split(":")[0] for v in services[name]["volumes"]]
for name in etcd:
    cmd = services[name]["command"]
    flags = dict(zip(cmd[0::2], cmd[1::2]))
    assert flags["--name"] == name and flags["--initial-cluster-state"] == "new", flags
    assert flags["--initial-cluster"] == ",".join("%s=http://%s:2380" % (m, m) for m in etcd)
    assert flags["--advertise-client-urls"] == "http://%s:2379" % name, flags
    assert flags["--initial-advertise-peer-urls"] == "http://%s:2380" % name, flags
    volumes += [v.split(":")[0] for v in services[name]["volumes"]]
assert len(set(volumes)) == len(volumes) == 6, volumes
'
if command -v docker-compose >/dev/null; then
  docker-compose -f docker-compose.yaml config -q
  docker-compose -f docker-compose.yaml --profile ha config -q
  if [ "$have_yaml" = 1 ]; then
    docker-compose -f docker-compose.yaml --profile ha config | "$PYTHON" -c "$COMPOSE_HA" ||
      { echo "docker-compose.yaml: the ha profile is not the expected group" >&2; exit 1; }
  fi
  echo "docker-compose.yaml: ok (and the ha profile)"
else
  echo "docker-compose.yaml: skipped: docker-compose not found"
fi
