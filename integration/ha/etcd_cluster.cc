#include "integration/ha/etcd_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "server/ha/etcd_client.h"

namespace admitd::testing {
namespace {

constexpr char kEtcd[] = "/usr/bin/etcd";

// `n` distinct loopback ports nothing listens on right now (held open together while chosen, so
// no port is handed out twice).
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    fds.push_back(fd);
    ports.push_back(port);
  }
  for (int fd : fds) close(fd);
  return ports;
}

std::string Url(int port) { return absl::StrCat("http://127.0.0.1:", port); }

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(int members,
                                                                const std::string& dir,
                                                                absl::Duration timeout,
                                                                std::optional<EtcdTls> tls) {
  if (access(kEtcd, X_OK) != 0) {
    return absl::UnavailableError(absl::StrCat(kEtcd, " is missing: install etcd-server"));
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat(dir, ": ", error.message()));
  // A port picked free can be taken by another process before etcd binds it (tests run side by
  // side): then the member exits, and the cluster starts again on new ports.
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = StartOnce(members, dir, timeout, tls);
    if (cluster.ok()) return cluster;
    last = cluster.status();
  }
  return last;
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::StartOnce(int members,
                                                                    const std::string& dir,
                                                                    absl::Duration timeout,
                                                                    const std::optional<EtcdTls>& tls) {
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
  cluster->tls_ = tls;
  std::vector<std::string> peers;
  const std::vector<int> ports = FreePorts(2 * members);
  for (int i = 0; i < members; ++i) {
    Member m;
    m.name = absl::StrCat("m", i);
    m.data_dir = absl::StrCat(dir, "/", m.name);
    m.log_path = absl::StrCat(dir, "/", m.name, ".log");
    m.client_port = ports[2 * i];
    m.peer_port = ports[2 * i + 1];
    std::filesystem::remove_all(m.data_dir);
    peers.push_back(absl::StrCat(m.name, "=", Url(m.peer_port)));
    cluster->members_.push_back(std::move(m));
  }
  cluster->initial_cluster_ = absl::StrJoin(peers, ",");
  for (Member& m : cluster->members_) {
    if (absl::Status s = cluster->Spawn(m, /*existing=*/false); !s.ok()) return s;
  }
  const absl::Time until = absl::Now() + timeout;
  for (const Member& m : cluster->members_) {
    if (absl::Status s = cluster->WaitUntilServing(m, until); !s.ok()) return s;
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() {
  for (int i = 0; i < static_cast<int>(members_.size()); ++i) Kill(i);
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (const Member& m : members_) out.push_back(absl::StrCat("127.0.0.1:", m.client_port));
  return out;
}

void EtcdCluster::Kill(int member) {
  Member& m = members_.at(member);
  if (m.pid <= 0) return;
  kill(m.pid, SIGKILL);
  waitpid(m.pid, nullptr, 0);
  m.pid = -1;
}

absl::Status EtcdCluster::Restart(int member, absl::Duration timeout) {
  Member& m = members_.at(member);
  Kill(member);
  if (absl::Status s = Spawn(m, /*existing=*/true); !s.ok()) return s;
  return WaitUntilServing(m, absl::Now() + timeout);
}

std::string EtcdCluster::Log(int member) const {
  std::ifstream in(members_.at(member).log_path);
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  return log.size() > 4000 ? log.substr(log.size() - 4000) : log;
}

std::string EtcdCluster::ClientUrl(int port) const {
  return absl::StrCat(tls_.has_value() ? "https" : "http", "://127.0.0.1:", port);
}

absl::Status EtcdCluster::Spawn(Member& m, bool existing) {
  std::vector<std::string> args = {
      kEtcd,
      "--name", m.name,
      "--data-dir", m.data_dir,
      "--listen-client-urls", ClientUrl(m.client_port),
      "--advertise-client-urls", ClientUrl(m.client_port),
      "--listen-peer-urls", Url(m.peer_port),
      "--initial-advertise-peer-urls", Url(m.peer_port),
      "--initial-cluster", initial_cluster_,
      "--initial-cluster-state", existing ? "existing" : "new",
      "--initial-cluster-token", "admitd-test",
      "--heartbeat-interval", "100",
      "--election-timeout", "1000",
      "--logger", "zap",
      "--log-level", "warn",
  };
  if (tls_.has_value()) {
    args.insert(args.end(), {"--cert-file", tls_->cert_file, "--key-file", tls_->key_file,
                             "--trusted-ca-file", tls_->ca_file, "--client-cert-auth"});
  }
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    const int fd = open(m.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(kEtcd, argv.data());
    _exit(127);
  }
  m.pid = pid;
  return absl::OkStatus();
}

absl::Status EtcdCluster::WaitUntilServing(const Member& m, absl::Time until) {
  etcdserverpb::RangeRequest probe;
  probe.set_key("/admitd-test/probe");
  absl::Status last;
  while (absl::Now() < until) {
    if (waitpid(m.pid, nullptr, WNOHANG) == m.pid) {
      return absl::UnavailableError(absl::StrCat("etcd member ", m.name, " exited: ", m.log_path));
    }
    // A new client each time: a channel that found nothing listening waits out gRPC's reconnect
    // backoff (a second and growing) before it tries again.
    ha::EtcdOptions options{.endpoints = {absl::StrCat("127.0.0.1:", m.client_port)},
                            .call_timeout = absl::Milliseconds(500)};
    if (tls_.has_value()) {
      options.ca_file = tls_->ca_file;
      options.cert_file = tls_->client_cert_file;
      options.key_file = tls_->client_key_file;
    }
    absl::StatusOr<std::unique_ptr<ha::EtcdClient>> client = ha::EtcdClient::Create(options);
    if (!client.ok()) return client.status();
    absl::StatusOr<etcdserverpb::RangeResponse> r = (*client)->Range(probe);
    if (r.ok()) return absl::OkStatus();
    last = r.status();
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::UnavailableError(
      absl::StrCat("etcd member ", m.name, " did not serve in time (", last.message(), "); log: ",
                   m.log_path));
}

std::string EtcdCluster::DbSize(int member) const {
  auto stub = etcdserverpb::Maintenance::NewStub(
      grpc::CreateChannel(endpoints()[member], grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  etcdserverpb::StatusRequest req;
  etcdserverpb::StatusResponse resp;
  if (!stub->Status(&ctx, req, &resp).ok()) return "?";
  return absl::StrFormat("%.1f MiB on disk, %.1f MiB in use",
                         static_cast<double>(resp.dbsize()) / (1 << 20),
                         static_cast<double>(resp.dbsizeinuse()) / (1 << 20));
}

}  // namespace admitd::testing
