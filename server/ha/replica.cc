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
  ADMITD_ASSIGN_OR_RETURN(r->local_, store::Store::Open(r->LocalStoreOptions()));
  ADMITD_ASSIGN_OR_RETURN(r->etcd_, EtcdClient::Create({.endpoints = config.ha_etcd_endpoints,
                                                         .ca_file = config.ha_etcd_ca_file,
                                                         .cert_file = config.ha_etcd_cert_file,
                                                         .key_file = config.ha_etcd_key_file}));
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
  if (!config.metrics_listen.empty()) {
    ADMITD_RETURN_IF_ERROR(r->StartFollowerEndpoint({.tls = security.metrics}));
  }
  ADMITD_LOG(kInfo, "listening",
             {{"addr", r->config_.listen}, {"role", "follower"}, {"metrics", r->config_.metrics_listen}});
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

store::StoreOptions Replica::LocalStoreOptions() const {
  store::StoreOptions options = AdmitdServer::StoreOptionsFor(config_);
  // The log in etcd is what is durable: a batch is acknowledged once etcd's quorum has it. What
  // a crash of the machine takes from the local store's tail, the log gives back (or, once
  // trimmed past it, a snapshot): no fsync per batch here.
  options.sync = false;
  return options;
}

bool Replica::ShutDown(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&shutdown_), wait);
  return shutdown_;
}

void Replica::Run() {
  // Follow: bootstrap when the log cannot bring this store up to date, apply the log, and
  // campaign a second at a time once the store follows the log.
  int failures = 0;
  while (!ShutDown(absl::ZeroDuration())) {
    absl::Status followed = FollowOnce();
    if (followed.ok()) {
      failures = 0;
    } else if (++failures, (failures & (failures - 1)) == 0) {  // the 1st, 2nd, 4th... failure
      ADMITD_LOG(kWarning, "cannot follow the replicated log; retrying",
                 {{"error", followed.ToString()}, {"attempts", absl::StrCat(failures)}});
    }
    absl::StatusOr<LeaderInfo> leader = election_->Leader();
    if (leader.ok()) {
      follower_->SetLeader(*leader);
      status_.SetTerm(leader->term);
      absl::MutexLock lock(&mu_);
      last_leader_ = *leader;
    } else if (absl::IsNotFound(leader.status())) {
      follower_->SetLeader(LeaderInfo{});
    }
    if (!followed.ok()) {
      // Not up to date: never a candidate. Wait a little before trying again.
      if (ShutDown(absl::Seconds(1))) return;
      continue;
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
  if (absl::StatusOr<ReplicatedLog::State> state = log_->ReadState(); state.ok()) {
    (void)WriteLogId(state->id);  // the log this store follows, named by its first leader
  }
  Unregister();  // a leader's entry would hold trimming back at its last follower revision
  follower_http_.reset();  // the leader's server serves --metrics-listen from here on
  auto store = std::make_unique<ReplicatedStore>(std::move(local_), log_.get(),
                                                 config_.ha_commits_in_flight);
  leader_store_ = store.get();
  status_.Leading(election_->term(), revision,
                  [s = leader_store_] { return s->revision(); });
  snapshots_ = std::make_unique<SnapshotService>(config_.ha_domain, leader_store_, config_.data_dir);
  absl::StatusOr<std::unique_ptr<AdmitdServer>> server = AdmitdServer::Start(
      config_, [] { return absl::Now(); }, std::move(store), {snapshots_.get()});
  if (!server.ok()) {
    ADMITD_LOG(kError, "elected, but cannot serve; exiting",
               {{"error", server.status().ToString()}});
    std::_Exit(1);
  }
  follower_->Shutdown();
  status_.AddTo((*server)->metrics_registry());
  // A snapshot holds every object: under an authorization policy, only a caller that may run
  // the scheduler (an admin, or the replicas' own identity) gets one.
  snapshots_->SetAuthorizer([s = server->get()](const grpc::ServerContextBase& rpc) {
    return s->Authorize(rpc, {.verb = auth::Verb::kRun, .resource = auth::Resource::kScheduler});
  });
  (*server)->RecordEvent(LeaderElectedEvent(absl::Now() - elected));
  ADMITD_LOG(kInfo, "leading",
             {{"domain", config_.ha_domain},
              {"term", absl::StrCat(election_->term())},
              {"revision", absl::StrCat(revision)},
              {"took", absl::FormatDuration(absl::Now() - elected)}});
  {
    absl::MutexLock lock(&mu_);
    server_ = *std::move(server);
  }
  TrimLoop();
}

absl::Status Replica::StartFollowerEndpoint(const HttpEndpointOptions& options) {
  follower_metrics_ = std::make_unique<MetricsRegistry>();
  status_.AddTo(*follower_metrics_);
  HttpEndpoint::Routes routes;
  routes["/metrics"] = [m = follower_metrics_.get()] {
    return HttpReply{200, kPrometheusTextType, m->Render()};
  };
  routes["/healthz"] = [] { return HttpReply{200, kPrometheusTextType, "ok\n"}; };
  routes["/readyz"] = [this] {
    LeaderInfo leader;
    {
      absl::MutexLock lock(&mu_);
      leader = last_leader_;
    }
    return HttpReply{503, kPrometheusTextType,
                     absl::StrCat(NotLeader(config_.ha_domain, leader).message(), "\n")};
  };
  absl::StatusOr<std::unique_ptr<HttpEndpoint>> endpoint =
      HttpEndpoint::Start(config_.metrics_listen, std::move(routes), options);
  if (!endpoint.ok()) {
    return absl::Status(endpoint.status().code(),
                        absl::StrCat("--metrics-listen: ", endpoint.status().message()));
  }
  follower_http_ = *std::move(endpoint);
  // Port 0 chooses a port once: the leader's server later serves the same one.
  if (absl::EndsWith(config_.metrics_listen, ":0")) {
    config_.metrics_listen = absl::StrCat(
        config_.metrics_listen.substr(0, config_.metrics_listen.size() - 1), follower_http_->port());
  }
  return absl::OkStatus();
}

::admitd::v1::Event Replica::LeaderElectedEvent(absl::Duration took) const {
  LeaderInfo previous;
  {
    absl::MutexLock lock(&mu_);
    previous = last_leader_;
  }
  ::admitd::v1::Event event;
  ::admitd::v1::ObjectReference* about = event.mutable_regarding();
  about->set_api_version("admitd.io/v1");
  about->set_kind("HADomain");
  about->set_name(config_.ha_domain);
  event.set_type("Normal");
  event.set_reason("LeaderElected");
  event.set_action("LeaderElected");
  event.set_reporting_controller("admitd-ha");
  event.set_user(absl::StrCat("replica ", id_));
  std::string note = absl::StrCat(id_, " at ", address_, " leads HA domain ", config_.ha_domain,
                                  " (term ", election_->term(), ")");
  if (previous.term != 0) {
    absl::StrAppend(&note, " after ", previous.id, " (term ", previous.term, ")");
  }
  absl::StrAppend(&note, "; it took the log over and served in ", absl::FormatDuration(took));
  event.set_note(std::move(note));
  return event;
}

void Replica::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
  }
  if (runner_.joinable()) runner_.join();
  if (server_ != nullptr) server_->Shutdown(grace);
  Unregister();
  if (follower_ != nullptr) follower_->Shutdown();
  follower_http_.reset();
  if (election_ != nullptr) (void)election_->Resign();
}

}  // namespace admitd::ha
