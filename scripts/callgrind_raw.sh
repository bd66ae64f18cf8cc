#!/usr/bin/env bash
# Instructions admitd executes per workload cycle and per null RPC in admitd-bench's raw mode, by
# thread, counted by valgrind's callgrind: user-space work only (no kernel, no waiting), the same
# whatever else shares the machine, so builds compare where timings swing.
#
#   scripts/callgrind_raw.sh [ADMITD_BINARY] [CLIENTS] [PHASE_SECONDS]
#
# admitd (default build/server/admitd) runs under callgrind with instrumentation off; the
# generator (admitd-bench --raw CLIENTS --seconds PHASE_SECONDS --server ..., defaults 64 and 30)
# drives it. In each phase the counters are zeroed at 25% of the phase and dumped at 85%; the
# calls in that window are the phase's rate (printed by the generator) times its length, so
# the figures are per call give or take the rate's swing inside a phase. Threads are named from
# /proc in creation order (callgrind numbers them the same way while none has exited).
set -euo pipefail
cd "$(dirname "$0")/.."
ADMITD=${1:-build/server/admitd}
CLIENTS=${2:-64}
PHASE=${3:-30}
BENCH=build/integration/bench/admitd-bench
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
dir=$(mktemp -d)
vg=""
# KEEP=1 keeps the callgrind files and logs (their folder is printed).
cleanup() {
  [ -n "$vg" ] && kill "$vg" 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "files in $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --separate-threads=yes --instr-atstart=no \
  --callgrind-out-file="$dir/cg.%p" "$ADMITD" --listen "127.0.0.1:$port" --data-dir "$dir/data" \
  >"$dir/admitd.log" 2>&1 &
vg=$!
for _ in $(seq 1 600); do
  grep -q "listening" "$dir/admitd.log" 2>/dev/null && break
  sleep 0.1
done
"$BENCH" --raw "$CLIENTS" --seconds "$PHASE" --server "127.0.0.1:$port" >"$dir/bench.out" 2>&1 &
bench=$!
window=$(awk -v p="$PHASE" 'BEGIN { print p * 0.6 }')
# Zeroes the counters inside the phase that `$1` announces, and dumps them as `$2`.
measure() {
  until grep -q "$1" "$dir/bench.out"; do sleep 0.2; done
  sleep "$(awk -v p="$PHASE" 'BEGIN { print p * 0.25 }')"
  callgrind_control -i on "$vg" >/dev/null 2>&1
  callgrind_control -z "$vg" >/dev/null 2>&1
  sleep "$window"
  callgrind_control -d "$2" "$vg" >/dev/null 2>&1
  callgrind_control -i off "$vg" >/dev/null 2>&1
}
measure "null RPC phase begins" ping
measure "workload cycle phase begins" cycle
ls /proc/"$vg"/task | sort -n >"$dir/tids"
while read -r t; do tr ' ' '_' <"/proc/$vg/task/$t/comm"; done <"$dir/tids" >"$dir/names"
wait "$bench" || true
pings=$(awk '/^null RPC \(/ {print $(NF-2)}' "$dir/bench.out")
cycles=$(awk '/^workload cycle \(/ {print $(NF-2)}' "$dir/bench.out")
echo "admitd under callgrind: $pings null RPCs/s, $cycles workload cycles/s ($CLIENTS clients)"
grep "^commits in the cycle phase" "$dir/bench.out" || true
# Instructions per thread of the dump `$1`: "thread-number instructions" lines.
totals() {
  awk -v want="dump $1" '
    FNR == 1 { thread = ""; trigger = "" }
    /^thread:/ { thread = $2 }
    /^desc: Trigger:/ { sub(/^desc: Trigger: /, ""); trigger = $0 }
    /^summary:/ { if (trigger == want) print thread, $2 }' "$dir"/cg.*.*-*
}
totals ping >"$dir/ping.tot"
totals cycle >"$dir/cycle.tot"
awk -v p="$pings" -v c="$cycles" -v w="$window" '
  FILENAME ~ /names$/ { name[FNR] = $1; next }
  FILENAME ~ /ping.tot$/ { pi[$1] += $2; next }
  { ci[$1] += $2; seen[$1] = 1 }
  END {
    for (t in seen) { n = (t in name) ? name[t] : "thread-" t; C[n] += ci[t]; P[n] += pi[t] }
    printf "%-18s %14s %14s\n", "admitd thread", "instr/cycle", "instr/null RPC"
    for (n in C) {
      tc += C[n]; tp += P[n]
      if (C[n] / (c * w) >= 100) printf "%-18s %14.0f %14.0f\n", n, C[n] / (c * w), P[n] / (p * w) | "sort -k2,2nr"
    }
    close("sort -k2,2nr")
    printf "%-18s %14.0f %14.0f   (%.2fx)\n", "all", tc / (c * w), tp / (p * w), (tc / (c * w)) / (tp / (p * w))
  }' "$dir/names" "$dir/ping.tot" "$dir/cycle.tot"
