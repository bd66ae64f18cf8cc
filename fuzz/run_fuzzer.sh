#!/usr/bin/env bash
# Runs one fuzz target for a bounded time from a copy of its seed corpus, so the repository's
# corpus is never modified:  run_fuzzer.sh FUZZER CORPUS_DIR [SECONDS] [libFuzzer flags...]
# A crash leaves the reproducer (crash-*, leak-*, timeout-*) in ./fuzz-artifacts/ of the working
# directory and fails; replay it with `FUZZER ARTIFACT`.
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=${3:-20}
shift $(( $# < 3 ? $# : 3 ))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$corpus"/. "$work"/
artifacts=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# -rss_limit_mb: a target may hold a few engines' worth of state; -timeout: one input at most 10 s.
# -seed: the same mutations on every run (FUZZ_SEED=0 lets libFuzzer pick one), so a bounded run in
# CI fails only on inputs that any run of it reaches.
exec "$fuzzer" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -seed="${FUZZ_SEED:-1}" \
  -max_len=4096 -artifact_prefix="$artifacts/" -print_final_stats=1 "$@"
