#include "clients/shim/integrations/raycluster/raycluster_workload.h"

#include "clients/shim/integrations/raycluster/raycluster_integration.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

// A RayCluster as the API server returns it (the CRD's defaults applied), suspended by the
// webhook: a head and two worker groups.
nlohmann::json SuspendedCluster() {
  return nlohmann::json::parse(R"({
    "apiVersion": "ray.io/v1", "kind": "RayCluster",
    "metadata": {"name": "raycluster-a", "namespace": "team-a", "generation": 1,
                 "uid": "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b", "resourceVersion": "7",
                 "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "team": "a"},
                 "annotations": {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "600"}},
    "spec": {"suspend": true,
             "headGroupSpec": {"rayStartParams": {},
                               "template": {"spec": {"containers": [
                                 {"name": "ray-head", "image": "rayproject/ray",
                                  "resources": {"requests": {"cpu": "1"}}}]}}},
             "workerGroupSpecs": [
               {"groupName": "Small", "replicas": 2, "minReplicas": 0, "maxReplicas": 5,
                "numOfHosts": 1, "rayStartParams": {},
                "template": {"metadata": {"labels": {"app": "w"}},
                             "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray",
                                                      "resources": {"requests": {"cpu": "1"}}}]}}},
               {"groupName": "tpu", "replicas": 3, "numOfHosts": 2, "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray",
                                                      "resources": {"requests": {"cpu": "2"}}}]}}}]}
  })");
}

TEST(RayClusterWorkloadTest, KueuesWorkloadForARayCluster) {
  absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(SuspendedCluster(), {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "raycluster-raycluster-a-9cb53");  // Kueue's computed vector
  EXPECT_EQ(wl->metadata().namespace_(), "team-a");
  EXPECT_EQ(wl->metadata().labels().at("kueue.x-k8s.io/job-uid"),
            "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b");
  EXPECT_EQ(wl->metadata().labels().count("team"), 0u);
  EXPECT_EQ(wl->metadata().annotations().at("provreq.kueue.x-k8s.io/maxRunDurationSeconds"), "600");
  EXPECT_EQ(wl->metadata().annotations().count("kueue.x-k8s.io/elastic-job"), 0u);
  ASSERT_EQ(wl->metadata().owner_references_size(), 1);
  const v1::OwnerReference& owner = wl->metadata().owner_references(0);
  EXPECT_EQ(owner.api_version(), "ray.io/v1");
  EXPECT_EQ(owner.kind(), "RayCluster");
  EXPECT_EQ(owner.name(), "raycluster-a");
  EXPECT_TRUE(owner.controller());
  EXPECT_EQ(wl->spec().queue_name(), "user-queue");
  ASSERT_EQ(wl->spec().pod_sets_size(), 3);
  EXPECT_EQ(wl->spec().pod_sets(0).name(), "head");
  EXPECT_EQ(wl->spec().pod_sets(0).count(), 1);
  EXPECT_EQ(wl->spec().pod_sets(0).template_().spec().containers_size(), 1);
  EXPECT_EQ(wl->spec().pod_sets(1).name(), "small");  // the group name in lower case
  EXPECT_EQ(wl->spec().pod_sets(1).count(), 2);
  EXPECT_EQ(wl->spec().pod_sets(1).template_().labels().at("app"), "w");
  EXPECT_EQ(wl->spec().pod_sets(2).name(), "tpu");
  EXPECT_EQ(wl->spec().pod_sets(2).count(), 6);  // replicas × numOfHosts
  for (const v1::PodSet& ps : wl->spec().pod_sets()) EXPECT_FALSE(ps.has_min_count());
}

TEST(RayClusterWorkloadTest, UnsetReplicasCountOnceAndLabelsSetTheSpec) {
  nlohmann::json rc = SuspendedCluster();
  rc["spec"]["workerGroupSpecs"][0].erase("replicas");
  rc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high";
  rc["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "90";
  absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(rc, {.label_keys_to_copy = {"team"}});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->spec().pod_sets(1).count(), 1);
  EXPECT_EQ(wl->spec().priority_class_ref().name(), "high");
  EXPECT_EQ(wl->spec().maximum_execution_time_seconds(), 90);
  EXPECT_EQ(wl->metadata().labels().at("team"), "a");
}

TEST(RayClusterWorkloadTest, AutoscalingAddsKubeRaysSidecarToTheHead) {
  nlohmann::json rc = SuspendedCluster();
  rc["spec"]["enableInTreeAutoscaling"] = true;
  absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(rc, {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  const v1::PodSpec& head = wl->spec().pod_sets(0).template_().spec();
  ASSERT_EQ(head.containers_size(), 2);
  EXPECT_EQ(head.containers(1).name(), "autoscaler");
  EXPECT_EQ(head.containers(1).resources().requests().at("cpu"), "500m");
  EXPECT_EQ(head.containers(1).resources().limits().at("memory"), "512Mi");
  EXPECT_EQ(wl->spec().pod_sets(1).template_().spec().containers_size(), 1);

  rc["spec"]["autoscalerOptions"] = {{"resources", {{"requests", {{"cpu", "250m"}}}}}};
  wl = WorkloadForRayCluster(rc, {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  const v1::Container& sidecar = wl->spec().pod_sets(0).template_().spec().containers(1);
  EXPECT_EQ(sidecar.resources().requests().at("cpu"), "250m");
  EXPECT_EQ(sidecar.resources().limits().count("memory"), 0u);
}

TEST(RayClusterWorkloadTest, GcsFaultToleranceRaisesTheRayContainersRequests) {
  nlohmann::json rc = SuspendedCluster();
  rc["metadata"]["annotations"]["ray.io/ft-enabled"] = "True";
  rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
      {"cpu", "100m"}, {"memory", "1Gi"}};
  absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(rc, {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  const auto& requests =
      wl->spec().pod_sets(0).template_().spec().containers(0).resources().requests();
  EXPECT_EQ(requests.at("cpu"), "200m");    // raised to the clean-up Job's
  EXPECT_EQ(requests.at("memory"), "1Gi");  // already above

  rc["metadata"]["annotations"].erase("ray.io/ft-enabled");
  rc["spec"]["gcsFaultToleranceOptions"] = {{"redisAddress", "redis:6379"}};
  rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = nlohmann::json::array();
  wl = WorkloadForRayCluster(rc, {});
  EXPECT_EQ(wl.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RayClusterWorkloadTest, AnElasticClustersNameIncludesItsGeneration) {
  nlohmann::json rc = SuspendedCluster();
  rc["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  absl::StatusOr<v1::Workload> first = WorkloadForRayCluster(rc, {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NE(first->metadata().name(), "raycluster-raycluster-a-9cb53");
  EXPECT_EQ(first->metadata().annotations().at("kueue.x-k8s.io/elastic-job"), "true");
  EXPECT_EQ(first->metadata().annotations().at("kueue.x-k8s.io/workload-slice-name"),
            first->metadata().name());
  rc["metadata"]["generation"] = 2;
  absl::StatusOr<v1::Workload> second = WorkloadForRayCluster(rc, {});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(first->metadata().name(), second->metadata().name());
  // The gate off: an ordinary cluster.
  absl::StatusOr<v1::Workload> off = WorkloadForRayCluster(rc, {.elastic_jobs = false});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->metadata().name(), "raycluster-raycluster-a-9cb53");
  EXPECT_EQ(off->metadata().annotations().count("kueue.x-k8s.io/workload-slice-name"), 0u);
}

std::vector<PodSetInfo> Infos(int n) {
  std::vector<PodSetInfo> infos;
  for (const char* name : {"head", "small", "tpu"}) {
    PodSetInfo info;
    info.name = name;
    info.node_selector["pool"] = "a";
    info.labels["kueue.x-k8s.io/podset"] = name;
    info.annotations["kueue.x-k8s.io/workload"] = "raycluster-raycluster-a-9cb53";
    info.tolerations.push_back({{"key", "spot"}, {"operator", "Exists"}});
    infos.push_back(info);
  }
  infos.resize(n);
  return infos;
}

TEST(RayClusterWorkloadTest, StartUnsuspendsAndMergesEachGroupsInfo) {
  const nlohmann::json rc = SuspendedCluster();
  absl::StatusOr<nlohmann::json> patch = StartPatchFor(rc, RayClusterLayout(rc), Infos(3), /*elastic=*/false);
  ASSERT_TRUE(patch.ok()) << patch.status();
  nlohmann::json after = rc;
  after.merge_patch(*patch);
  EXPECT_EQ(after["spec"]["suspend"], false);
  const nlohmann::json& head = after["spec"]["headGroupSpec"]["template"];
  EXPECT_EQ(head["spec"]["nodeSelector"]["pool"], "a");
  EXPECT_EQ(head["metadata"]["labels"]["kueue.x-k8s.io/podset"], "head");
  EXPECT_EQ(head["spec"]["tolerations"].size(), 1u);
  const nlohmann::json& small = after["spec"]["workerGroupSpecs"][0]["template"];
  EXPECT_EQ(small["metadata"]["labels"]["kueue.x-k8s.io/podset"], "small");
  EXPECT_EQ(small["metadata"]["labels"]["app"], "w");
  EXPECT_EQ(after["spec"]["workerGroupSpecs"][1]["template"]["metadata"]["labels"]
                 ["kueue.x-k8s.io/podset"],
            "tpu");
  EXPECT_EQ(after["spec"]["workerGroupSpecs"][1]["replicas"], 3);  // the rest unchanged
  EXPECT_EQ(after["spec"]["headGroupSpec"]["rayStartParams"], nlohmann::json::object());

  absl::StatusOr<nlohmann::json> wrong = StartPatchFor(rc, RayClusterLayout(rc), Infos(2), false);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(wrong.status().message(), "invalid podset infos: expecting 3 podset, got 2");

  nlohmann::json conflicting = rc;
  conflicting["spec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] = {{"pool", "b"}};
  absl::StatusOr<nlohmann::json> conflict = StartPatchFor(conflicting, RayClusterLayout(conflicting), Infos(3), false);
  EXPECT_EQ(conflict.status().message(),
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for "
            "key=pool, value1=b, value2=a");
}

TEST(RayClusterWorkloadTest, StopSuspendsAndRestoresTheWorkloadsTemplates) {
  absl::StatusOr<v1::Workload> wl = WorkloadForRayCluster(SuspendedCluster(), {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  nlohmann::json running = SuspendedCluster();
  running.merge_patch(*StartPatchFor(running, RayClusterLayout(running), Infos(3), false));
  nlohmann::json patch = StopPatchFor(running, RayClusterLayout(running), &*wl);
  nlohmann::json after = running;
  after.merge_patch(patch);
  EXPECT_EQ(after["spec"]["suspend"], true);
  EXPECT_EQ(after["spec"], SuspendedCluster()["spec"]);  // exactly as it was before the start
  // Stopped and restored: nothing more to do.
  EXPECT_EQ(StopPatchFor(after, RayClusterLayout(after), &*wl), nlohmann::json::object());
  // A Workload of another shape: only suspended.
  v1::Workload other = *wl;
  other.mutable_spec()->mutable_pod_sets()->RemoveLast();
  nlohmann::json suspended_only = running;
  suspended_only.merge_patch(StopPatchFor(running, RayClusterLayout(running), &other));
  EXPECT_EQ(suspended_only["spec"]["suspend"], true);
  EXPECT_EQ(suspended_only["spec"]["headGroupSpec"], running["spec"]["headGroupSpec"]);
  EXPECT_EQ(StopPatchFor(after, RayClusterLayout(after), nullptr), nlohmann::json::object());
}

TEST(RayClusterWorkloadTest, ActiveWhileReadyOrWhileAPodRemains) {
  std::unique_ptr<Integration> integration = NewRayClusterIntegration();
  const FrameworkOptions options;
  auto active = [&](const nlohmann::json& rc, std::vector<nlohmann::json> pods) {
    return integration->Wrap(rc, std::move(pods), options)->IsActive();
  };
  nlohmann::json rc = SuspendedCluster();
  EXPECT_FALSE(active(rc, {}));
  rc["status"]["state"] = "ready";
  EXPECT_TRUE(active(rc, {}));
  rc["status"]["state"] = "suspended";
  const nlohmann::json running = {{"status", {{"phase", "Running"}}}};
  const nlohmann::json done = {{"status", {{"phase", "Succeeded"}}}};
  EXPECT_TRUE(active(rc, {done, running}));
  EXPECT_FALSE(active(rc, {done}));
  EXPECT_TRUE(RayClusterSuspended(rc));
}

TEST(RayClusterWorkloadTest, MergePatchBetweenTwoDocuments) {
  const nlohmann::json a = {{"x", 1}, {"y", {{"p", 1}, {"q", 2}}}, {"z", {1, 2}}};
  const nlohmann::json b = {{"y", {{"p", 1}, {"r", 3}}}, {"z", {1}}, {"w", true}};
  const nlohmann::json patch = MergePatchBetween(a, b);
  EXPECT_EQ(patch,
            nlohmann::json::parse(R"({"x": null, "y": {"q": null, "r": 3}, "z": [1], "w": true})"));
  nlohmann::json applied = a;
  applied.merge_patch(patch);
  EXPECT_EQ(applied, b);
  EXPECT_EQ(MergePatchBetween(a, a), nlohmann::json::object());
}

}  // namespace
}  // namespace admitd::shim
