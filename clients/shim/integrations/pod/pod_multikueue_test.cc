#include "clients/shim/integrations/pod/pod_multikueue.h"

#include "clients/shim/framework/testing/fakes.h"
#include "common/kueue_keys.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace pod_multikueue_test {
namespace {

using testing::FakeAdmitd;
using testing::FakeCache;
using testing::FakeKube;

nlohmann::json Pod(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", uid},
            {"labels", {{"kueue.x-k8s.io/managed", "true"}, {"kueue.x-k8s.io/queue-name", "lq"}}},
            {"annotations", {{"a", "b"}}},
            {"finalizers", {"kueue.x-k8s.io/managed"}}}},
          {"spec",
           {{"nodeName", "manager-node"},
            {"schedulingGates", {{{"name", kAdmissionGate}}}},
            {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}},
          {"status",
           {{"phase", "Pending"},
            {"conditions",
             {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "SchedulingGated"}}}}}}};
}

// A pod Workload of cluster "m", dispatched (nominated) by MultiKueue, made of `pods`.
v1::Workload PodWorkload(const std::vector<nlohmann::json>& pods) {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_name("pod-a-1234");
  wl.mutable_metadata()->set_uid("wl-uid");
  (*wl.mutable_metadata()->mutable_labels())[kPodClusterLabel] = "m";
  for (const nlohmann::json& p : pods) {
    v1::OwnerReference* o = wl.mutable_metadata()->add_owner_references();
    o->set_api_version("v1");
    o->set_kind("Pod");
    o->set_name(p["metadata"]["name"]);
    o->set_uid(p["metadata"]["uid"]);
  }
  wl.mutable_status()->add_nominated_cluster_names("w1");
  return wl;
}

TEST(PodMultiKueue, ManifestListsThePodsWithoutTheirNode) {
  const nlohmann::json m = PodsManifest({Pod("a", "ua"), Pod("b", "ub")});
  ASSERT_TRUE(IsPodsManifest(m));
  ASSERT_EQ(m["items"].size(), 2u);
  EXPECT_EQ(m["items"][1]["metadata"]["name"], "b");
  EXPECT_EQ(m["items"][0]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "lq");
  EXPECT_FALSE(m["items"][0]["spec"].contains("nodeName"));
  EXPECT_EQ(m["items"][0]["spec"]["schedulingGates"][0]["name"], kAdmissionGate);
  EXPECT_FALSE(m["items"][0]["metadata"].contains("uid"));
  EXPECT_FALSE(m["items"][0]["metadata"].contains("finalizers"));
  EXPECT_FALSE(m["items"][0].contains("status"));
}

TEST(PodMultiKueue, WorkerPodsCarryOriginAndTheCopy) {
  v1::Workload copy;
  copy.mutable_metadata()->set_namespace_("ns");
  copy.mutable_metadata()->set_name("pod-a-1234");
  copy.mutable_remote_job()->set_manifest(PodsManifest({Pod("a", "ua")}).dump());
  EXPECT_EQ(WorkerPodsFor(copy).status().code(), absl::StatusCode::kInvalidArgument);  // no origin
  (*copy.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "manager";
  absl::StatusOr<std::vector<nlohmann::json>> pods = WorkerPodsFor(copy);
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  const nlohmann::json& meta = (*pods)[0]["metadata"];
  EXPECT_EQ(meta["labels"][kMultiKueueOriginLabel], "manager");
  EXPECT_EQ(meta["annotations"][kPrebuiltWorkloadKey], "pod-a-1234");
  EXPECT_EQ((*pods)[0]["spec"]["schedulingGates"][0]["name"], kAdmissionGate);

  copy.mutable_remote_job()->set_manifest(R"({"apiVersion":"batch/v1","kind":"Job","spec":{}})");
  EXPECT_EQ(WorkerPodsFor(copy).status().code(), absl::StatusCode::kInvalidArgument);
  copy.mutable_remote_job()->set_manifest(R"({"apiVersion":"v1","kind":"List","items":[{}]})");
  EXPECT_EQ(WorkerPodsFor(copy).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PodMultiKueue, StatusPatchKeepsSchedulingGatedUntilScheduledThere) {
  const nlohmann::json local = Pod("a", "ua");
  // Created there, not scheduled yet: only the phase would change, and it is the same.
  EXPECT_FALSE(PodStatusPatch(local, {{"phase", "Pending"}}).has_value());
  const nlohmann::json running = {
      {"phase", "Running"},
      {"conditions",
       {{{"type", "PodScheduled"}, {"status", "True"}}, {{"type", "Ready"}, {"status", "True"}}}}};
  std::optional<nlohmann::json> patch = PodStatusPatch(local, running);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["status"]["phase"], "Running");
  EXPECT_EQ((*patch)["status"]["conditions"], running["conditions"]);
  // Running but still unscheduled there (a gate of the worker's own): SchedulingGated stays.
  const nlohmann::json unscheduled = {{"phase", "Pending"},
                                      {"conditions", {{{"type", "Ready"}, {"status", "False"}}}}};
  patch = PodStatusPatch(local, unscheduled);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["status"]["conditions"].size(), 2u);
  EXPECT_EQ((*patch)["status"]["conditions"][1]["reason"], "SchedulingGated");
  // Applied, nothing more to do.
  nlohmann::json applied = local;
  applied.merge_patch(*patch);
  EXPECT_FALSE(PodStatusPatch(applied, unscheduled).has_value());
}

TEST(PodMultiKueue, HandsOverTheManifestOnceThenMirrorsStatus) {
  FakeKube kube;
  FakeCache pods(kube, "/api/v1/pods");
  FakeAdmitd admitd;
  kube.Put("/api/v1/namespaces/ns/pods/a", Pod("a", "ua"));
  kube.Put("/api/v1/namespaces/ns/pods/b", Pod("b", "ub"));
  pods.Sync();
  v1::Workload wl = PodWorkload({Pod("a", "ua"), Pod("b", "ub")});
  admitd.Put(wl);
  PodMultiKueue mk(kube, admitd, pods, "m");
  ASSERT_TRUE(PodMultiKueue::Concerns(wl, "m"));
  EXPECT_FALSE(PodMultiKueue::Concerns(wl, "other"));

  ASSERT_TRUE(mk.Reconcile("ns/pod-a-1234").ok());
  EXPECT_EQ(admitd.methods(), std::vector<std::string>{"UpdateRemoteJob"});
  const nlohmann::json manifest =
      nlohmann::json::parse(admitd.Workload("ns", "pod-a-1234")->remote_job().manifest());
  EXPECT_EQ(manifest["items"].size(), 2u);
  ASSERT_TRUE(mk.Reconcile("ns/pod-a-1234").ok());
  EXPECT_EQ(admitd.methods().size(), 1u);  // handed over once
  EXPECT_TRUE(kube.writes().empty());      // no status to mirror yet

  v1::UpdateRemoteJobRequest status;
  status.set_namespace_("ns");
  status.set_name("pod-a-1234");
  status.set_status(R"({"pods":{"a":{"phase":"Succeeded"},"b":{"phase":"Running"}}})");
  ASSERT_TRUE(admitd.UpdateRemoteJob(status).ok());
  ASSERT_TRUE(mk.Reconcile("ns/pod-a-1234").ok());
  EXPECT_EQ(kube.Object("/api/v1/namespaces/ns/pods/a")->at("status").at("phase"), "Succeeded");
  EXPECT_EQ(kube.Object("/api/v1/namespaces/ns/pods/b")->at("status").at("phase"), "Running");
  EXPECT_EQ(kube.writes().size(), 2u);
  EXPECT_EQ(kube.writes()[0].path, "/api/v1/namespaces/ns/pods/a/status");
  EXPECT_EQ(mk.mirrored(), 2);
}

TEST(PodMultiKueue, WaitsForEveryPodAndIgnoresOthers) {
  FakeKube kube;
  FakeCache pods(kube, "/api/v1/pods");
  FakeAdmitd admitd;
  kube.Put("/api/v1/namespaces/ns/pods/a", Pod("a", "ua"));
  kube.Put("/api/v1/namespaces/ns/pods/b", Pod("b", "another-uid"));  // recreated since
  pods.Sync();
  admitd.Put(PodWorkload({Pod("a", "ua"), Pod("b", "ub")}));
  PodMultiKueue mk(kube, admitd, pods, "m");
  EXPECT_EQ(mk.Reconcile("ns/pod-a-1234").code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(admitd.calls().empty());

  // Not dispatched, another cluster's, or a worker's copy: nothing to do.
  v1::Workload local = PodWorkload({Pod("a", "ua")});
  local.mutable_status()->clear_nominated_cluster_names();
  EXPECT_FALSE(PodMultiKueue::Concerns(local, "m"));
  v1::Workload copy = PodWorkload({Pod("a", "ua")});
  (*copy.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "manager";
  EXPECT_FALSE(PodMultiKueue::Concerns(copy, "m"));
}

}  // namespace
}  // namespace pod_multikueue_test
}  // namespace admitd::shim
