// Quota arithmetic at the edge of what a quantity can hold: usage sums that pass int64 stay
// exact, requests that cannot be represented are refused, and the usage of a running engine
// always equals what a restored one recomputes.
#include <string>

#include "server/engine/engine_test_fixture.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

using testing_fixture::EngineApiTest;
using testing_fixture::FlavorObject;
using testing_fixture::LocalQueueObject;
using testing_fixture::MakeWorkload;

// A ClusterQueue "cq" over memory only, flavor "default", LocalQueue ns/lq.
v1::QueueObject MemoryQueue(const std::string& memory) {
  v1::QueueObject o;
  v1::ClusterQueue* cq = o.mutable_cluster_queue();
  cq->mutable_metadata()->set_name("cq");
  cq->mutable_spec()->mutable_namespace_selector();
  v1::ResourceGroup* g = cq->mutable_spec()->add_resource_groups();
  g->add_covered_resources("memory");
  v1::FlavorQuotas* fq = g->add_flavors();
  fq->set_name("default");
  fq->add_resources()->set_name("memory");
  fq->mutable_resources(0)->set_nominal_quota(memory);
  return o;
}

v1::Workload MemoryWorkload(const std::string& name, int count,
                            std::initializer_list<std::string> containers) {
  v1::Workload wl = MakeWorkload(name, count, "1");
  v1::PodSpec* pod = wl.mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec();
  pod->clear_containers();
  for (const std::string& memory : containers) {
    (*pod->add_containers()->mutable_resources()->mutable_requests())["memory"] = memory;
  }
  return wl;
}

// An admitted workload of `memory` in "cq", as a running Kueue would hand it over.
v1::Workload Admitted(const std::string& name, const std::string& memory) {
  v1::Workload wl = MemoryWorkload(name, 1, {memory});
  wl.mutable_metadata()->set_uid(name + "-uid");
  v1::Admission* admission = wl.mutable_status()->mutable_admission();
  admission->set_cluster_queue("cq");
  v1::PodSetAssignment* psa = admission->add_pod_set_assignments();
  psa->set_name("main");
  psa->set_count(1);
  (*psa->mutable_flavors())["memory"] = "default";
  (*psa->mutable_resource_usage())["memory"] = memory;
  return wl;
}

class QuotaArithmeticTest : public EngineApiTest {
 protected:
  void Setup(const std::string& quota) {
    ASSERT_TRUE(Apply(FlavorObject("default")).ok());
    ASSERT_TRUE(Apply(MemoryQueue(quota)).ok());
    ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  }
  std::string Usage() {
    const v1::ClusterQueue cq = GetClusterQueue("cq");
    if (cq.status().flavors_usage().empty()) return "";
    return cq.status().flavors_usage(0).resources(0).total();
  }
  absl::Status Import(std::initializer_list<v1::Workload> workloads) {
    v1::ImportRequest req;
    for (const v1::Workload& wl : workloads) *req.add_workloads() = wl;
    return engine_.Import(req, Now()).status();
  }
  absl::Status Finish(const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.mutable_finished()->set_succeeded(true);
    return Release(name, req).status();
  }
};

TEST_F(QuotaArithmeticTest, ImportedUsagePastInt64StaysExactAndReturnsToZero) {
  Setup("100Gi");
  ASSERT_TRUE(Import({Admitted("big-1", "5Ei"), Admitted("big-2", "5Ei")}).ok());
  EXPECT_EQ(Usage(), "10Ei");
  ASSERT_TRUE(Finish("big-1").ok());
  ASSERT_TRUE(Finish("big-2").ok());
  EXPECT_EQ(Usage(), "0");
  // The quota is whole again, and no more than whole: one 60Gi workload of three fits.
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(Submit(MemoryWorkload(name, 1, {"60Gi"})).ok());
  }
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(Usage(), "60Gi");
}

TEST_F(QuotaArithmeticTest, UsagePastInt64BlocksAdmissionUntilReleased) {
  Setup("100Gi");
  ASSERT_TRUE(Import({Admitted("big-1", "5Ei"), Admitted("big-2", "5Ei")}).ok());
  ASSERT_TRUE(Submit(MemoryWorkload("small", 1, {"1Gi"})).ok());
  EXPECT_EQ(Schedule(), 0);
  ASSERT_TRUE(Finish("big-1").ok());
  EXPECT_EQ(Schedule(), 0);  // 5Ei still used in 100Gi
  ASSERT_TRUE(Finish("big-2").ok());
  EXPECT_EQ(Schedule(), 1);
}

TEST_F(QuotaArithmeticTest, ARequestSumThatIsNotAQuantityIsRefused) {
  Setup("9223372036854775807");
  // Two containers of 7Ei: 14Ei per pod, past 2^63-1 bytes.
  absl::StatusOr<v1::SubmitResponse> two_containers =
      Submit(MemoryWorkload("two", 1, {"7Ei", "7Ei"}));
  ASSERT_EQ(two_containers.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(two_containers.status().message()),
              ::testing::HasSubstr("spec.podSets[0].template.spec"));
  // 3 pods of 4Ei: each fits, the pod set does not.
  absl::StatusOr<v1::SubmitResponse> three_pods = Submit(MemoryWorkload("three", 3, {"4Ei"}));
  ASSERT_EQ(three_pods.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(three_pods.status().message()),
              ::testing::HasSubstr("spec.podSets[0].count"));
  // Two pod sets of 5Ei each.
  v1::Workload two_sets = MemoryWorkload("sets", 1, {"5Ei"});
  *two_sets.mutable_spec()->add_pod_sets() = two_sets.spec().pod_sets(0);
  two_sets.mutable_spec()->mutable_pod_sets(1)->set_name("second");
  EXPECT_EQ(Submit(two_sets).status().code(), absl::StatusCode::kInvalidArgument);
  // Nothing was recorded, and the largest representable request still works.
  EXPECT_EQ(Usage(), "0");
  ASSERT_TRUE(Submit(MemoryWorkload("max", 1, {"9223372036854775807"})).ok());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(Usage(), "9223372036854775807");
}

TEST_F(QuotaArithmeticTest, AnImportWhoseUsageIsNotAQuantityIsRefused) {
  Setup("100Gi");
  v1::Workload wl = Admitted("big", "5Ei");
  *wl.mutable_spec()->add_pod_sets() = wl.spec().pod_sets(0);
  wl.mutable_spec()->mutable_pod_sets(1)->set_name("second");
  *wl.mutable_status()->mutable_admission()->add_pod_set_assignments() =
      wl.status().admission().pod_set_assignments(0);
  wl.mutable_status()->mutable_admission()->mutable_pod_set_assignments(1)->set_name("second");
  EXPECT_EQ(Import({wl}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Usage(), "0");
}

TEST_F(QuotaArithmeticTest, ARestoredEngineRecomputesTheSameUsage) {
  Setup("100Gi");
  ASSERT_TRUE(Import({Admitted("big-1", "5Ei"), Admitted("big-2", "5Ei")}).ok());
  ASSERT_TRUE(Finish("big-1").ok());
  ASSERT_TRUE(Submit(MemoryWorkload("a", 1, {"60Gi"})).ok());
  Schedule();
  const std::string running = Usage();
  EXPECT_EQ(running, "5Ei");

  // A second engine restored from what the first one holds, as after a restart.
  Engine restored;
  for (v1::ObjectKind kind : {v1::OBJECT_KIND_RESOURCE_FLAVOR, v1::OBJECT_KIND_CLUSTER_QUEUE,
                              v1::OBJECT_KIND_LOCAL_QUEUE}) {
    v1::ListObjectsRequest list;
    list.set_kind(kind);
    absl::StatusOr<v1::ListObjectsResponse> objects = engine_.List(list);
    ASSERT_TRUE(objects.ok());
    for (const v1::QueueObject& o : objects->objects()) ASSERT_TRUE(restored.Restore(o).ok());
  }
  v1::ListWorkloadsRequest workloads;
  absl::StatusOr<v1::ListWorkloadsResponse> all = engine_.ListWorkloads(workloads);
  ASSERT_TRUE(all.ok());
  for (const v1::Workload& wl : all->workloads()) ASSERT_TRUE(restored.Restore(wl).ok());
  ASSERT_TRUE(restored.FinishRestore(1).ok());
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  EXPECT_EQ(restored.Get(get)->cluster_queue().status().flavors_usage(0).resources(0).total(),
            running);
}

}  // namespace
}  // namespace admitd::engine
