#!/usr/bin/env bash
# CPU per workload cycle in admitd-bench's raw mode, a figure that stays meaningful when other
# work shares the cores (the cycle rate itself then swings by a factor of two).
#
#   scripts/raw_cpu_per_cycle.sh [ADMITD_BINARY] [ROUNDS]
#
# Runs `admitd-bench --raw 64 --seconds 8` (8 s of null RPCs, then 8 s of cycles), reads the
# utime+stime of admitd and of the generator from /proc from 10 s to 15 s after the start (inside
# the cycle phase), and divides by the phase's cycle rate.
set -euo pipefail
cd "$(dirname "$0")/.."
ADMITD=${1:-build/server/admitd}
ROUNDS=${2:-1}
BENCH=build/integration/bench/admitd-bench
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for _ in $(seq 1 "$ROUNDS"); do
  "$BENCH" --raw 64 --seconds 8 --admitd "$ADMITD" >"$OUT" 2>&1 &
  bench=$!
  sleep 1
  admitd=$(pgrep -P "$bench" | head -1)
  sleep 9
  a0=$(cpu "$admitd"); b0=$(cpu "$bench"); t0=$(date +%s.%N)
  sleep 5
  a1=$(cpu "$admitd"); b1=$(cpu "$bench"); t1=$(date +%s.%N)
  wait "$bench"
  cycles=$(awk '/^workload cycle/ {print $(NF-2)}' "$OUT")
  pings=$(awk '/^null RPC/ {print $(NF-2)}' "$OUT")
  awk -v a="$((a1 - a0))" -v b="$((b1 - b0))" -v t0="$t0" -v t1="$t1" -v tck="$TCK" \
      -v c="$cycles" -v p="$pings" 'BEGIN {
    dt = t1 - t0; ac = a / tck / dt; bc = b / tck / dt;
    printf "null RPC/s %d  cycles/s %d  admitd %.2f cores, %.0f ms CPU per 1000 cycles;" \
           "  generator %.2f cores, %.0f ms per 1000 cycles\n", p, c, ac, ac * 1e6 / c, bc, bc * 1e6 / c
  }'
done
