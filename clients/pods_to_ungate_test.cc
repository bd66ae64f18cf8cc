// The ungate rule of elastic jobs (KEP-77 §13.5), with the KEP's cases.
#include "clients/elastic.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/table.h"

namespace admitd::clients {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

void SetCondition(v1::Workload* wl, const std::string& type, bool status) {
  v1::Condition* c = wl->mutable_status()->add_conditions();
  c->set_type(type);
  c->set_status(status ? "True" : "False");
}

// A slice with the given spec counts; admitted with the same counts when `admitted`.
v1::Workload Slice(const std::vector<std::pair<std::string, int>>& pod_sets, bool admitted = true) {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_name("job-demo-078e4");
  for (const auto& [name, count] : pod_sets) {
    v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
    ps->set_name(name);
    ps->set_count(count);
  }
  if (admitted) {
    wl.mutable_status()->mutable_admission()->set_cluster_queue("cq");
    for (const auto& [name, count] : pod_sets) {
      v1::PodSetAssignment* psa = wl.mutable_status()->mutable_admission()->add_pod_set_assignments();
      psa->set_name(name);
      psa->set_count(count);
      (*psa->mutable_flavors())["cpu"] = "default";
    }
    SetCondition(&wl, "QuotaReserved", true);
    SetCondition(&wl, "Admitted", true);
  } else {
    SetCondition(&wl, "QuotaReserved", false);
  }
  return wl;
}

PodObservation Pod(const std::string& name, bool gated, bool terminated = false,
                   const std::string& pod_set = "main") {
  return PodObservation{name, pod_set, gated, terminated};
}

TEST(PodsToUngateTest, ScaleUpUngatesTheNewPodsTheSliceGrants) {
  // 3 running pods; the job scaled 3 -> 5 and the new slice was admitted with 5.
  const v1::Workload slice = Slice({{"main", 5}});
  EXPECT_THAT(PodsToUngate(slice, {Pod("demo-a", false), Pod("demo-b", false), Pod("demo-c", false),
                                   Pod("demo-e", true), Pod("demo-d", true)}),
              ElementsAre("demo-d", "demo-e"));
}

TEST(PodsToUngateTest, SurplusGatedPodsStayGated) {
  const v1::Workload slice = Slice({{"main", 4}});
  EXPECT_THAT(PodsToUngate(slice, {Pod("p0", false), Pod("p1", false), Pod("p2", false),
                                   Pod("p5", true), Pod("p3", true), Pod("p4", true)}),
              ElementsAre("p3"));
}

TEST(PodsToUngateTest, TerminatedPodsAreIgnored) {
  // A terminated ungated pod frees its place; a terminated gated pod is never ungated.
  const v1::Workload slice = Slice({{"main", 3}});
  EXPECT_THAT(PodsToUngate(slice, {Pod("p0", false), Pod("p1", false, /*terminated=*/true),
                                   Pod("p2", true, /*terminated=*/true), Pod("p3", true),
                                   Pod("p4", true)}),
              ElementsAre("p3", "p4"));
}

TEST(PodsToUngateTest, APendingSliceUngatesNothing) {
  const v1::Workload slice = Slice({{"main", 5}}, /*admitted=*/false);
  EXPECT_THAT(PodsToUngate(slice, {Pod("p0", true), Pod("p1", true)}), IsEmpty());
  EXPECT_THAT(GrantedCounts(slice), IsEmpty());
}

TEST(PodsToUngateTest, AFinishedOrEvictedSliceUngatesNothing) {
  v1::Workload finished = Slice({{"main", 5}});
  SetCondition(&finished, "Finished", true);
  EXPECT_THAT(PodsToUngate(finished, {Pod("p0", true)}), IsEmpty());
  v1::Workload evicted = Slice({{"main", 5}});
  SetCondition(&evicted, "Evicted", true);
  EXPECT_THAT(PodsToUngate(evicted, {Pod("p0", true)}), IsEmpty());
}

TEST(PodsToUngateTest, AfterAScaleDownNothingIsUngatedUntilPodsTerminate) {
  const v1::Workload slice = Slice({{"main", 2}});
  EXPECT_THAT(PodsToUngate(slice, {Pod("p0", false), Pod("p1", false), Pod("p2", false),
                                   Pod("p3", true)}),
              IsEmpty());
}

TEST(PodsToUngateTest, AnInPlaceScaleDownCapsTheAdmittedCount) {
  // Admitted with 4, scaled down to 2 in place: the admission still says 4.
  v1::Workload slice = Slice({{"main", 4}});
  slice.mutable_spec()->mutable_pod_sets(0)->set_count(2);
  EXPECT_THAT(PodsToUngate(slice, {Pod("p0", false), Pod("p1", true), Pod("p2", true)}),
              ElementsAre("p1"));
}

TEST(PodsToUngateTest, PodSetsAreCountedSeparately) {
  // A RayCluster-shaped job: the head is running, workers scaled 1 -> 2.
  const v1::Workload slice = Slice({{"head", 1}, {"workers", 2}});
  EXPECT_THAT(PodsToUngate(slice, {Pod("head-0", false, false, "head"),
                                   Pod("head-1", true, false, "head"),
                                   Pod("worker-b", true, false, "workers"),
                                   Pod("worker-a", false, false, "workers"),
                                   Pod("worker-c", true, false, "workers"),
                                   Pod("stray", true, false, "other")}),
              ElementsAre("worker-b"));
  EXPECT_THAT(GrantedCounts(slice),
              ElementsAre(std::make_pair(std::string("head"), 1),
                          std::make_pair(std::string("workers"), 2)));
}

TEST(WorkloadDetailTest, ShowsTheSliceChainAndGrantedCounts) {
  v1::Workload slice = Slice({{"main", 5}});
  auto& annotations = *slice.mutable_metadata()->mutable_annotations();
  annotations[kWorkloadSliceNameAnnotation] = "job-demo-e7080";
  annotations[kWorkloadSliceReplacementForAnnotation] = "ns/job-demo-e7080";
  annotations["kueue.x-k8s.io/elastic-job"] = "true";
  const std::string detail = WorkloadDetail(slice);
  EXPECT_THAT(detail, ::testing::HasSubstr("slice of:         job-demo-e7080\n"));
  EXPECT_THAT(detail, ::testing::HasSubstr("replacement for:  ns/job-demo-e7080\n"));
  EXPECT_THAT(detail, ::testing::HasSubstr("granted counts:   main=5 (cpu:default)\n"));
  EXPECT_THAT(detail, ::testing::HasSubstr("elastic:          yes\n"));

  v1::ResizeResponse resp;
  resp.set_outcome(v1::ResizeResponse::SLICE_CREATED);
  *resp.add_workloads() = slice;
  const std::string report = ResizeReport(resp);
  EXPECT_THAT(report, ::testing::HasSubstr("outcome: SLICE_CREATED\n"));
  EXPECT_THAT(report, ::testing::HasSubstr("job-demo-078e4"));
  EXPECT_THAT(report, ::testing::HasSubstr("main=5"));
}

}  // namespace
}  // namespace admitd::clients
