# Build stage: Debian 12's toolchain and libraries, the same packages the quick start installs.
FROM debian:12 AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
      protobuf-compiler grpc-proto libabsl-dev librocksdb-dev libyaml-cpp-dev \
      libgtest-dev libgmock-dev libbenchmark-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    && cmake --build build --target admitd admitctl

# Runtime stage: only the shared libraries the two binaries need.
FROM debian:12-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 librocksdb7.8 libyaml-cpp0.7 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --home-dir /var/lib/admitd --create-home admitd
COPY --from=build /src/build/server/admitd /src/build/clients/admitctl /usr/local/bin/
COPY clients/examples /usr/share/admitd/examples
USER admitd
VOLUME /var/lib/admitd
EXPOSE 50051
# No HEALTHCHECK: Debian ships no gRPC health probe binary; orchestrators probe
# grpc.health.v1 directly (the Helm chart uses Kubernetes' gRPC probes).
ENTRYPOINT ["admitd", "--listen", "0.0.0.0:50051", "--data-dir", "/var/lib/admitd"]
