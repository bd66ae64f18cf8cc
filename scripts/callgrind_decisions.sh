#!/usr/bin/env bash
# Instructions per Submit-and-admit decision of the engine, counted by valgrind's callgrind
# (repeatable on a busy machine, unlike timings), for this tree's build and, when BASE is given,
# for the engine of git revision BASE built with the same driver.
#
#   scripts/callgrind_decisions.sh [--build-dir DIR] [BASE]
#
# The driver, server/engine/engine_decisions, makes N decisions (engine_bench's
# BM_SubmitAndAdmit: 100 ClusterQueues with room for all, one-pod workloads). It runs twice, with
# N1 and N2 decisions; (Ir(N2) - Ir(N1)) / (N2 - N1) leaves out start-up, set-up and the final
# teardown (the driver never destroys its engine: freeing the admitted workloads at exit would
# grow with N). BASE is checked out in a temporary worktree, the driver and its fixture are copied
# in (they use only the engine's public API), and its engine_decisions is built in
# ${TMPDIR:-/tmp}/admitd-decisions-<rev>-<driver hash> (kept for the next run with the same
# driver), with jemalloc, the allocator this tree's programs link.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build"
if [[ "${1:-}" == "--build-dir" ]]; then build=$2; shift 2; fi
base=${1:-}
n1=${N1:-1000}
n2=${N2:-3000}

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

# Total instructions callgrind counted for one run of `$1 N`.
count() {
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" 2>"$out" >/dev/null
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out"
  rm -f "$out"
}

# Instructions per decision of the binary $1.
per_decision() {
  local a b
  a=$(count "$1" "$n1")
  b=$(count "$1" "$n2")
  echo $(( (b - a) / (n2 - n1) ))
}

build_base() {
  local rev dir tree driver
  rev=$(git -C "$here" rev-parse --short "$1")
  driver=$(cat "$here/server/engine/engine_decisions.cc" "$here/server/engine/engine_bench_fixture.h" |
    sha256sum | cut -c1-12)
  dir="${TMPDIR:-/tmp}/admitd-decisions-$rev-$driver"
  tree="$dir/src"
  if [[ ! -x "$dir/build/server/engine/engine_decisions" ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    git -C "$here" worktree add --detach -f "$tree" "$rev" >/dev/null 2>&1
    cp "$here/server/engine/engine_decisions.cc" "$here/server/engine/engine_bench_fixture.h" \
       "$tree/server/engine/"
    grep -q engine_decisions "$tree/server/engine/CMakeLists.txt" ||
      echo 'admitd_bench(engine_decisions SRCS engine_decisions.cc DEPS admitd_engine)' \
        >> "$tree/server/engine/CMakeLists.txt"
    # The same allocator as this tree's driver (admitd_allocator), so the figures compare the
    # engines, not the allocators.
    grep -q admitd_allocator "$tree/cmake/AdmitdHelpers.cmake" ||
      echo 'target_link_libraries(engine_decisions PRIVATE jemalloc)' \
        >> "$tree/server/engine/CMakeLists.txt"
    cmake -S "$tree" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$dir/build" --target engine_decisions -j"$(nproc)" >/dev/null
    git -C "$here" worktree remove --force "$tree" >/dev/null 2>&1 || true
  fi
  echo "$dir/build/server/engine/engine_decisions"
}

# Built every time: an incremental build, so the figure is never that of a stale driver.
  cmake --build "$build" --target engine_decisions -j"$(nproc)" >/dev/null

head_ir=$(per_decision "$build/server/engine/engine_decisions")
printf 'instructions per Submit-and-admit decision (callgrind, N %d -> %d)\n' "$n1" "$n2"
printf '  this tree           %10d\n' "$head_ir"
if [[ -n "$base" ]]; then
  base_bin=$(build_base "$base")
  base_ir=$(per_decision "$base_bin")
  printf '  %-19s %10d\n' "$(git -C "$here" rev-parse --short "$base")" "$base_ir"
  awk -v h="$head_ir" -v b="$base_ir" 'BEGIN { printf "  this tree / base    %10.3f\n", h / b }'
fi
