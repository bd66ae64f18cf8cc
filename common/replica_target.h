// How a channel reaches the replicas of an HA group as one (docs/high-availability.md): the
// gRPC target of a list of replica addresses, and the service config that makes a channel send
// its calls to the leader only.
//
// The service config asks gRPC's round_robin balancer to watch every address's gRPC health (the
// server-wide name "") and to pick only addresses that say SERVING: a leader does, a follower
// says NOT_SERVING. Every call waits for such an address (waitForReady) instead of failing while
// the group has no leader, and the calls that are safe to repeat (reads, Apply, Submit: a Submit
// of a uid admitd already holds answers with that Workload) are retried after UNAVAILABLE, e.g.
// when the leader dies with the call in flight. Connect (common/connection.h) also shortens
// gRPC's first reconnection backoff to 100 ms for such channels.
//
//   std::string authority;
//   ADMITD_ASSIGN_OR_RETURN(std::string target, ReplicaListTarget("a:50051,b:50051", &authority));
//   args.SetServiceConfigJSON(FollowLeaderServiceConfig());
//
// Thread safety: pure functions (ReplicaListTarget resolves host names with getaddrinfo).
#ifndef ADMITD_COMMON_REPLICA_TARGET_H_
#define ADMITD_COMMON_REPLICA_TARGET_H_

#include <string>

#include "absl/status/statusor.h"

namespace admitd {

// Whether `target` is a list of replica addresses (it holds a comma).
bool IsReplicaList(const std::string& target);

// "ipv4:1.2.3.4:50051,1.2.3.5:50051" (or ipv6:[...]:port,...) for "host:port,host:port,...":
// every host resolved now, each to its first address (IPv4 before IPv6). `authority` is set to the first entry
// (the name TLS checks unless a server name is given). INVALID_ARGUMENT naming the entry that
// is not host:port or does not resolve, or when the addresses mix IPv4 and IPv6.
absl::StatusOr<std::string> ReplicaListTarget(const std::string& list, std::string* authority);

// The service config JSON described above.
const std::string& FollowLeaderServiceConfig();

}  // namespace admitd

#endif  // ADMITD_COMMON_REPLICA_TARGET_H_
