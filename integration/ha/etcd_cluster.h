// A real etcd cluster for the high-availability tests: Debian's etcd-server, one process per
// member on loopback ports picked free, each with a fresh data dir under `dir` (etcd's default
// 100 ms heartbeats and 1 s election timeout). Members can be killed and restarted.
//
//   absl::StatusOr<std::unique_ptr<EtcdCluster>> etcd = EtcdCluster::Start(3, dir);
//   (*etcd)->endpoints();  // {"127.0.0.1:41235", ...}
//
// Thread safety: none; one test thread drives it.
#ifndef ADMITD_INTEGRATION_HA_ETCD_CLUSTER_H_
#define ADMITD_INTEGRATION_HA_ETCD_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace admitd::testing {

// Client TLS: members serve https on their client URLs with `cert_file`/`key_file` and require
// client certificates signed by `ca_file`; the cluster's own probes present `client_cert_file`.
struct EtcdTls {
  std::string ca_file, cert_file, key_file;
  std::string client_cert_file, client_key_file;
};

class EtcdCluster {
 public:
  // Starts `members` members and waits until each answers a read (trying new ports up to three
  // times). UNAVAILABLE when etcd is not installed or the cluster does not come up within
  // `timeout` (the members' logs say why).
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(
      int members, const std::string& dir, absl::Duration timeout = absl::Seconds(30),
      std::optional<EtcdTls> tls = std::nullopt);
  // Kills every member still running.
  ~EtcdCluster();

  // host:port of each member's client URL.
  std::vector<std::string> endpoints() const;
  // SIGKILL; the member's data stays.
  void Kill(int member);
  // Starts a killed member again on its data dir and waits until it answers.
  absl::Status Restart(int member, absl::Duration timeout = absl::Seconds(30));
  // The end of a member's log, for failure messages.
  std::string Log(int member) const;
  // What a member says of its database, as "X MiB on disk, Y MiB in use" ("?" when it does not
  // answer; plaintext members only).
  std::string DbSize(int member) const;

 private:
  struct Member {
    std::string name;
    std::string data_dir;
    std::string log_path;
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };
  EtcdCluster() = default;
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> StartOnce(int members,
                                                                const std::string& dir,
                                                                absl::Duration timeout,
                                                                const std::optional<EtcdTls>& tls);
  std::string ClientUrl(int port) const;
  absl::Status Spawn(Member& m, bool existing);
  absl::Status WaitUntilServing(const Member& m, absl::Time until);

  std::optional<EtcdTls> tls_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

}  // namespace admitd::testing

#endif  // ADMITD_INTEGRATION_HA_ETCD_CLUSTER_H_
