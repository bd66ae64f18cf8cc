#include "server/engine/resources.h"

#include "server/engine/quantity.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::engine {
namespace {

v1::Container* AddContainer(google::protobuf::RepeatedPtrField<v1::Container>* list,
                            const std::map<std::string, std::string>& requests,
                            const std::map<std::string, std::string>& limits = {},
                            const std::string& restart_policy = "") {
  v1::Container* c = list->Add();
  for (const auto& [k, v] : requests) (*c->mutable_resources()->mutable_requests())[k] = v;
  for (const auto& [k, v] : limits) (*c->mutable_resources()->mutable_limits())[k] = v;
  c->set_restart_policy(restart_policy);
  return c;
}

TEST(PodRequestsTest, SumsContainers) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"cpu", "500m"}, {"memory", "1Gi"}});
  AddContainer(pod.mutable_containers(), {{"cpu", "1500m"}});
  EXPECT_EQ(PodRequests(pod), (ResourceList{{"cpu", 2000}, {"memory", int64_t{1} << 30}}));
}

TEST(PodRequestsTest, RequestsDefaultToLimits) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"cpu", "1"}}, {{"cpu", "2"}, {"memory", "1Mi"}});
  EXPECT_EQ(PodRequests(pod), (ResourceList{{"cpu", 1000}, {"memory", 1 << 20}}));
}

TEST(PodRequestsTest, InitContainersTakeTheMaximum) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"cpu", "1"}, {"memory", "1Gi"}});
  AddContainer(pod.mutable_init_containers(), {{"cpu", "3"}});
  AddContainer(pod.mutable_init_containers(), {{"cpu", "2"}, {"memory", "512Mi"}});
  // cpu: max(1, 3, 2) = 3; memory: max(1Gi, 512Mi) = 1Gi.
  EXPECT_EQ(PodRequests(pod), (ResourceList{{"cpu", 3000}, {"memory", int64_t{1} << 30}}));
}

TEST(PodRequestsTest, SidecarsAccumulate) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"cpu", "1"}});
  AddContainer(pod.mutable_init_containers(), {{"cpu", "500m"}}, {}, "Always");  // sidecar
  AddContainer(pod.mutable_init_containers(), {{"cpu", "2"}});  // runs beside the sidecar
  AddContainer(pod.mutable_init_containers(), {{"cpu", "250m"}}, {}, "Always");
  // Init peak: 0.5 + 2 = 2.5; main: 1 + 0.5 + 0.25 = 1.75.
  EXPECT_EQ(PodRequests(pod), (ResourceList{{"cpu", 2500}}));
}

TEST(PodRequestsTest, OverheadIsAdded) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"cpu", "1"}});
  (*pod.mutable_overhead())["cpu"] = "100m";
  (*pod.mutable_overhead())["memory"] = "10Mi";
  EXPECT_EQ(PodRequests(pod), (ResourceList{{"cpu", 1100}, {"memory", 10 << 20}}));
}

TEST(PodRequestsTest, PodLevelResourcesReplaceTheContainerSum) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"cpu", "1"}, {"memory", "1Gi"}});
  (*pod.mutable_resources()->mutable_requests())["cpu"] = "4";
  (*pod.mutable_overhead())["cpu"] = "1";
  EXPECT_EQ(PodRequests(pod), (ResourceList{{"cpu", 5000}}));
}

TEST(PodRequestsTest, Scales) {
  EXPECT_EQ(Scale({{"cpu", 1500}}, 4), (ResourceList{{"cpu", 6000}}));
}

TEST(PodRequestsTest, ExactSumsPassTheLargestQuantity) {
  v1::PodSpec pod;
  AddContainer(pod.mutable_containers(), {{"memory", "7Ei"}});
  AddContainer(pod.mutable_containers(), {{"memory", "7Ei"}});
  EXPECT_EQ(PodRequestsExact(pod), (ResourceAmounts{{"memory", Amount(14) << 60}}));
}

TEST(ResourceListTest, ParsesAndRendersCanonically) {
  google::protobuf::Map<std::string, std::string> in;
  in["cpu"] = "1000m";
  in["memory"] = "1048576";
  in["example.com/gpu"] = "2";
  absl::StatusOr<ResourceList> list = ParseResourceList(in);
  ASSERT_TRUE(list.ok());
  google::protobuf::Map<std::string, std::string> out;
  RenderResourceList(*list, &out);
  EXPECT_EQ(out.at("cpu"), "1");
  EXPECT_EQ(out.at("memory"), "1Mi");
  EXPECT_EQ(out.at("example.com/gpu"), "2");
  in["cpu"] = "one";
  EXPECT_EQ(ParseResourceList(in).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResourceListTest, AddToDropsZeroes) {
  FlavorResourceAmounts q{{{"f", "cpu"}, 1000}};
  AddTo(&q, {{{"f", "cpu"}, 1000}, {{"f", "memory"}, 5}});
  EXPECT_EQ(q.at({"f", "cpu"}), 2000);
  AddTo(&q, {{{"f", "cpu"}, 2000}}, -1);
  EXPECT_EQ(q.count({"f", "cpu"}), 0u);
  EXPECT_EQ(q.at({"f", "memory"}), 5);
}

}  // namespace
}  // namespace admitd::engine
