# admitd, admitctl and admitd-shim on Debian 12, built from Debian's own gRPC, Protobuf, Abseil
# and RocksDB so that the runtime stage can take the same versions as plain shared-library
# packages.
#
#   docker build -t admitd:0.1.0 .
#   docker run -p 50051:50051 -v admitd-data:/var/lib/admitd admitd:0.1.0
#
# The cluster shim runs from the same image with its own command (see helm/admitd-shim).

# Build stage. GTest, gmock and Google Benchmark are only configure-time requirements here (the
# top-level CMakeLists.txt finds them unconditionally); only the three binaries are built. clang and
# libclang-rt-14-dev are the sanitizer and fuzzing toolchain of `scripts/dev.sh test`, so the same
# image can run the whole test suite.
FROM debian:12 AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto \
      libabsl-dev librocksdb-dev libzstd-dev libyaml-cpp-dev libcli11-dev libssl-dev nlohmann-json3-dev libcpp-httplib-dev \
      libcurl4-openssl-dev libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev \
      prometheus-cpp-dev libjemalloc-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    && cmake --build build --target admitd admitctl admitd-shim \
    && strip build/server/admitd build/clients/admitctl build/clients/shim/admitd-shim

# Runtime stage: only the shared libraries the binaries load. Debian's RocksDB CMake package links
# librocksdb.a, so librocksdb7.8 is there for what that archive needs at run time (snappy, lz4,
# zstd, bz2) and keeps working if the link turns dynamic. libcurl4 is the shim's HTTP client,
# libprometheus-cpp-core1.0 the metrics of both, libjemalloc2 the allocator of both;
# the openssl command issues certificates (docker-compose.yaml's certs service, docs/security.md).
FROM debian:12-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 librocksdb7.8 libyaml-cpp0.7 \
      libcpp-httplib0.11 libcurl4 libprometheus-cpp-core1.0 libjemalloc2 libzstd1 openssl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 admitd \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/admitd --create-home \
         --shell /usr/sbin/nologin admitd
COPY --from=build /src/build/server/admitd /src/build/clients/admitctl \
     /src/build/clients/shim/admitd-shim /usr/local/bin/
COPY clients/examples /usr/share/admitd/examples
# A fixed numeric uid, so Kubernetes' runAsNonRoot can verify it and fsGroup can match it.
USER 10001:10001
# The RocksDB store. A fresh named volume takes this directory's owner (admitd), so the server
# can write to it without running as root.
VOLUME /var/lib/admitd
EXPOSE 50051 9090
# No HEALTHCHECK: Debian ships no grpc.health.v1 client (grpc_health_probe is not packaged), and a
# probe that lists queues would tie the image to one admitctl command. Kubernetes probes
# grpc.health.v1 natively (see helm/admitd); docker-compose.yaml defines its own check.
#
# Exec form, so admitd is PID 1 and receives SIGTERM itself: it flips health to NOT_SERVING,
# drains in-flight calls for up to 10 s and closes RocksDB cleanly. Flags given after the image
# name replace CMD (for example --config FILE; flags win over the file). Serving every interface
# needs TLS (--tls-cert-file, --tls-private-key-file) or, explicitly, --allow-insecure-listen:
# the default CMD serves plaintext, for trying the image on one machine.
ENTRYPOINT ["admitd", "--listen", "0.0.0.0:50051", "--data-dir", "/var/lib/admitd"]
CMD ["--allow-insecure-listen"]
