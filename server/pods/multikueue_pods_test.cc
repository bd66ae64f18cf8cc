#include "server/pods/multikueue_pods.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/pods/pod_test_util.h"

namespace admitd::pods {
namespace multikueue_pods_test {
namespace {

TEST(MultiKueuePods, WorkerPodNeedsOriginAndPrebuiltName) {
  EXPECT_FALSE(IsMultiKueueWorkerPod(PodBuilder("p").Obj()));
  EXPECT_FALSE(IsMultiKueueWorkerPod(PodBuilder("p").Label(kMultiKueueOriginLabel, "m").Obj()));
  EXPECT_FALSE(IsMultiKueueWorkerPod(PodBuilder("p").Label(kPrebuiltWorkloadKey, "wl").Obj()));
  const v1::PodObservation pod = PodBuilder("p")
                                     .Label(kMultiKueueOriginLabel, "m")
                                     .Annotation(kPrebuiltWorkloadKey, "wl-a")
                                     .Label(kPrebuiltWorkloadKey, "wl-b")
                                     .Obj();
  EXPECT_TRUE(IsMultiKueueWorkerPod(pod));
  EXPECT_EQ(PrebuiltWorkloadName(pod), "wl-a");  // the annotation wins over the label
}

TEST(MultiKueuePods, CopyAwaitsPodsUntilTakenOrOwned) {
  v1::Workload copy;
  EXPECT_FALSE(AwaitsWorkerPods(copy));
  (*copy.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "m";
  EXPECT_TRUE(AwaitsWorkerPods(copy));
  v1::Workload taken = copy;
  (*taken.mutable_metadata()->mutable_labels())[kPodClusterLabel] = "w1";
  EXPECT_FALSE(AwaitsWorkerPods(taken));
  v1::Workload owned = copy;
  owned.mutable_metadata()->add_owner_references()->set_kind("Job");
  EXPECT_FALSE(AwaitsWorkerPods(owned));
}

TEST(MultiKueuePods, RemoteStatusSpellsPhasesAndConditions) {
  v1::PodObservation running = PodBuilder("a").Phase(v1::POD_PHASE_RUNNING).Obj();
  v1::Condition* ready = running.add_conditions();
  ready->set_type("Ready");
  ready->set_status("True");
  *ready->mutable_last_transition_time() = Ts(kT0);
  const v1::PodObservation failed =
      PodBuilder("b").Phase(v1::POD_PHASE_FAILED).Message("OOMKilled").Obj();
  const nlohmann::json status = nlohmann::json::parse(RemotePodsStatus({running, failed}));
  EXPECT_EQ(status["pods"]["a"]["phase"], "Running");
  EXPECT_EQ(status["pods"]["a"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(status["pods"]["a"]["conditions"][0]["status"], "True");
  EXPECT_EQ(status["pods"]["a"]["conditions"][0]["lastTransitionTime"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(status["pods"]["b"]["phase"], "Failed");
  EXPECT_EQ(status["pods"]["b"]["message"], "OOMKilled");
  EXPECT_FALSE(status["pods"]["b"].contains("conditions"));
  EXPECT_EQ(nlohmann::json::parse(RemotePodsStatus({})), nlohmann::json({{"pods", nlohmann::json::object()}}));
}

}  // namespace
}  // namespace multikueue_pods_test
}  // namespace admitd::pods
