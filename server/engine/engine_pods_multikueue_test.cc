// MultiKueue for pods through the engine: in a worker, the copy a manager dispatched takes the
// pods the worker's shim made from it, ungates them, carries their status back, finishes with
// them, and its pods are deleted once it is gone.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/engine/engine_pods_test_fixture.h"

namespace admitd::engine {
namespace pods_multikueue_test {
namespace {

using ::testing::UnorderedElementsAre;
using pod_testing::EnginePodsTest;
using pod_testing::Member;
using pod_testing::Pod;
using pod_testing::Running;

// A pod the worker's shim made from copy `copy`.
v1::PodObservation FromCopy(v1::PodObservation p, const std::string& copy) {
  (*p.mutable_labels())[kMultiKueueOriginLabel] = "manager";
  (*p.mutable_annotations())[kPrebuiltWorkloadKey] = copy;
  p.clear_finalizers();
  return p;
}

class EnginePodsMultiKueueTest : public EnginePodsTest {
 protected:
  // The copy of `wl` a manager dispatched here: its origin label, no owner; admitted.
  void Dispatch(v1::Workload wl) {
    wl.mutable_metadata()->clear_owner_references();
    wl.mutable_metadata()->mutable_labels()->clear();
    (*wl.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "manager";
    wl.clear_status();
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    ASSERT_TRUE(engine_->Submit(req, Now()).ok());
    while (engine_->RunCycle(Now()).more) {
    }
    ASSERT_EQ(State(wl.metadata().name()), v1::WORKLOAD_STATE_ADMITTED);
  }
  static std::string PhaseThere(const v1::Workload& copy, const std::string& pod) {
    const nlohmann::json status =
        nlohmann::json::parse(copy.remote_job().status(), nullptr, false);
    if (!status.is_object() || !status.contains("pods") || !status["pods"].contains(pod)) {
      return "";
    }
    return status["pods"][pod].value("phase", "");
  }
};

TEST_F(EnginePodsMultiKueueTest, ACopyTakesItsPodRunsItAndReportsItsStatus) {
  Dispatch(pods::BuildSinglePodWorkload(Pod("p"), "lq"));
  const std::string copy = pods::SinglePodWorkloadName("p", "p-uid");
  // The worker's pod has a uid of its own: it belongs to the copy by name, not by uid.
  v1::PodObservation pod = FromCopy(Pod("p"), copy);
  pod.set_uid("worker-uid");
  v1::ReportPodsResponse resp = Report({pod});
  EXPECT_TRUE(resp.errors().empty());
  v1::Workload wl = Get(copy);
  ASSERT_EQ(wl.metadata().owner_references_size(), 1);
  EXPECT_EQ(wl.metadata().owner_references(0).uid(), "worker-uid");
  EXPECT_EQ(wl.metadata().labels().at(kPodClusterLabel), "c1");
  EXPECT_EQ(PhaseThere(wl, "p"), "Pending");
  ASSERT_EQ(resp.directives_size(), 1);
  EXPECT_EQ(resp.directives(0).action(), v1::PodDirective::UNGATE);
  // No Workload of its own was made.
  EXPECT_EQ(Get(pods::SinglePodWorkloadName("p", "worker-uid")).metadata().name(), "");

  v1::PodObservation running = Running(pod);
  Report({running});
  EXPECT_EQ(PhaseThere(Get(copy), "p"), "Running");
  v1::PodObservation done = running;
  done.set_phase(v1::POD_PHASE_SUCCEEDED);
  done.set_resource_version(done.resource_version() + 1);
  Report({done});
  wl = Get(copy);
  EXPECT_EQ(StateOf(wl), v1::WORKLOAD_STATE_FINISHED);
  EXPECT_EQ(PhaseThere(wl, "p"), "Succeeded");  // the last status in the same write

  // The manager withdraws the copy: its pod goes.
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name(copy);
  ASSERT_TRUE(engine_->DeleteWorkload(del, Now()).ok());
  EXPECT_THAT(Actions(Directives()), UnorderedElementsAre("DELETE p"));
}

TEST_F(EnginePodsMultiKueueTest, PodsWithoutTheirCopyMakeNothingAndGo) {
  v1::ReportPodsResponse resp = Report({FromCopy(Pod("p"), "gone")});
  EXPECT_EQ(Get("gone").metadata().name(), "");
  EXPECT_EQ(Get(pods::SinglePodWorkloadName("p", "p-uid")).metadata().name(), "");
  EXPECT_THAT(Actions(Directives()), UnorderedElementsAre("DELETE p"));
}

TEST_F(EnginePodsMultiKueueTest, AGroupsCopyTakesEveryMember) {
  pods::GroupComposition comp =
      pods::ComposeGroup({Member("a", "g", "2"), Member("b", "g", "2")}, pods::PodOptions());
  ASSERT_TRUE(comp.workload.has_value()) << comp.error;
  Dispatch(*comp.workload);
  Report({FromCopy(Member("a", "g", "2"), "g")});
  v1::ReportPodsResponse resp = Report({FromCopy(Member("b", "g", "2"), "g")});
  const v1::Workload wl = Get("g");
  EXPECT_EQ(wl.metadata().owner_references_size(), 2);
  EXPECT_EQ(wl.metadata().annotations().at(kIsGroupWorkloadAnnotation), "true");
  EXPECT_THAT(Actions(Directives()), UnorderedElementsAre("UNGATE a", "UNGATE b"));
}

}  // namespace
}  // namespace pods_multikueue_test
}  // namespace admitd::engine
