#!/usr/bin/env bash
# CPU per workload cycle in admitd-bench's raw mode, a figure that stays meaningful when other
# work shares the cores (the cycle rate itself then swings by a factor of two).
#
#   scripts/raw_cpu_per_cycle.sh [ADMITD_BINARY] [ROUNDS]
#
# Runs `admitd-bench --raw 64 --seconds 8` (8 s of null RPCs, then 8 s of cycles), reads the
# utime+stime of admitd and of the generator from /proc from 10 s to 15 s after the start (inside
# the cycle phase), and divides by the phase's cycle rate; then admitd's CPU and context switches
# per cycle by thread name (gRPC's pollers and executor, the sequencer, the committer...).
set -euo pipefail
cd "$(dirname "$0")/.."
ADMITD=${1:-build/server/admitd}
ROUNDS=${2:-1}
BENCH=build/integration/bench/admitd-bench
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# One line per thread: id, name, user and system ticks, voluntary and involuntary switches.
threads() {
  awk '{ split(FILENAME, p, "/"); t = p[5] }
       FILENAME ~ /stat$/ {
         a = index($0, "("); b = index($0, ") ")
         name[t] = substr($0, a + 1, b - a - 1); gsub(/ /, "_", name[t])
         split(substr($0, b + 2), f, " "); u[t] = f[12]; s[t] = f[13]
       }
       /^voluntary_ctxt_switches/ { v[t] = $2 }
       /^nonvoluntary_ctxt_switches/ { n[t] = $2 }
       END { for (t in name) print t, name[t], u[t], s[t], v[t], n[t] }' \
    /proc/"$1"/task/*/stat /proc/"$1"/task/*/status 2>/dev/null || true
}
OUT=$(mktemp)
BEFORE=$(mktemp)
AFTER=$(mktemp)
trap 'rm -f "$OUT" "$BEFORE" "$AFTER"' EXIT
for _ in $(seq 1 "$ROUNDS"); do
  "$BENCH" --raw 64 --seconds 8 --admitd "$ADMITD" >"$OUT" 2>&1 &
  bench=$!
  sleep 1
  admitd=$(pgrep -P "$bench" | head -1)
  sleep 9
  a0=$(cpu "$admitd"); b0=$(cpu "$bench"); t0=$(date +%s.%N); threads "$admitd" >"$BEFORE"
  sleep 5
  a1=$(cpu "$admitd"); b1=$(cpu "$bench"); t1=$(date +%s.%N); threads "$admitd" >"$AFTER"
  wait "$bench"
  cycles=$(awk '/^workload cycle/ {print $(NF-2)}' "$OUT")
  pings=$(awk '/^null RPC/ {print $(NF-2)}' "$OUT")
  awk -v a="$((a1 - a0))" -v b="$((b1 - b0))" -v t0="$t0" -v t1="$t1" -v tck="$TCK" \
      -v c="$cycles" -v p="$pings" 'BEGIN {
    dt = t1 - t0; ac = a / tck / dt; bc = b / tck / dt;
    printf "null RPC/s %d  cycles/s %d  admitd %.2f cores, %.0f ms CPU per 1000 cycles;" \
           "  generator %.2f cores, %.0f ms per 1000 cycles\n", p, c, ac, ac * 1e6 / c, bc, bc * 1e6 / c
  }'
  # Per thread name, over the same window: µs of user and system CPU and switches per cycle.
  printf '  %-16s %9s %9s %9s\n' "admitd thread" "user us" "sys us" "switches"
  awk -v c="$cycles" -v dt="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" -v tck="$TCK" '
    FNR == NR { u[$1] = $3; s[$1] = $4; v[$1] = $5; n[$1] = $6; next }
    { name[$2] = 1; U[$2] += $3 - u[$1]; S[$2] += $4 - s[$1]; V[$2] += $5 - v[$1] + $6 - n[$1] }
    END {
      k = c * dt; if (k <= 0) exit
      for (t in name) {
        us = U[t] / tck * 1e6 / k; sy = S[t] / tck * 1e6 / k
        if (us + sy >= 0.5) printf "  %-16s %9.1f %9.1f %9.2f\n", t, us, sy, V[t] / k
      }
    }' "$BEFORE" "$AFTER" | sort -k2,2 -rn
done
