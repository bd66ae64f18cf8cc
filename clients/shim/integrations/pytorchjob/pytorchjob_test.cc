// A PyTorchJob as the job framework reads it and its webhook (kueue-jobframework.md §9), on
// PyTorchJobs as users write them.
#include <gtest/gtest.h>

#include "clients/shim/framework/workload_builder.h"
#include "clients/shim/integrations/pytorchjob/pytorchjob_integration.h"
#include "clients/shim/integrations/pytorchjob/pytorchjob_workload.h"
#include "clients/shim/webhook/webhook_testing.h"

namespace admitd::shim {
namespace pytorchjob_test {

using webhook_testing::FakeContext;
using webhook_testing::Texts;

nlohmann::json Replica(int replicas) {
  return {{"replicas", replicas},
          {"template",
           {{"spec",
             {{"containers",
               {{{"name", "pytorch"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}}}};
}

nlohmann::json PyTorchJob(bool master = true) {
  nlohmann::json specs = {{"Worker", Replica(3)}};
  if (master) specs["Master"] = Replica(1);
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata",
           {{"name", "pytorch-a"},
            {"namespace", "ns"},
            {"uid", "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b"},
            {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
          {"spec", {{"runPolicy", {{"suspend", true}}}, {"pytorchReplicaSpecs", specs}}}};
}

TEST(PyTorchJobTest, MasterThenWorkerWithKueuesName) {
  absl::StatusOr<nlohmann::json> pod_sets = PyTorchJobPodSets(PyTorchJob());
  ASSERT_TRUE(pod_sets.ok()) << pod_sets.status();
  absl::StatusOr<v1::Workload> wl =
      BuildWorkload(PyTorchJob(), kPyTorchJobApiVersion, kPyTorchJobKind, *pod_sets, {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "pytorchjob-pytorch-a-ef739");
  ASSERT_EQ(wl->spec().pod_sets_size(), 2);
  EXPECT_EQ(wl->spec().pod_sets(0).name(), "master");  // NewPodSetReference: lower case
  EXPECT_EQ(wl->spec().pod_sets(0).count(), 1);
  EXPECT_EQ(wl->spec().pod_sets(1).name(), "worker");
  EXPECT_EQ(wl->spec().pod_sets(1).count(), 3);
  // Worker only: one pod set.
  EXPECT_EQ(PyTorchJobPodSets(PyTorchJob(/*master=*/false))->size(), 1u);
  nlohmann::json none = PyTorchJob();
  none["spec"]["pytorchReplicaSpecs"] = nlohmann::json::object();
  EXPECT_EQ(PyTorchJobPodSets(none).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PyTorchJobTest, StateFromRunPolicyAndStatus) {
  nlohmann::json job = PyTorchJob();
  EXPECT_TRUE(PyTorchJobSuspended(job));
  EXPECT_FALSE(PyTorchJobActive(job));
  job["status"] = {{"replicaStatuses", {{"Worker", {{"active", 2}}}}},
                   {"conditions", {{{"type", "Running"}, {"status", "True"}}}}};
  EXPECT_TRUE(PyTorchJobActive(job));
  EXPECT_TRUE(PyTorchJobPodsReady(job));
  EXPECT_FALSE(PyTorchJobFinished(job));
  job["status"]["conditions"].push_back(
      {{"type", "Failed"}, {"status", "True"}, {"message", "worker 1 exited 2"}});
  ASSERT_TRUE(PyTorchJobFinished(job));
  EXPECT_FALSE(PyTorchJobFinished(job)->succeeded);
  EXPECT_EQ(PyTorchJobFinished(job)->message, "worker 1 exited 2");
}

TEST(PyTorchJobTest, StartAndStopGoThroughRunPolicy) {
  const nlohmann::json job = PyTorchJob();
  std::vector<PodSetInfo> infos(2);
  infos[1].node_selector = {{"pool", "a"}};
  absl::StatusOr<nlohmann::json> start = StartPatchFor(job, PyTorchJobLayout(job), infos, false);
  ASSERT_TRUE(start.ok()) << start.status();
  nlohmann::json started = job;
  started.merge_patch(*start);
  EXPECT_EQ(started["spec"]["runPolicy"]["suspend"], false);
  EXPECT_EQ(started["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"]
                   ["pool"],
            "a");
  nlohmann::json stopped = started;
  stopped.merge_patch(StopPatchFor(started, PyTorchJobLayout(started), nullptr));
  EXPECT_EQ(stopped["spec"]["runPolicy"]["suspend"], true);
}

TEST(PyTorchJobTest, TheWebhookSuspendsThroughRunPolicyAndGatesAnElasticOne) {
  FakeContext context;
  nlohmann::json job = PyTorchJob();
  job["spec"]["runPolicy"].erase("suspend");
  context.multikueue.insert("ns/lq");
  const BaseWebhookSpec spec = PyTorchJobWebhookSpec();
  nlohmann::json defaulted = job.patch(nlohmann::json(BaseDefault(spec, job, context, {})));
  EXPECT_EQ(defaulted["spec"]["runPolicy"]["suspend"], true);
  EXPECT_EQ(defaulted["spec"]["runPolicy"]["managedBy"], "kueue.x-k8s.io/multikueue");
  EXPECT_FALSE(defaulted["spec"].contains("suspend"));

  // Elastic beyond Kueue: accepted, its replicas' pods gated at creation.
  job["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  EXPECT_TRUE(BaseValidateCreate(spec, job, {}).empty());
  nlohmann::json gated = job.patch(nlohmann::json(BaseDefault(spec, job, context, {})));
  for (const char* type : {"Master", "Worker"}) {
    EXPECT_EQ(gated["spec"]["pytorchReplicaSpecs"][type]["template"]["spec"]["schedulingGates"],
              nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/elastic-job"}])"));
  }
  // Its Workload is a slice named by its generation.
  job["metadata"]["generation"] = 1;
  FrameworkOptions options;
  absl::StatusOr<v1::Workload> wl = NewPyTorchJobIntegration()->Wrap(job, {}, options)->NewWorkload();
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().annotations().at("kueue.x-k8s.io/workload-slice-name"),
            wl->metadata().name());
  // A running job keeps its queue.
  nlohmann::json running = PyTorchJob();
  running["spec"]["runPolicy"]["suspend"] = false;
  nlohmann::json moved = running;
  moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other";
  EXPECT_EQ(Texts(BaseValidateUpdate(spec, running, moved, context, {})),
            std::vector<std::string>({"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid "
                                      "value: \"other\": field is immutable"}));
}

TEST(PyTorchJobTest, AMultiKueueWorkersCopyTakesItsResizedCounts) {
  EXPECT_EQ(PyTorchJobScalePatch(PyTorchJob(), {{"master", 1}, {"worker", 5}}),
            nlohmann::json::parse(
                R"({"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 5}}}})"));
  EXPECT_FALSE(PyTorchJobScalePatch(PyTorchJob(), {{"master", 1}, {"worker", 3}}));
}

}  // namespace pytorchjob_test
}  // namespace admitd::shim
