#include "server/ha/replica.h"

#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "server/ha/replicated_store.h"
#include "server/transport_security.h"

namespace admitd::ha {
namespace {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "admitd";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Replica>> Replica::Start(const Config& config) {
  std::unique_ptr<Replica> r(new Replica(config));
  ADMITD_ASSIGN_OR_RETURN(TransportSecurity security, MakeTransportSecurity(config));
  ADMITD_ASSIGN_OR_RETURN(r->local_, store::Store::Open(AdmitdServer::StoreOptionsFor(config)));
  ADMITD_ASSIGN_OR_RETURN(r->etcd_, EtcdClient::Create({.endpoints = config.ha_etcd_endpoints}));
  ElectionOptions election;
  election.domain = config.ha_domain;
  election.id = config.ha_id.empty() ? HostName() : config.ha_id;
  election.address = config.ha_advertise_address;  // set below when empty: the bound address
  election.ttl = config.ha_lease_ttl;
  election.on_lost = [domain = config.ha_domain, id = election.id] {
    // Its engine holds state nobody else will accept, and the fence already refuses its writes:
    // a restart as a follower is the way back.
    ADMITD_LOG(kError, "lost the leadership; exiting to start again as a follower",
               {{"domain", domain}, {"id", id}});
    std::_Exit(kLostLeadership);
  };
  r->follower_ = std::make_unique<FollowerServer>(config.ha_domain);
  ADMITD_ASSIGN_OR_RETURN(const int port, r->follower_->Start(config.listen, security.grpc));
  // Port 0 chooses a port once: the leader's server later binds the same one.
  if (absl::EndsWith(config.listen, ":0")) {
    r->config_.listen = absl::StrCat(config.listen.substr(0, config.listen.size() - 1), port);
  }
  ADMITD_LOG(kInfo, "listening", {{"addr", r->config_.listen}, {"role", "follower"}});
  if (election.address.empty()) election.address = r->config_.listen;
  r->id_ = election.id;
  r->address_ = election.address;
  r->election_ = std::make_unique<LeaderElection>(r->etcd_.get(), std::move(election));
  LogOptions log;
  log.domain = config.ha_domain;
  r->log_ = std::make_unique<ReplicatedLog>(r->etcd_.get(), r->election_.get(), std::move(log));
  ADMITD_LOG(kInfo, "following", {{"domain", config.ha_domain},
                                  {"revision", absl::StrCat(r->local_->revision())}});
  r->runner_ = std::thread([r = r.get()] { r->Run(); });
  return r;
}

Replica::~Replica() { Shutdown(absl::Seconds(10)); }

bool Replica::ShutDown(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&shutdown_), wait);
  return shutdown_;
}

void Replica::Run() {
  // Follow: apply the log, and campaign a second at a time.
  int failures = 0;
  while (!ShutDown(absl::ZeroDuration())) {
    absl::StatusOr<uint64_t> applied = log_->CatchUp(local_.get());
    if (applied.ok()) {
      failures = 0;
    } else if (++failures, (failures & (failures - 1)) == 0) {  // the 1st, 2nd, 4th... failure
      ADMITD_LOG(kWarning, "cannot apply the replicated log; retrying",
                 {{"error", applied.status().ToString()}, {"attempts", absl::StrCat(failures)}});
    }
    absl::StatusOr<LeaderInfo> leader = election_->Leader();
    if (leader.ok()) {
      follower_->SetLeader(*leader);
    } else if (absl::IsNotFound(leader.status())) {
      follower_->SetLeader(LeaderInfo{});
    }
    if (election_->Campaign(absl::Now() + absl::Seconds(1)).ok()) break;
  }
  if (ShutDown(absl::ZeroDuration())) return;

  // Lead: the log first, then the whole server on the follower's address. Meanwhile the
  // follower's server refuses calls naming this replica, the leader to retry with. The leader's
  // server binds the address beside it (SO_REUSEPORT) before it stops, so no connection is
  // refused in between: a client connected to the follower's server is told to go away and
  // reconnects at once.
  const absl::Time elected = absl::Now();
  ADMITD_LOG(kInfo, "elected", {{"domain", config_.ha_domain},
                                {"term", absl::StrCat(election_->term())},
                                {"revision", absl::StrCat(local_->revision())}});
  follower_->SetLeader(LeaderInfo{.id = id_, .address = address_, .term = election_->term()});
  while (true) {
    absl::Status taken = log_->TakeOver(local_.get());
    if (taken.ok()) break;
    ADMITD_LOG(kWarning, "cannot take the replicated log over yet; retrying",
               {{"error", taken.ToString()}});
    if (ShutDown(absl::Milliseconds(200))) return;
  }
  const uint64_t revision = local_->revision();
  auto store = std::make_unique<ReplicatedStore>(std::move(local_), log_.get());
  absl::StatusOr<std::unique_ptr<AdmitdServer>> server =
      AdmitdServer::Start(config_, [] { return absl::Now(); }, std::move(store));
  if (!server.ok()) {
    ADMITD_LOG(kError, "elected, but cannot serve; exiting",
               {{"error", server.status().ToString()}});
    std::_Exit(1);
  }
  follower_->Shutdown();
  ADMITD_LOG(kInfo, "leading",
             {{"domain", config_.ha_domain},
              {"term", absl::StrCat(election_->term())},
              {"revision", absl::StrCat(revision)},
              {"took", absl::FormatDuration(absl::Now() - elected)}});
  absl::MutexLock lock(&mu_);
  server_ = *std::move(server);
}

void Replica::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
  }
  if (runner_.joinable()) runner_.join();
  if (server_ != nullptr) server_->Shutdown(grace);
  if (follower_ != nullptr) follower_->Shutdown();
  if (election_ != nullptr) (void)election_->Resign();
}

}  // namespace admitd::ha
