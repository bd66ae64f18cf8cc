#!/usr/bin/env bash
# Lints and renders the Helm chart, and validates docker-compose.yaml, with whichever tools are
# present (helm from $HELM or PATH; docker-compose). Skips what is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM=${HELM:-$(command -v helm || true)}
if [ -n "$HELM" ]; then
  "$HELM" lint --strict helm/admitd
  "$HELM" template r helm/admitd >/dev/null
  if "$HELM" template r helm/admitd --set replicaCount=2 >/dev/null 2>&1; then
    echo "helm: replicaCount=2 should have been refused" >&2
    exit 1
  fi
  echo "helm chart: ok"
else
  echo "helm chart: skipped (helm not found)"
fi
if command -v docker-compose >/dev/null; then
  docker-compose -f docker-compose.yaml config -q
  echo "docker-compose.yaml: ok"
else
  echo "docker-compose.yaml: skipped (docker-compose not found)"
fi
