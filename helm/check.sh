#!/usr/bin/env bash
# Checks the deployment files with whichever tools are present, skipping what is absent, so CI
# can run it on a machine with or without them:
#   helm (from $HELM, else PATH): lint --strict, render, and make sure bad values are refused;
#   docker-compose: validate docker-compose.yaml (a schema check; no engine is needed).
set -euo pipefail
cd "$(dirname "$0")/.."
chart=helm/admitd

# Fails the script unless rendering the chart with these --set values fails.
must_refuse() {
  if "$HELM" template r "$chart" "$@" >/dev/null 2>&1; then
    echo "helm: rendering with $* should have failed" >&2
    exit 1
  fi
}

if [ -n "${HELM:-}" ] && [ ! -x "$HELM" ]; then
  echo "helm: HELM=$HELM is not an executable" >&2  # asked for explicitly, so not a skip
  exit 1
fi
HELM=${HELM:-$(command -v helm || true)}
if [ -n "$HELM" ]; then
  "$HELM" lint --strict "$chart"
  "$HELM" template r "$chart" >/dev/null
  "$HELM" template r "$chart" --set config.featureGates.ElasticJobsViaWorkloadSlices=true \
    --set persistence.storageClass=fast --set service.port=443 >/dev/null
  must_refuse --set replicaCount=2
  must_refuse --set replicaCount=0
  must_refuse --set config.logLevel=verbose
  must_refuse --set config.unknownKey=1
  echo "helm chart: ok"
else
  echo "helm chart: skipped: helm not found"
fi

if command -v docker-compose >/dev/null; then
  docker-compose -f docker-compose.yaml config -q
  echo "docker-compose.yaml: ok"
else
  echo "docker-compose.yaml: skipped: docker-compose not found"
fi
