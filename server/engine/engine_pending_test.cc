// Where a pending workload waits: the active/inadmissible split of the queues' pending counts
// and each workload's position, as Kueue's pendingWorkloadsStatus and visibility API give them.
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders

class PendingTest : public EngineApiTest {
 protected:
  v1::LocalQueue GetLocalQueue(const std::string& name) {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
    req.set_namespace_("ns");
    req.set_name(name);
    return engine_.Get(req)->local_queue();
  }
  void ExpectPosition(const std::string& name, const std::string& status, int in_cq, int in_lq) {
    const v1::Workload wl = Get(name);
    ASSERT_TRUE(wl.status().has_pending_position()) << name;
    EXPECT_EQ(wl.status().pending_position().status(), status) << name;
    EXPECT_EQ(wl.status().pending_position().position_in_cluster_queue(), in_cq) << name;
    EXPECT_EQ(wl.status().pending_position().position_in_local_queue(), in_lq) << name;
  }
  v1::Workload WithPriority(v1::Workload wl, int priority) {
    wl.mutable_spec()->set_priority(priority);
    return wl;
  }
};

TEST_F(PendingTest, NewWorkloadsAreActiveAndTriedOnesInadmissible) {
  Basic("1");
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "other", "cq")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("running", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  EXPECT_FALSE(Get("running").status().has_pending_position());

  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  ASSERT_TRUE(Submit(WithPriority(MakeWorkload("c", 1, "1"), 5)).ok());
  // Not tried yet: both wait in the heap, the higher priority first.
  v1::ClusterQueue cq = GetClusterQueue("cq");
  EXPECT_EQ(cq.status().pending_workloads(), 2);
  EXPECT_EQ(cq.status().pending_active_workloads(), 2);
  EXPECT_EQ(cq.status().pending_inadmissible_workloads(), 0);
  ExpectPosition("c", "active", 0, 0);
  ExpectPosition("b", "active", 1, 1);

  Schedule();  // neither fits: both are set aside
  cq = GetClusterQueue("cq");
  EXPECT_EQ(cq.status().pending_active_workloads(), 0);
  EXPECT_EQ(cq.status().pending_inadmissible_workloads(), 2);
  ExpectPosition("c", "inadmissible", 0, 0);
  ExpectPosition("b", "inadmissible", 1, 1);

  // Another LocalQueue of the same ClusterQueue: its own local position, the shared CQ order.
  // (Of another shape: one like those set aside would join them at once, §5.4.)
  ASSERT_TRUE(Submit(MakeWorkload("e", 1, "500m", "other")).ok());
  ExpectPosition("e", "active", 2, 0);
  const v1::LocalQueue lq = GetLocalQueue("lq");
  EXPECT_EQ(lq.status().pending_workloads(), 2);
  EXPECT_EQ(lq.status().pending_active_workloads(), 0);
  EXPECT_EQ(lq.status().pending_inadmissible_workloads(), 2);
  const v1::LocalQueue other = GetLocalQueue("other");
  EXPECT_EQ(other.status().pending_active_workloads(), 1);
  EXPECT_EQ(other.status().pending_inadmissible_workloads(), 0);

  const std::vector<PendingCount> counts = engine_.PendingCounts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].cluster_queue, "cq");
  EXPECT_EQ(counts[0].active, 1);
  EXPECT_EQ(counts[0].inadmissible, 2);

  // The running workload finishes: the inadmissible ones are requeued, hence active again.
  v1::ReleaseQuotaRequest done;
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(Release("running", done).ok());
  cq = GetClusterQueue("cq");
  EXPECT_EQ(cq.status().pending_active_workloads(), 3);
  EXPECT_EQ(cq.status().pending_inadmissible_workloads(), 0);
}

TEST_F(PendingTest, DescribeAnswersThePosition) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  v1::AdmitRequest req;
  req.set_namespace_("ns");
  req.set_name("b");
  req.set_dry_run(true);
  absl::StatusOr<v1::AdmitResponse> resp = engine_.Describe(req, Now());
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->position().status(), "active");
  EXPECT_EQ(resp->position().position_in_cluster_queue(), 0);
  EXPECT_EQ(resp->workload().status().pending_position().status(), "active");
  EXPECT_EQ(resp->explanation().queue_position(), 0);
  // An admitted workload waits nowhere.
  req.set_name("a");
  resp = engine_.Describe(req, Now());
  ASSERT_TRUE(resp.ok());
  EXPECT_FALSE(resp->has_position());
}

}  // namespace
}  // namespace admitd::engine
