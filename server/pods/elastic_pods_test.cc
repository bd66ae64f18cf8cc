#include "server/pods/elastic_pods.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::pods {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::PodObservation Pod(const std::string& name, const std::string& pod_set, bool gated) {
  v1::PodObservation p;
  p.set_name(name);
  (*p.mutable_labels())["kueue.x-k8s.io/podset"] = pod_set;
  (*p.mutable_annotations())[kSliceNameAnnotation] = "job-a";
  if (gated) p.add_scheduling_gates()->set_name(kElasticJobGate);
  return p;
}

v1::Workload Slice(const std::map<std::string, std::pair<int, int>>& counts) {  // spec, admitted
  v1::Workload wl;
  for (const auto& [name, c] : counts) {
    v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
    ps->set_name(name);
    ps->set_count(c.first);
    v1::PodSetAssignment* psa = wl.mutable_status()->mutable_admission()->add_pod_set_assignments();
    psa->set_name(name);
    psa->set_count(c.second);
  }
  for (const char* type : {"QuotaReserved", "Admitted"}) {
    v1::Condition* c = wl.mutable_status()->add_conditions();
    c->set_type(type);
    c->set_status("True");
  }
  return wl;
}

TEST(ElasticPodsTest, RoomPerPodSetLowestNamesFirst) {
  const v1::Workload slice = Slice({{"head", {1, 1}}, {"workers", {3, 3}}});
  std::vector<v1::PodObservation> pods = {
      Pod("w-3", "workers", true), Pod("w-1", "workers", false), Pod("w-2", "workers", true),
      Pod("w-0", "workers", true), Pod("h-0", "head", true),     Pod("x-0", "other", true)};
  EXPECT_THAT(ElasticPodsToUngate(&slice, pods), ElementsAre("h-0", "w-0", "w-2"));
  // A terminated ungated pod frees its room.
  pods[1].set_phase(v1::POD_PHASE_FAILED);
  EXPECT_THAT(ElasticPodsToUngate(&slice, pods), ElementsAre("h-0", "w-0", "w-2", "w-3"));
}

TEST(ElasticPodsTest, AScaleDownGrantsTheSmallerCountAndAnInactiveSliceNothing) {
  v1::Workload slice = Slice({{"main", {1, 3}}});
  const std::vector<v1::PodObservation> pods = {Pod("b", "main", true), Pod("a", "main", true)};
  EXPECT_THAT(ElasticPodsToUngate(&slice, pods), ElementsAre("a"));
  v1::Condition* evicted = slice.mutable_status()->add_conditions();
  evicted->set_type("Evicted");
  evicted->set_status("True");
  EXPECT_THAT(ElasticPodsToUngate(&slice, pods), IsEmpty());
  EXPECT_THAT(ElasticPodsToUngate(nullptr, pods), IsEmpty());
}

TEST(ElasticPodsTest, OnlyPodsWithTheSliceAnnotationAreElastic) {
  EXPECT_TRUE(IsElasticJobPod(Pod("a", "main", false)));
  EXPECT_FALSE(IsElasticJobPod(v1::PodObservation()));
  const v1::PodDirective d = ElasticUngateDirective(Pod("a", "main", true), 7);
  EXPECT_EQ(d.action(), v1::PodDirective::UNGATE);
  EXPECT_EQ(d.scheduling_gate(), kElasticJobGate);
  EXPECT_EQ(d.revision(), 7);
  EXPECT_TRUE(d.node_selector().empty());
}

}  // namespace
}  // namespace admitd::pods
