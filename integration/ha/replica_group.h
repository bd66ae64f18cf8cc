// Test-only: a group of real admitd replicas (child processes of the admitd binary, each with
// its own data dir and port) in one admission domain over an etcd cluster, for the HA process
// tests and admitd-hafailover.
//
//   ReplicaGroup group({.admitd = ADMITD_BINARY, .etcd = etcd->endpoints(), .domain = "d",
//                       .dir = dir});
//   ADMITD_RETURN_IF_ERROR(group.StartAll());
//   absl::StatusOr<int> leader = group.FindLeader(group.All(), absl::Seconds(20), ReadProbe);
//   group.Kill(*leader, SIGKILL);
//
// Thread safety: none; one thread drives it. client(i) may be used from several threads.
#ifndef ADMITD_INTEGRATION_HA_REPLICA_GROUP_H_
#define ADMITD_INTEGRATION_HA_REPLICA_GROUP_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "integration/fixtures.h"

namespace admitd::testing {

struct GroupOptions {
  std::string admitd;               // the binary
  std::vector<std::string> etcd;    // host:port of each member
  std::string domain;               // --ha-domain
  std::string dir;                  // replica i's data dir is <dir>/admitd-<i>
  std::string lease_ttl = "2s";     // --ha-lease-ttl
  std::vector<std::string> extra_args;  // for every replica
  int size = 3;
};

class ReplicaGroup {
 public:
  explicit ReplicaGroup(GroupOptions options);

  // Starts replica `i` (again, after Kill, on the same address) and waits until it follows.
  absl::Status Start(int i);
  absl::Status StartAll();
  // Sends `signal` to replica `i` and waits for it to end; the wait status.
  int Kill(int i, int signal);
  // SIGTERM to every replica still running.
  void StopAll();

  Process& process(int i) { return *replicas_[i]; }
  Client& client(int i) { return *clients_[i]; }
  bool running(int i) const { return replicas_[i] != nullptr; }
  std::vector<int> All() const;
  std::vector<int> Others(int i) const;
  // "host:port,host:port,...": every replica, for a client of the whole group.
  std::string List() const;

  // The first of `among` whose `probe` succeeds, trying them in turn every 10 ms. A follower
  // (UNAVAILABLE), a replica that is gone or switching roles (DEADLINE_EXCEEDED, CANCELLED) may
  // refuse; any other refusal is an INTERNAL error naming it. DEADLINE_EXCEEDED when none
  // succeeds within `timeout`.
  using Probe = std::function<grpc::Status(Client&)>;
  absl::StatusOr<int> FindLeader(const std::vector<int>& among, absl::Duration timeout,
                                 const Probe& probe);

  // A probe that only reads (AdmissionService.List of one namespace).
  static grpc::Status ReadProbe(Client& client);

 private:
  GroupOptions options_;
  std::vector<std::unique_ptr<Process>> replicas_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::string> addresses_;  // host:port, once started
};

}  // namespace admitd::testing

#endif  // ADMITD_INTEGRATION_HA_REPLICA_GROUP_H_
