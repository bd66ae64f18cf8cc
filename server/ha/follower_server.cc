#include "server/ha/follower_server.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "google/rpc/error_details.pb.h"
#include "server/grpc_status.h"
#include "server/health_names.h"

namespace admitd::ha {

absl::Status NotLeader(const std::string& domain, const LeaderInfo& leader) {
  google::rpc::ErrorInfo info;
  info.set_reason("NOT_LEADER");
  info.set_domain(std::string(kErrorDomain));
  std::string message =
      absl::StrCat("this admitd is a follower in HA domain ", domain, " and takes no calls; ");
  if (leader.term == 0) {
    absl::StrAppend(&message, "no leader is known yet: retry shortly");
  } else {
    absl::StrAppend(&message, "the leader is ", leader.id, " at ", leader.address, " (term ",
                    leader.term, ")");
    (*info.mutable_metadata())["leader"] = leader.address;
    (*info.mutable_metadata())["leaderId"] = leader.id;
    (*info.mutable_metadata())["term"] = absl::StrCat(leader.term);
  }
  absl::Status status = absl::UnavailableError(message);
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

// Every method gRPC does not know otherwise (all of admitd's) ends at once with NotLeader.
class FollowerServer::Refusals : public grpc::CallbackGenericService {
 public:
  explicit Refusals(FollowerServer* server) : server_(server) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refusal : public grpc::ServerGenericBidiReactor {
     public:
      explicit Refusal(grpc::Status status) { Finish(status); }
      void OnDone() override { delete this; }
    };
    LeaderInfo leader;
    {
      absl::MutexLock lock(&server_->mu_);
      leader = server_->leader_;
    }
    return new Refusal(ToGrpcStatus(NotLeader(server_->domain_, leader)));
  }

 private:
  FollowerServer* const server_;
};

FollowerServer::FollowerServer(std::string domain) : domain_(std::move(domain)) {}

FollowerServer::~FollowerServer() { Shutdown(); }

absl::StatusOr<int> FollowerServer::Start(const std::string& address,
                                          std::shared_ptr<grpc::ServerCredentials> credentials) {
  refusals_ = std::make_unique<Refusals>(this);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, std::move(credentials), &port);
  // The leader's server binds the same address before this one stops (server/ha/replica.h).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 1);
  builder.RegisterCallbackGenericService(refusals_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve on ", address));
  }
  server_->GetHealthCheckService()->SetServingStatus(false);
  // A follower is alive: a liveness probe must not restart it for not leading.
  server_->GetHealthCheckService()->SetServingStatus(kLivenessService, true);
  return port;
}

void FollowerServer::SetLeader(const LeaderInfo& leader) {
  absl::MutexLock lock(&mu_);
  leader_ = leader;
}

void FollowerServer::Shutdown() {
  if (server_ == nullptr) return;
  // Nothing a follower serves is worth waiting for: refusals end at once, and the clients'
  // health watches must end now, so that they reconnect to the leader's server on this address
  // and hear SERVING (a watch left open would say NOT_SERVING until cancelled).
  server_->Shutdown(absl::ToChronoTime(absl::Now()));
  server_->Wait();
  server_.reset();
}

}  // namespace admitd::ha
