// Test-only: the fixture of the HA process tests. Each test runs a group of three real admitd
// replicas (integration/ha/replica_group.h) in a domain of its own over the suite's 3-member etcd
// (ha_fixture.h), with a 2 s lease.
#ifndef ADMITD_INTEGRATION_HA_HA_GROUP_FIXTURE_H_
#define ADMITD_INTEGRATION_HA_HA_GROUP_FIXTURE_H_

#include <chrono>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "integration/fixtures.h"
#include "integration/ha/ha_fixture.h"
#include "integration/ha/replica_group.h"

#ifndef ADMITD_BINARY
#error "ADMITD_BINARY must name the admitd executable"
#endif

namespace admitd::ha {

// HaTest::Client() is an etcd client; this is admitd's.
using AdmitdClient = testing::Client;
using testing::Process;

class HaGroupTest : public HaTest {
 protected:
  explicit HaGroupTest(std::vector<std::string> extra_args = {}, std::string lease_ttl = "2s")
      : group({.admitd = ADMITD_BINARY,
               .etcd = etcd_->endpoints(),
               .domain = Replica("x").domain,
               .dir = absl::StrCat(*dir_, "/", Replica("x").domain),
               .lease_ttl = std::move(lease_ttl),
               .extra_args = std::move(extra_args)}) {}

  // Submits workload `name`; the call's status.
  static grpc::Status Submit(AdmitdClient& client, const std::string& name,
                             absl::Duration deadline = absl::Seconds(5)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "100m"}});
    v1::SubmitResponse resp;
    return client.admission->Submit(&ctx, req, &resp);
  }

  // The index of the replica of `among` that answers a read within `timeout`, -1 when none does.
  int Leader(const std::vector<int>& among, absl::Duration timeout) {
    absl::StatusOr<int> leader = group.FindLeader(among, timeout, testing::ReplicaGroup::ReadProbe);
    EXPECT_TRUE(leader.ok()) << leader.status();
    return leader.ok() ? *leader : -1;
  }

  // Starts three replicas; the index of the one that leads, -1 when none does within 20 s.
  int StartGroup() {
    absl::Status started = group.StartAll();
    EXPECT_TRUE(started.ok()) << started;
    return started.ok() ? Leader(group.All(), absl::Seconds(20)) : -1;
  }

  AdmitdClient& client(int i) { return group.client(i); }

  // Every workload `client` lists in namespace "ns" is there once, and every one of
  // `acknowledged` is among them.
  static void ExpectEachAcknowledgedOnce(AdmitdClient& client,
                                         const std::set<std::string>& acknowledged) {
    absl::StatusOr<std::vector<v1::Workload>> all = testing::ListWorkloads(client, "ns");
    ASSERT_TRUE(all.ok()) << all.status();
    std::set<std::string> names;
    for (const v1::Workload& wl : *all) {
      EXPECT_TRUE(names.insert(wl.metadata().name()).second) << wl.metadata().name();
    }
    for (const std::string& name : acknowledged) EXPECT_TRUE(names.count(name)) << name;
  }

  // With --metrics-listen 127.0.0.1:0 among the extra arguments: the port of replica i's
  // metrics endpoint, from its log (0 when it says none).
  int MetricsPort(int i) {
    const std::string log = group.process(i).Log();
    const std::string marker = "metrics=127.0.0.1:";
    const size_t at = log.rfind(marker);
    int port = 0;
    if (at == std::string::npos) return 0;
    const size_t start = at + marker.size();
    EXPECT_TRUE(absl::SimpleAtoi(log.substr(start, log.find_first_of(" \n", start) - start), &port));
    return port;
  }

  static httplib::Result Get(int port, const std::string& path) {
    httplib::Client http("127.0.0.1", port);
    http.set_read_timeout(5);
    return http.Get(path);
  }

  // The value of the series `series` (name and labels, as rendered) on replica i's /metrics;
  // -1 when absent.
  double Metric(int i, const std::string& series) {
    httplib::Result r = Get(MetricsPort(i), "/metrics");
    if (!r) return -1;
    const size_t at = r->body.find(series + " ");
    double value = -1;
    if (at == std::string::npos) return -1;
    const size_t start = at + series.size() + 1;
    (void)absl::SimpleAtod(r->body.substr(start, r->body.find('\n', start) - start), &value);
    return value;
  }

  testing::ReplicaGroup group;
};

}  // namespace admitd::ha

#endif  // ADMITD_INTEGRATION_HA_HA_GROUP_FIXTURE_H_
