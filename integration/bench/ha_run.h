// The cost of high availability, measured: the raw run (null RPCs and Submit -> admitted ->
// Finished cycles) against one admitd alone, then against the leader of a group of three
// replicas over a 3-member etcd (Debian's etcd-server, on this machine), in one run: every
// durable Submit acknowledged only once etcd's quorum has its batch. Each figure is printed next
// to the single-node one, and the size of etcd's database after the run.
#ifndef ADMITD_INTEGRATION_BENCH_HA_RUN_H_
#define ADMITD_INTEGRATION_BENCH_HA_RUN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace admitd::bench {

// 0 when both runs completed without errors or violations. `ha_only`: the HA group alone, its
// null-RPC phase 5 s at most (a long run measures what etcd's database holds after many cycles).
int RunHaComparison(const std::string& admitd_binary, const std::vector<std::string>& admitd_args,
                    int clients, absl::Duration duration, bool ha_only = false);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_HA_RUN_H_
