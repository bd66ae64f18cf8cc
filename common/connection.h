// How a client of the project reaches admitd: the channel to its gRPC port, in plaintext or TLS
// (the server verified against a CA bundle, optionally a client certificate for mTLS, both files
// re-read when they change), and a bearer token sent with every call (read from a file for each
// call, so a rotating service-account token is always the current one).
//
// The replicas of an HA group (docs/high-availability.md) are reached as one: given all their
// addresses, the channel watches each one's gRPC health and sends calls only to the one that
// serves (the leader; followers say NOT_SERVING), calls wait for a leader while there is none
// (a failover), and the calls that are safe to repeat (reads, Apply, Submit: a Submit of the same
// uid never makes a second Workload) are tried again when the leader goes away under them.
//
//   ConnectionOptions options;
//   options.target = "admitd.example.com:50051";
//   options.ca_file = "/etc/admitd/ca.crt";
//   options.token_file = "/var/run/secrets/tokens/admitd";
//   ADMITD_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, Connect(options));
//
// Thread safety: Connect may be called from any thread; channels are thread-safe.
#ifndef ADMITD_COMMON_CONNECTION_H_
#define ADMITD_COMMON_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace admitd {

struct ConnectionOptions {
  // host:port, or a gRPC target URI (dns:///name:port); or the replicas of an HA group as a
  // comma-separated list of host:port (each host resolved once, when connecting).
  std::string target = "localhost:50051";
  // Follow the leader among the addresses the target resolves to (implied by a list): for a
  // name that resolves to every replica, e.g. a Kubernetes headless Service.
  bool follow_leader = false;
  // TLS. Implied by any of the files or the token below.
  bool tls = false;
  std::string ca_file;    // CA bundle the server's certificate must chain to; empty: the system's
  std::string cert_file;  // client certificate (mTLS), with key_file
  std::string key_file;
  std::string server_name;  // the name checked in the server's certificate; empty: the target's
  // A bearer token: read from token_file before each call, or the literal token.
  std::string token_file;
  std::string token;
};

// The options' flags for command-line tools (`--tls`, `--ca-file`, `--cert-file`, `--key-file`,
// `--server-name`, `--token-file`), with the environment's defaults (ADMITD_CA_FILE,
// ADMITD_CERT_FILE, ADMITD_KEY_FILE, ADMITD_TOKEN_FILE, ADMITD_TOKEN) applied first.
ConnectionOptions ConnectionOptionsFromEnvironment(const std::string& target);

// A channel with the options' credentials. INVALID_ARGUMENT for a certificate without its key
// (or the reverse), or a list whose entries are not host:port or do not resolve to addresses of
// one family; FAILED_PRECONDITION naming a file that cannot be read. Call credentials
// (the token) need TLS: gRPC does not send them in plaintext.
absl::StatusOr<std::shared_ptr<grpc::Channel>> Connect(
    const ConnectionOptions& options, grpc::ChannelArguments args = grpc::ChannelArguments());

}  // namespace admitd

#endif  // ADMITD_COMMON_CONNECTION_H_
