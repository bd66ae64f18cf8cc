#include "integration/bench/ha_run.h"

#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "integration/bench/raw_run.h"
#include "integration/fixtures.h"
#include "integration/ha/etcd_cluster.h"
#include "integration/ha/replica_group.h"

namespace admitd::bench {
namespace {

void PrintRow(const char* name, const RawReport& r, const RawReport& base) {
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0; };
  std::printf("%-22s %12.0f %7.3f %14.0f %7.3f %12.2f %12.2f\n", name, r.pings_per_second,
              ratio(r.pings_per_second, base.pings_per_second), r.workloads_per_second,
              ratio(r.workloads_per_second, base.workloads_per_second), r.submit_ms.p50,
              r.submit_ms.p99);
}

}  // namespace

int RunHaComparison(const std::string& admitd_binary, const std::vector<std::string>& admitd_args,
                    int clients, absl::Duration duration, bool ha_only) {
  char temp[] = "/tmp/admitd-bench-ha-XXXXXX";
  if (mkdtemp(temp) == nullptr) return 1;
  const std::string dir = temp;
  int failed = 0;

  RawReport alone;
  if (!ha_only) {
    std::printf("--- single node ---\n");
    auto process = testing::Process::Start(admitd_binary, dir + "/alone", admitd_args);
    if (!process.ok()) {
      std::fprintf(stderr, "cannot start admitd: %s\n", std::string(process.status().message()).c_str());
      return 1;
    }
    alone = RunRaw((*process)->address(), clients, duration, "", nullptr, (*process)->pid());
    PrintRawReport(alone);
    failed += alone.ok() ? 0 : 1;
    (*process)->Kill(SIGTERM);
  }

  std::printf("--- HA: the leader of three replicas over a 3-member etcd ---\n");
  RawReport ha;
  {
    absl::StatusOr<std::unique_ptr<testing::EtcdCluster>> etcd =
        testing::EtcdCluster::Start(3, dir + "/etcd");
    if (!etcd.ok()) {
      std::fprintf(stderr, "cannot start etcd: %s\n", std::string(etcd.status().message()).c_str());
      return 1;
    }
    testing::ReplicaGroup group({.admitd = admitd_binary,
                                 .etcd = (*etcd)->endpoints(),
                                 .domain = "bench",
                                 .dir = dir + "/group",
                                 .lease_ttl = "5s",
                                 .extra_args = admitd_args});
    absl::Status started = group.StartAll();
    absl::StatusOr<int> leader =
        started.ok()
            ? group.FindLeader(group.All(), absl::Seconds(30), testing::ReplicaGroup::ReadProbe)
            : absl::StatusOr<int>(started);
    if (!leader.ok()) {
      std::fprintf(stderr, "no leader: %s\n", std::string(leader.status().message()).c_str());
      return 1;
    }
    ha = RunRaw(group.process(*leader).address(), clients, duration, "", nullptr,
                group.process(*leader).pid(),
                ha_only ? std::min(duration, absl::Seconds(5)) : absl::ZeroDuration());
    PrintRawReport(ha);
    failed += ha.ok() ? 0 : 1;
    // The leader trims the log every 10 s (--ha-log-trim-interval) and compacts etcd's history:
    // what etcd keeps does not grow with the number of cycles.
    std::printf("etcd's database after %lld workload cycles: %s\n",
                static_cast<long long>(ha.cycles), (*etcd)->DbSize(0).c_str());
    absl::SleepFor(absl::Seconds(15));
    std::printf("etcd's database 15 s later (the log trimmed): %s\n", (*etcd)->DbSize(0).c_str());
    group.StopAll();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);

  std::printf("\n%-22s %12s %7s %14s %7s %12s %12s\n", "setting", "null RPCs/s", "ratio",
              "cycles/s", "ratio", "Submit p50ms", "Submit p99ms");
  if (ha_only) {
    PrintRow("HA (3 etcd, 3 admitd)", ha, ha);
    return failed == 0 ? 0 : 1;
  }
  PrintRow("single node", alone, alone);
  PrintRow("HA (3 etcd, 3 admitd)", ha, alone);
  return failed == 0 ? 0 : 1;
}

}  // namespace admitd::bench
