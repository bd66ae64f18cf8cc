// Test-only: the fixture of the HA process tests. Each test runs a group of three real admitd
// replicas (integration/ha/replica_group.h) in a domain of its own over the suite's 3-member etcd
// (ha_fixture.h), with a 2 s lease.
#ifndef ADMITD_INTEGRATION_HA_HA_GROUP_FIXTURE_H_
#define ADMITD_INTEGRATION_HA_HA_GROUP_FIXTURE_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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
  explicit HaGroupTest(std::vector<std::string> extra_args = {})
      : group({.admitd = ADMITD_BINARY,
               .etcd = etcd_->endpoints(),
               .domain = Replica("x").domain,
               .dir = absl::StrCat(*dir_, "/", Replica("x").domain),
               .lease_ttl = "2s",
               .extra_args = std::move(extra_args)}) {}

  // Submits workload `name`; the call's status.
  static grpc::Status Submit(AdmitdClient& client, const std::string& name) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
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

  testing::ReplicaGroup group;
};

}  // namespace admitd::ha

#endif  // ADMITD_INTEGRATION_HA_HA_GROUP_FIXTURE_H_
