// The checks admitd-crashloop makes after every restart, on the server's state as the public API
// shows it (AdmissionService.List, QueueService.List, PodService.ListDirectives):
//   (a) CheckLedger: every acknowledged write is visible (submitted and imported workloads exist,
//       finished ones stay finished, deleted ones stay gone, reclaimed pods stay reclaimed, a
//       workload seen holding quota still holds it, a resized job's newest workload has the
//       acknowledged count, a pod group is in the state its last acknowledged report left it);
//   (b) CheckQuota: every ClusterQueue's and LocalQueue's reported usage equals the exact sum of
//       the usage of the workloads holding quota in it, and their counts agree;
//   (c) CheckSlices: no elastic job has two workloads holding quota at once.
// Each returns one line per violation.
//
// Thread safety: pure functions over their arguments; CheckLedger writes to the ledger it is given.
#ifndef ADMITD_INTEGRATION_CRASHLOOP_CHECKER_H_
#define ADMITD_INTEGRATION_CRASHLOOP_CHECKER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "integration/crashloop/ledger.h"
#include "integration/fixtures.h"

namespace admitd::crashloop {

// The server's state at one revision.
struct ServerState {
  uint64_t revision = 0;
  std::map<std::string, v1::Workload> workloads;  // by "namespace/name"
  std::vector<v1::ClusterQueue> cluster_queues;
  std::vector<v1::LocalQueue> local_queues;
  std::set<std::string> ungate;  // "cluster/namespace/pod" with an outstanding UNGATE directive
};

// Reads every workload, ClusterQueue, LocalQueue and the UNGATE directives of `clusters`, again
// until all of them were read at one revision (the server may still be scheduling after a
// restart); DEADLINE_EXCEEDED when it never holds still within `timeout`.
absl::StatusOr<ServerState> ReadServerState(testing::Client& client,
                                            const std::vector<std::string>& clusters,
                                            absl::Duration timeout);

std::vector<std::string> CheckQuota(const ServerState& state);
std::vector<std::string> CheckSlices(const ServerState& state);

// How the writes cut off by the kill turned out.
struct Resolution {
  int64_t applied = 0;
  int64_t not_applied = 0;
};

// Compares every object of `ledger` with `state`. A cut-off write is resolved: when the state
// shows it, it becomes the acknowledged state. An object that matches neither is reported and
// marked broken (not checked again).
std::vector<std::string> CheckLedger(const ServerState& state, WorkerLedger* ledger,
                                     Resolution* resolution);

}  // namespace admitd::crashloop

#endif  // ADMITD_INTEGRATION_CRASHLOOP_CHECKER_H_
