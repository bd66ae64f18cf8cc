// The Workload as Kueue renders it (finalizer, defaulted priority, pod templates kept whole) and
// imports that keep everything Kueue's status held.
#include "server/engine/engine_impl.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class RenderTest : public EngineApiTest {
 protected:
  // A workload admitted by Kueue: its admission in ClusterQueue cq, flavor default.
  v1::Workload Admitted(const std::string& name) {
    v1::Workload wl = MakeWorkload(name, 1, "1");
    wl.mutable_metadata()->set_uid(name + "-uid");
    v1::PodSetAssignment* psa = wl.mutable_status()->mutable_admission()->add_pod_set_assignments();
    wl.mutable_status()->mutable_admission()->set_cluster_queue("cq");
    psa->set_name("main");
    psa->set_count(1);
    (*psa->mutable_flavors())["cpu"] = "default";
    (*psa->mutable_resource_usage())["cpu"] = "1";
    SetCondition(&wl, kQuotaReserved, true, "QuotaReserved", "Quota reserved in ClusterQueue cq",
                 kT0);
    SetCondition(&wl, kAdmitted, true, "Admitted", "The workload is admitted", kT0);
    return wl;
  }
  absl::StatusOr<v1::ImportResponse> Import(const std::vector<v1::Workload>& wls,
                                            const std::string& cluster = "") {
    v1::ImportRequest req;
    for (const v1::Workload& wl : wls) *req.add_workloads() = wl;
    req.set_cluster(cluster);
    return engine_.Import(req, Now());
  }
};

TEST_F(RenderTest, KueuesFinalizerStaysUntilTheWorkloadFinishes) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  EXPECT_THAT(Get("a").metadata().finalizers(), ElementsAre("kueue.x-k8s.io/resource-in-use"));
  ASSERT_EQ(Schedule(), 1);
  EXPECT_THAT(Get("a").metadata().finalizers(), ElementsAre("kueue.x-k8s.io/resource-in-use"));
  v1::ReleaseQuotaRequest done;
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(Release("a", done).ok());
  EXPECT_THAT(Get("a").metadata().finalizers(), IsEmpty());
}

TEST_F(RenderTest, PriorityIsAlwaysSetAndAPodPriorityClassIsReferenced) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("plain", 1, "1")).ok());
  EXPECT_TRUE(Get("plain").spec().has_priority());
  EXPECT_EQ(Get("plain").spec().priority(), 0);
  v1::Workload pc = MakeWorkload("pc", 1, "1");
  v1::PodSpec* pod = pc.mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec();
  pod->set_priority_class_name("high");
  pod->set_priority(1000);
  pod->add_scheduling_gates()->set_name("example.com/gate");
  ASSERT_TRUE(Submit(pc).ok());
  const v1::Workload got = Get("pc");
  EXPECT_EQ(got.spec().priority(), 1000);
  EXPECT_EQ(got.spec().priority_class_ref().group(), "scheduling.k8s.io");
  EXPECT_EQ(got.spec().priority_class_ref().kind(), "PriorityClass");
  EXPECT_EQ(got.spec().priority_class_ref().name(), "high");
  // The template is kept whole, its scheduling gates included.
  ASSERT_EQ(got.spec().pod_sets(0).template_().spec().scheduling_gates_size(), 1);
  EXPECT_EQ(got.spec().pod_sets(0).template_().spec().scheduling_gates(0).name(),
            "example.com/gate");
}

TEST_F(RenderTest, ImportKeepsEveryConditionAndTheRestOfTheStatus) {
  Basic();
  v1::Workload wl = Admitted("a");
  SetCondition(&wl, kEvicted, true, "Preempted", "Preempted to accommodate a workload", kT0);
  SetCondition(&wl, kPreempted, true, "InClusterQueue", "Preempted to accommodate a workload",
               kT0);
  SetCondition(&wl, "PodsReady", true, "Started",
               "All pods reached readiness and the workload is running", kT0);
  wl.mutable_status()->mutable_requeue_state()->set_count(2);
  v1::WorkloadSchedulingStatsEviction* e =
      wl.mutable_status()->mutable_scheduling_stats()->add_evictions();
  e->set_reason("Preempted");
  e->set_count(3);
  wl.mutable_status()->set_accumulated_past_execution_time_seconds(40);
  absl::StatusOr<v1::ImportResponse> resp = Import({wl});
  ASSERT_TRUE(resp.ok()) << resp.status();
  const v1::Workload got = Get("a");
  for (const char* type : {kQuotaReserved, kAdmitted, kEvicted, kPreempted, "PodsReady"}) {
    const v1::Condition* c = FindCondition(got, type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ(c->SerializeAsString(), FindCondition(wl, type)->SerializeAsString()) << type;
  }
  EXPECT_EQ(got.status().requeue_state().count(), 2);
  EXPECT_EQ(got.status().scheduling_stats().evictions(0).count(), 3);
  EXPECT_EQ(got.status().accumulated_past_execution_time_seconds(), 40);
  EXPECT_EQ(StateOf(got), v1::WORKLOAD_STATE_EVICTED);  // holds its quota until it stops
  EXPECT_EQ(GetClusterQueue("cq").status().reserving_workloads(), 1);
}

TEST_F(RenderTest, APodOwnedWorkloadBecomesTheNamedClustersPodWorkload) {
  Basic();
  v1::Workload wl = Admitted("group");
  v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
  owner->set_api_version("v1");
  owner->set_kind("Pod");
  owner->set_name("group-0");
  absl::StatusOr<v1::ImportResponse> refused = Import({wl});
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldViolationsOf(refused.status())[0].field, "cluster");
  ASSERT_TRUE(Import({wl}, "east").ok());
  EXPECT_EQ(Get("group").metadata().labels().at("admitd.io/pod-cluster"), "east");
  // A Job's workload is not a pod Workload.
  ASSERT_TRUE(Import({Admitted("job")}, "east").ok());
  EXPECT_EQ(Get("job").metadata().labels().count("admitd.io/pod-cluster"), 0u);
}

TEST_F(RenderTest, AFinishedWorkloadIsNotImported) {
  Basic();
  v1::Workload wl = Admitted("done");
  SetCondition(&wl, kFinished, true, "Succeeded", "Job finished successfully", kT0);
  absl::StatusOr<v1::ImportResponse> resp = Import({wl});
  ASSERT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldViolationsOf(resp.status())[0].field, "workloads[0].status.conditions");
}

}  // namespace
}  // namespace admitd::engine
