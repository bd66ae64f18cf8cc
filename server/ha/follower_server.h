// What a follower replica serves (docs/high-availability.md): gRPC health says NOT_SERVING for
// every service name but "liveness" (SERVING: the process runs), so a Kubernetes Service with a gRPC readiness probe routes to the leader
// only, and every other call answers UNAVAILABLE naming the leader: in the message, and in a
// google.rpc.ErrorInfo (reason NOT_LEADER, domain admitd.io, metadata leader, leaderId and term)
// that clients follow.
//
//   FollowerServer follower;
//   ADMITD_RETURN_IF_ERROR(follower.Start("0.0.0.0:50051", credentials));
//   follower.SetLeader(info);  // whenever the leader changes
//   follower.Shutdown();       // before the replica serves as leader on the same address
//
// Thread safety: SetLeader may be called from any thread while the server runs.
#ifndef ADMITD_SERVER_HA_FOLLOWER_SERVER_H_
#define ADMITD_SERVER_HA_FOLLOWER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/ha/leader_election.h"

namespace admitd::ha {

// The refusal of a call made to a follower while `leader` leads (leader.term 0: none known).
absl::Status NotLeader(const std::string& domain, const LeaderInfo& leader);

class FollowerServer {
 public:
  explicit FollowerServer(std::string domain);
  ~FollowerServer();

  // Serves on `address`; the port bound (the one chosen when `address` asks for port 0).
  // UNAVAILABLE when it cannot be bound.
  absl::StatusOr<int> Start(const std::string& address,
                            std::shared_ptr<grpc::ServerCredentials> credentials);
  void SetLeader(const LeaderInfo& leader);
  void Shutdown();

 private:
  class Refusals;
  const std::string domain_;
  absl::Mutex mu_;
  LeaderInfo leader_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Refusals> refusals_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_FOLLOWER_SERVER_H_
