#!/usr/bin/env bash
# The quick start: installs what is missing (Debian 12 packages), builds, and then
#   serve  runs admitd on localhost:50051 with its embedded RocksDB in ./data and the demo
#          queues of clients/examples/demo.yaml applied, until Ctrl-C;
#   test   runs every test (ctest), then the sanitizer build's unit tests and a bounded run of
#          each fuzz target (see docs/testing.md; SANITIZE=0 skips that part).
#   sanitize  only the sanitizer part of `test`.
#   build  only builds.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config ccache clang libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev librocksdb-dev libyaml-cpp-dev libssl-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev nlohmann-json3-dev
  python3 python3-kubernetes
)
BUILD_DIR=${BUILD_DIR:-build}
SANITIZE_BUILD_DIR=${SANITIZE_BUILD_DIR:-build-asan}
LISTEN=${ADMITD_LISTEN:-localhost:50051}
DATA_DIR=${ADMITD_DATA_DIR:-data}

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "==> installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  echo "==> building in $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)"
}

# clang with AddressSanitizer and UndefinedBehaviorSanitizer, at -O1 with line tables only (fast to
# build, still symbolized): the unit tests (not the integration tests or benchmarks) and the fuzz
# targets, which CTest runs for ADMITD_FUZZ_SECONDS each from a copy of fuzz/corpus/.
sanitize() {
  echo "==> sanitizer build in $SANITIZE_BUILD_DIR (clang, ASan+UBSan, fuzz targets)"
  cmake -S . -B "$SANITIZE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DADMITD_SANITIZE=ON -DADMITD_FUZZ=ON >/dev/null
  cmake --build "$SANITIZE_BUILD_DIR" -j"$(nproc)" --target unit_tests fuzzers
  echo "==> unit tests under ASan+UBSan, then each fuzz target"
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$SANITIZE_BUILD_DIR" --output-on-failure -j2 --timeout 600 -L 'unit|fuzz'
}

serve() {
  mkdir -p "$DATA_DIR"
  "$BUILD_DIR/server/admitd" --listen "$LISTEN" --data-dir "$DATA_DIR" "$@" &
  local pid=$!
  trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
  local ctl="$BUILD_DIR/clients/admitctl --server $LISTEN"
  for _ in $(seq 1 100); do
    $ctl get clusterqueues >/dev/null 2>&1 && break
    kill -0 $pid 2>/dev/null || { wait $pid; exit 1; }
    sleep 0.1
  done
  $ctl apply -f clients/examples/demo.yaml
  cat <<TXT

admitd serves on $LISTEN (data in $DATA_DIR). Try, in another shell:
  $ctl get clusterqueues
  $ctl submit -f clients/examples/sample-job.yaml
  $ctl get workloads -n default
  $ctl admit sample-job -n default --wait
Ctrl-C stops it cleanly.
TXT
  wait $pid
}

cmd=${1:-}
shift || true
case "$cmd" in
  serve) install_missing; build; serve "$@" ;;
  test)
    install_missing; build
    echo "==> testing"
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600 "$@"
    [ "${SANITIZE:-1}" = 0 ] || sanitize
    ;;
  sanitize) install_missing; sanitize ;;
  build) install_missing; build ;;
  *) echo "usage: scripts/dev.sh serve|test|sanitize|build" >&2; exit 2 ;;
esac
