#!/usr/bin/env bash
# The quick start: installs what is missing (Debian 12 packages), builds, and then
#   serve  runs admitd on localhost:50051 with its embedded RocksDB in ./data and the demo
#          queues of clients/examples/demo.yaml applied, until Ctrl-C;
#   test   runs every test (ctest).
#   build  only builds.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev librocksdb-dev libyaml-cpp-dev libssl-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
BUILD_DIR=${BUILD_DIR:-build}
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
    ;;
  build) install_missing; build ;;
  *) echo "usage: scripts/dev.sh serve|test|build" >&2; exit 2 ;;
esac
