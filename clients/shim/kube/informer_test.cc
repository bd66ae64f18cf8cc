// The shim's Kubernetes client and informer against the test API server of integration/kube/
// (run as a child process on a free port).
#include "clients/shim/kube/informer.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "clients/shim/kube/test_cluster.h"
#include "common/testing/wait_for.h"

namespace admitd::shim {
namespace {

using ::testing::HasSubstr;

nlohmann::json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
}

constexpr char kPods[] = "/api/v1/namespaces/default/pods";

using ::admitd::testing::WaitFor;

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(cluster_.server().empty()) << "the test cluster did not start"; }
  TestCluster cluster_;
  KubeClient kube_{KubeConfig{.server = cluster_.server()}};
};

TEST_F(InformerTest, KubernetesErrorsBecomeStatusCodes) {
  absl::StatusOr<nlohmann::json> created = kube_.Create(kPods, Pod("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rv = (*created)["metadata"]["resourceVersion"];
  EXPECT_EQ(kube_.Create(kPods, Pod("a")).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(kube_.Get(absl::StrCat(kPods, "/nope")).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(kube_.Patch(absl::StrCat(kPods, "/a"), {{"metadata", {{"labels", {{"k", "1"}}}}}}).ok());
  // A write that carries the old resourceVersion is a conflict: the shim refetches and retries.
  absl::StatusOr<nlohmann::json> stale = kube_.Patch(
      absl::StrCat(kPods, "/a"),
      {{"metadata", {{"resourceVersion", rv}, {"labels", {{"k", "2"}}}}}});
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(stale.status().message(), HasSubstr("the object has been modified"));
}

TEST_F(InformerTest, ADeleteWithAUidSparesAPodThatTookTheName) {
  absl::StatusOr<nlohmann::json> first = kube_.Create(kPods, Pod("b"));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string old_uid = (*first)["metadata"]["uid"];
  ASSERT_TRUE(kube_.Delete(absl::StrCat(kPods, "/b")).ok());
  absl::StatusOr<nlohmann::json> second = kube_.Create(kPods, Pod("b"));
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<nlohmann::json> stale = kube_.DeleteUid(absl::StrCat(kPods, "/b"), old_uid);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(stale.status().message(), HasSubstr("Precondition failed: UID in precondition"));
  EXPECT_TRUE(kube_.Get(absl::StrCat(kPods, "/b")).ok());
  EXPECT_TRUE(kube_.DeleteUid(absl::StrCat(kPods, "/b"), (*second)["metadata"]["uid"]).ok());
  EXPECT_EQ(kube_.Get(absl::StrCat(kPods, "/b")).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(InformerTest, ACollectionNotServedIsMissing) {
  // rayclusters.ray.io is not installed in this cluster.
  Informer rayclusters(kube_, "/apis/ray.io/v1/rayclusters");
  EXPECT_EQ(rayclusters.List().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(rayclusters.missing());
  EXPECT_EQ(rayclusters.lists(), 0);
  Informer pods(kube_, kPods);
  ASSERT_TRUE(pods.List().ok());
  EXPECT_FALSE(pods.missing());
}

TEST_F(InformerTest, TheCacheFollowsTheClusterAndTheHandlerSeesEachChange) {
  ASSERT_TRUE(kube_.Create(kPods, Pod("a")).ok());
  absl::Mutex mu;
  std::vector<std::string> seen;
  Informer pods(kube_, kPods, [&](const std::string& type, const nlohmann::json& pod) {
    absl::MutexLock lock(&mu);
    seen.push_back(type + " " + ObjectKey(pod));
  }, /*watch_timeout_seconds=*/2);
  ASSERT_TRUE(pods.List().ok());
  EXPECT_EQ(pods.Size(), 1u);
  std::thread run([&] { pods.Run(); });
  ASSERT_TRUE(kube_.Create(kPods, Pod("b")).ok());
  EXPECT_TRUE(WaitFor([&] { return pods.Get("default/b").has_value(); }));
  ASSERT_TRUE(kube_.Delete(absl::StrCat(kPods, "/a")).ok());
  EXPECT_TRUE(WaitFor([&] { return !pods.Get("default/a").has_value(); }));
  // Streams that end are resumed from the last version seen, without listing again.
  absl::SleepFor(absl::Seconds(3));
  ASSERT_TRUE(kube_.Patch(absl::StrCat(kPods, "/b"), {{"metadata", {{"labels", {{"k", "1"}}}}}}).ok());
  EXPECT_TRUE(WaitFor([&] {
    auto b = pods.Get("default/b");
    return b.has_value() && (*b)["metadata"]["labels"].value("k", "") == "1";
  }));
  pods.Stop();
  run.join();
  EXPECT_EQ(pods.lists(), 1);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(seen, ::testing::ElementsAre("ADDED default/a", "ADDED default/b",
                                           "DELETED default/a", "MODIFIED default/b"));
}

TEST_F(InformerTest, ALabelIndexFollowsRelabelsAndDeletes) {
  ASSERT_TRUE(kube_.Create(kPods, Pod("a")).ok());
  ASSERT_TRUE(kube_.Create(kPods, Pod("b")).ok());
  Informer pods(kube_, kPods, nullptr, /*watch_timeout_seconds=*/1);
  pods.IndexLabel("app");
  ASSERT_TRUE(pods.List().ok());
  auto names = [&](const std::string& key, const std::string& value) {
    std::vector<std::string> out;
    for (const nlohmann::json& p : pods.Labelled("default", key, value)) {
      out.push_back(p["metadata"]["name"]);
    }
    return out;
  };
  EXPECT_THAT(names("app", "x"), ::testing::ElementsAre("a", "b"));
  EXPECT_TRUE(names("app", "y").empty());
  EXPECT_TRUE(pods.Labelled("other", "app", "x").empty());  // by namespace too
  ASSERT_TRUE(kube_.Patch(absl::StrCat(kPods, "/b"), {{"metadata", {{"labels", {{"app", "y"}}}}}}).ok());
  ASSERT_TRUE(kube_.Delete(absl::StrCat(kPods, "/a")).ok());
  EXPECT_TRUE(pods.WatchOnce().ok());
  EXPECT_TRUE(names("app", "x").empty());
  EXPECT_THAT(names("app", "y"), ::testing::ElementsAre("b"));
  // A label without an index is answered by a scan, the same way.
  ASSERT_TRUE(kube_.Patch(absl::StrCat(kPods, "/b"), {{"metadata", {{"labels", {{"k", "1"}}}}}}).ok());
  EXPECT_TRUE(pods.WatchOnce().ok());
  EXPECT_THAT(names("k", "1"), ::testing::ElementsAre("b"));
}

TEST_F(InformerTest, AnExpiredVersionListsAgain) {
  ASSERT_TRUE(kube_.Create(kPods, Pod("a")).ok());
  Informer pods(kube_, kPods, nullptr, /*watch_timeout_seconds=*/1);
  ASSERT_TRUE(pods.List().ok());
  ASSERT_TRUE(kube_.Create(kPods, Pod("b")).ok());
  ASSERT_TRUE(kube_.Create("/_fixture/compact", nlohmann::json::object()).ok());
  EXPECT_TRUE(pods.WatchOnce().ok());  // 410, then a fresh list
  EXPECT_EQ(pods.lists(), 2);
  EXPECT_TRUE(pods.Get("default/b").has_value());
}

}  // namespace
}  // namespace admitd::shim

namespace admitd::shim {
namespace {

TEST(InformerStop, EndsAQuietWatchPromptly) {
  TestCluster cluster("600");  // no bookmark will come to end the watch
  ASSERT_FALSE(cluster.server().empty());
  KubeClient kube(KubeConfig{.server = cluster.server()});
  Informer pods(kube, kPods);
  ASSERT_TRUE(pods.List().ok());
  std::thread t([&] { pods.Run(); });
  absl::SleepFor(absl::Milliseconds(300));  // the watch is open and idle
  const absl::Time start = absl::Now();
  pods.Stop();
  t.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

}  // namespace
}  // namespace admitd::shim
