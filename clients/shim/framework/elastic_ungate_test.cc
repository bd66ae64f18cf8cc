#include "clients/shim/framework/elastic_pods.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

nlohmann::json Pod(const std::string& name, bool gated, const std::string& phase = "Pending",
                   const std::string& chain = "job-a-1") {
  nlohmann::json pod = {
      {"metadata",
       {{"name", name},
        {"namespace", "ns"},
        {"resourceVersion", "7"},
        {"labels", {{"kueue.x-k8s.io/podset", "main"}}},
        {"annotations", {{"kueue.x-k8s.io/workload-slice-name", chain}}}}},
      {"spec", {{"schedulingGates", nlohmann::json::array()}}},
      {"status", {{"phase", phase}}}};
  if (gated) {
    pod["spec"]["schedulingGates"].push_back({{"name", "other.example/gate"}});
    pod["spec"]["schedulingGates"].push_back({{"name", kElasticJobGate}});
  }
  return pod;
}

TEST(PodsToUngate, FillsTheRoomLowestNameFirst) {
  // Story 2: 2 running, 3 new gated, the slice admits 4 → two more, the lowest names.
  std::vector<nlohmann::json> pods = {Pod("j-d", true), Pod("j-a", false), Pod("j-c", true),
                                      Pod("j-b", false), Pod("j-e", true)};
  EXPECT_THAT(PodsToUngate(pods, "job-a-1", {{"main", 3}}), ElementsAre("j-c"));
  EXPECT_THAT(PodsToUngate(pods, "job-a-1", {{"main", 4}}), ElementsAre("j-c", "j-d"));
  EXPECT_THAT(PodsToUngate(pods, "job-a-1", {{"main", 5}}), ElementsAre("j-c", "j-d", "j-e"));
  EXPECT_THAT(PodsToUngate(pods, "job-a-1", {{"main", 2}}), IsEmpty());
}

TEST(PodsToUngate, IgnoresTerminatedPodsOtherChainsAndUnknownPodSets) {
  std::vector<nlohmann::json> pods = {Pod("a", false, "Succeeded"), Pod("b", false, "Failed"),
                                      Pod("c", true), Pod("d", true, "Pending", "other-chain")};
  // The terminated pods leave room: both slots go to c (d belongs to another chain).
  EXPECT_THAT(PodsToUngate(pods, "job-a-1", {{"main", 2}}), ElementsAre("c"));
  EXPECT_THAT(PodsToUngate(pods, "job-a-1", {{"workers", 2}}), IsEmpty());
}

TEST(PodsToUngate, FallsBackToTheWorkloadAnnotation) {
  nlohmann::json pod = Pod("a", true);
  pod["metadata"]["annotations"] = {{"kueue.x-k8s.io/workload", "job-a-1"}};
  EXPECT_THAT(PodsToUngate({pod}, "job-a-1", {{"main", 1}}), ElementsAre("a"));
}

TEST(UngatePatch, RemovesOnlyTheElasticGateAndCarriesTheVersion) {
  nlohmann::json patch = UngatePatch(Pod("a", true));
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(patch["spec"]["schedulingGates"],
            nlohmann::json::array({{{"name", "other.example/gate"}}}));
  nlohmann::json only = Pod("b", false);
  only["spec"]["schedulingGates"] = {{{"name", kElasticJobGate}}};
  EXPECT_TRUE(UngatePatch(only)["spec"]["schedulingGates"].is_null());
  EXPECT_TRUE(HasElasticGate(only));
  EXPECT_FALSE(HasElasticGate(Pod("c", false)));
}

}  // namespace
}  // namespace admitd::shim
