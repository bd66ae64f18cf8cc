#!/bin/sh
# Load for the compose stack's dashboards (docker-compose.yaml's demo-load service): applies
# compose/demo-queues.yaml, then round after round submits low-priority workloads that make
# team-a borrow from team-b, and a high-priority one in team-b that takes its quota back. There
# is no cluster behind admitd here, so this script plays the jobs' part: it stops what was
# evicted (the preempted workloads requeue), finishes what was admitted, and deletes finished
# workloads a round later so the store stays small.
#
# admitctl takes the server and the TLS files from ADMITD_SERVER, ADMITD_CA_FILE,
# ADMITD_CERT_FILE and ADMITD_KEY_FILE. DEMO_LOAD_ROUNDS ends after that many rounds (default 0:
# never); DEMO_LOAD_PAUSE is the pause between the steps of a round in seconds (default 2).
set -eu
ns=demo
rounds=${DEMO_LOAD_ROUNDS:-0}
pause=${DEMO_LOAD_PAUSE:-2}
# Names stay unique across restarts of this script against the same store.
run=$(date +%s)

# name, LocalQueue, WorkloadPriorityClass, pods; each pod asks for 1 CPU and 1Gi.
workload() {
  cat <<YAML
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  namespace: $ns
  name: $1
spec:
  queueName: $2
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: $3}
  podSets:
  - name: main
    count: $4
    template:
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: "1", memory: 1Gi}}
YAML
}

# The names of the workloads in a state (the STATE column of `admitctl get workloads`).
in_state() {
  admitctl get workloads -n "$ns" | awk -v state="$1" 'NR > 1 && $5 == state { print $2 }'
}

admitctl apply -f "$(dirname "$0")/demo-queues.yaml" >/dev/null
round=1
while [ "$rounds" -eq 0 ] || [ "$round" -le "$rounds" ]; do
  for name in $(in_state Finished); do
    admitctl delete workload "$name" -n "$ns" >/dev/null || true
  done
  # 6 CPUs asked of team-a (4 nominal): two borrowed from team-b.
  { workload "w$run-$round-a1" team-a demo-low 2
    workload "w$run-$round-a2" team-a demo-low 2
    workload "w$run-$round-a3" team-a demo-low 2; } | admitctl apply -f - >/dev/null
  sleep "$pause"
  # team-b wants its 4 back: a borrowing team-a workload is preempted.
  workload "w$run-$round-b1" team-b demo-high 4 | admitctl apply -f - >/dev/null
  sleep "$pause"
  for name in $(in_state Evicted); do
    admitctl release "$name" -n "$ns" --stopped >/dev/null || true
  done
  sleep "$pause"
  for name in $(in_state Admitted); do
    admitctl release "$name" -n "$ns" --finished >/dev/null || true
  done
  echo "round $round done"
  round=$((round + 1))
done
