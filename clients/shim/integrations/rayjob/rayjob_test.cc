// A RayJob as the job framework reads it and its webhook (kueue-jobframework.md §7), on RayJobs
// as users write them.
#include <gtest/gtest.h>

#include "clients/shim/framework/workload_builder.h"
#include "clients/shim/integrations/rayjob/rayjob_integration.h"
#include "clients/shim/integrations/rayjob/rayjob_webhook.h"
#include "clients/shim/integrations/rayjob/rayjob_workload.h"
#include "clients/shim/webhook/webhook_testing.h"

namespace admitd::shim {
namespace rayjob_test {

using webhook_testing::FakeContext;
using webhook_testing::Texts;

nlohmann::json Group(const std::string& image, const std::string& cpu) {
  return {{"spec",
           {{"containers",
             {{{"name", "ray"},
               {"image", image},
               {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
}

nlohmann::json RayJob() {
  return {{"apiVersion", "ray.io/v1"},
          {"kind", "RayJob"},
          {"metadata",
           {{"name", "rayjob-a"},
            {"namespace", "ns"},
            {"uid", "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b"},
            {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
          {"spec",
           {{"suspend", true},
            {"shutdownAfterJobFinishes", true},
            {"entrypoint", "python job.py"},
            {"rayClusterSpec",
             {{"headGroupSpec", {{"template", Group("rayproject/ray:2.9", "1")}}},
              {"workerGroupSpecs",
               {{{"groupName", "Small"},
                 {"replicas", 2},
                 {"template", Group("rayproject/ray:2.9", "2")}}}}}}}}};
}

TEST(RayJobTest, HeadWorkersThenTheDefaultSubmitterWithKueuesName) {
  const nlohmann::json job = RayJob();
  absl::StatusOr<nlohmann::json> pod_sets = RayJobPodSets(job);
  ASSERT_TRUE(pod_sets.ok()) << pod_sets.status();
  absl::StatusOr<v1::Workload> wl =
      BuildWorkload(job, kRayJobApiVersion, kRayJobKind, *pod_sets, {});
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "rayjob-rayjob-a-b5361");  // the spec's example
  ASSERT_EQ(wl->spec().pod_sets_size(), 3);
  EXPECT_EQ(wl->spec().pod_sets(0).name(), "head");
  EXPECT_EQ(wl->spec().pod_sets(1).name(), "small");
  EXPECT_EQ(wl->spec().pod_sets(1).count(), 2);
  EXPECT_EQ(wl->spec().pod_sets(2).name(), "submitter");
  EXPECT_EQ(wl->spec().pod_sets(2).count(), 1);
  // KubeRay's default submitter, with the head's first image.
  const nlohmann::json& submitter = (*pod_sets)[2]["template"]["spec"];
  EXPECT_EQ(submitter["restartPolicy"], "Never");
  EXPECT_EQ(submitter["containers"][0]["name"], "ray-job-submitter");
  EXPECT_EQ(submitter["containers"][0]["image"], "rayproject/ray:2.9");
  EXPECT_EQ(submitter["containers"][0]["resources"]["requests"],
            nlohmann::json({{"cpu", "500m"}, {"memory", "200Mi"}}));
  EXPECT_EQ(submitter["containers"][0]["resources"]["limits"],
            nlohmann::json({{"cpu", "1"}, {"memory", "1Gi"}}));

  // The user's submitter template is taken as it is.
  nlohmann::json own = job;
  own["spec"]["submitterPodTemplate"] = Group("me/submit", "100m");
  EXPECT_EQ((*RayJobPodSets(own))[2]["template"], Group("me/submit", "100m"));
  // SidecarMode: the submitter runs in the head pod; HTTPMode: no submitter at all.
  nlohmann::json sidecar = job;
  sidecar["spec"]["submissionMode"] = "SidecarMode";
  absl::StatusOr<nlohmann::json> side = RayJobPodSets(sidecar);
  ASSERT_EQ(side->size(), 2u);
  EXPECT_EQ((*side)[0]["template"]["spec"]["containers"][1]["name"], "ray-job-submitter");
  EXPECT_FALSE((*side)[0]["template"]["spec"]["containers"][1].contains("image"));
  nlohmann::json http = job;
  http["spec"]["submissionMode"] = "HTTPMode";
  EXPECT_EQ(RayJobPodSets(http)->size(), 2u);
  EXPECT_EQ(RayJobLayout(http).templates.size(), 2u);
  // No cluster spec: nothing to build.
  nlohmann::json none = job;
  none["spec"].erase("rayClusterSpec");
  EXPECT_EQ(RayJobPodSets(none).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RayJobTest, StartStoresTheSubmitterTemplateAndStopRestores) {
  std::unique_ptr<Integration> integration = NewRayJobIntegration();
  const nlohmann::json job = RayJob();
  FrameworkOptions options;
  std::unique_ptr<GenericJob> generic = integration->Wrap(job, {}, options);
  std::vector<PodSetInfo> infos(3);
  infos[1].node_selector = {{"pool", "a"}};
  infos[2].node_selector = {{"pool", "b"}};
  absl::StatusOr<nlohmann::json> start = generic->StartPatch(infos, false);
  ASSERT_TRUE(start.ok()) << start.status();
  nlohmann::json started = job;
  started.merge_patch(*start);
  EXPECT_EQ(started["spec"]["suspend"], false);
  EXPECT_EQ(started["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
                   ["nodeSelector"]["pool"],
            "a");
  // Kueue's RunWithPodSetsInfo: the default submitter is written out, with its info.
  const nlohmann::json& submitter = started["spec"]["submitterPodTemplate"];
  EXPECT_EQ(submitter["spec"]["nodeSelector"]["pool"], "b");
  EXPECT_EQ(submitter["spec"]["containers"][0]["name"], "ray-job-submitter");
  EXPECT_EQ(integration->Wrap(job, {}, options)->StartPatch(std::vector<PodSetInfo>(2), false)
                .status()
                .message(),
            "invalid podset infos: expecting 3 podset, got 2");

  // Stopped with the Workload's templates: the node selectors go, in the write that suspends.
  absl::StatusOr<v1::Workload> wl = generic->NewWorkload();
  ASSERT_TRUE(wl.ok()) << wl.status();
  StopPlan plan = integration->Wrap(started, {}, options)->PlanStop(&*wl);
  nlohmann::json stopped = started;
  stopped.merge_patch(plan.suspend);
  EXPECT_EQ(stopped["spec"]["suspend"], true);
  EXPECT_FALSE(stopped["spec"]["submitterPodTemplate"]["spec"].contains("nodeSelector"));
  EXPECT_FALSE(stopped["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
                   .contains("nodeSelector"));
  // A RayJob never started keeps no submitter template when stopped.
  nlohmann::json running = job;
  running["spec"]["suspend"] = false;
  nlohmann::json never = running;
  never.merge_patch(integration->Wrap(running, {}, options)->PlanStop(&*wl).suspend);
  EXPECT_FALSE(never["spec"].contains("submitterPodTemplate"));
  EXPECT_EQ(never["spec"]["suspend"], true);
}

TEST(RayJobTest, StateFromTheDeploymentStatus) {
  nlohmann::json job = RayJob();
  EXPECT_TRUE(RayJobSuspended(job));
  EXPECT_FALSE(RayJobActive(job));
  job["status"] = {{"jobDeploymentStatus", "Running"},
                   {"rayClusterStatus", {{"state", "ready"}}}};
  EXPECT_TRUE(RayJobActive(job));
  EXPECT_TRUE(RayJobPodsReady(job));
  EXPECT_FALSE(RayJobFinished(job));
  job["status"]["jobDeploymentStatus"] = "Suspended";
  EXPECT_FALSE(RayJobActive(job));
  // Complete with a job that failed finishes the Workload as failed.
  job["status"] = {{"jobDeploymentStatus", "Complete"},
                   {"jobStatus", "FAILED"},
                   {"message", "Job entrypoint command failed with exit code 1"}};
  ASSERT_TRUE(RayJobFinished(job));
  EXPECT_FALSE(RayJobFinished(job)->succeeded);
  EXPECT_EQ(RayJobFinished(job)->message, "Job entrypoint command failed with exit code 1");
  job["status"]["jobStatus"] = "SUCCEEDED";
  EXPECT_TRUE(RayJobFinished(job)->succeeded);

  // On an existing cluster: skipped by the framework.
  std::unique_ptr<Integration> integration = NewRayJobIntegration();
  FrameworkOptions options;
  EXPECT_FALSE(integration->Wrap(job, {}, options)->Skip());
  job["spec"]["clusterSelector"] = {{"ray.io/cluster", "shared"}};
  EXPECT_TRUE(integration->Wrap(job, {}, options)->Skip());
}

TEST(RayJobTest, TheWebhookAppliesKueuesRayJobRules) {
  JobWebhookOptions options;
  std::string denial;
  EXPECT_TRUE(ValidateRayJobCreate(RayJob(), options, &denial).empty());

  nlohmann::json both = RayJob();
  both["spec"]["clusterSelector"] = {{"ray.io/cluster", "shared"}};
  both["spec"]["shutdownAfterJobFinishes"] = false;  // not reported: the first error is alone
  EXPECT_EQ(Texts(ValidateRayJobCreate(both, options, &denial)),
            std::vector<std::string>({"spec.clusterSelector: Invalid value: "
                                      "{\"ray.io/cluster\":\"shared\"}: a kueue managed job should "
                                      "not use an existing cluster"}));
  nlohmann::json existing = both;
  existing["spec"].erase("rayClusterSpec");
  EXPECT_TRUE(ValidateRayJobCreate(existing, options, &denial).empty());
  nlohmann::json neither = existing;
  neither["spec"].erase("clusterSelector");
  EXPECT_EQ(Texts(ValidateRayJobCreate(neither, options, &denial)),
            std::vector<std::string>({"spec.rayClusterSpec: Required value: rayClusterSpec is "
                                      "required for Kueue-managed jobs that don't use "
                                      "clusterSelector"}));

  nlohmann::json bad = RayJob();
  bad["spec"]["shutdownAfterJobFinishes"] = false;
  bad["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = true;
  bad["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] = "head";
  EXPECT_EQ(
      Texts(ValidateRayJobCreate(bad, options, &denial)),
      std::vector<std::string>(
          {"spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should "
           "delete the cluster after finishing",
           "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed "
           "job should only use autoscaling when workload slicing is enabled",
           "spec.rayClusterSpec.workerGroupSpecs[0].groupName: Forbidden: \"head\" is reserved "
           "for the head group"}));
  // Without a queue name (and manageJobsWithoutQueueName off) none of it applies.
  bad["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  EXPECT_TRUE(ValidateRayJobCreate(bad, options, &denial).empty());
  FakeContext context;
  EXPECT_TRUE(ValidateRayJobUpdate(bad, bad, context, options, &denial).empty());

  // Elastic (accepted, as Kueue does), with autoscaling; beyond Kueue its templates are gated.
  nlohmann::json elastic = RayJob();
  elastic["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  elastic["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = true;
  EXPECT_TRUE(ValidateRayJobCreate(elastic, options, &denial).empty());
  const nlohmann::json gated = elastic.patch(nlohmann::json(DefaultRayJob(elastic, context, options)));
  const nlohmann::json gate = nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/elastic-job"}])");
  EXPECT_EQ(gated["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["schedulingGates"],
            gate);
  EXPECT_EQ(gated["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
                 ["schedulingGates"],
            gate);

  // Defaulting: suspended, and managed by MultiKueue on a MultiKueue queue.
  nlohmann::json fresh = RayJob();
  fresh["spec"].erase("suspend");
  context.multikueue.insert("ns/lq");
  nlohmann::json defaulted =
      fresh.patch(nlohmann::json(DefaultRayJob(fresh, context, options)));
  EXPECT_EQ(defaulted["spec"]["suspend"], true);
  EXPECT_EQ(defaulted["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
}

TEST(RayJobTest, AnElasticRayJobFollowsItsLiveClustersCounts) {
  nlohmann::json job = RayJob();
  job["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  job["metadata"]["generation"] = 1;
  job["status"]["rayClusterName"] = "rayjob-a-raycluster-x";
  nlohmann::json cluster = {{"apiVersion", "ray.io/v1"},
                            {"kind", "RayCluster"},
                            {"metadata", {{"name", "rayjob-a-raycluster-x"}, {"generation", 2}}},
                            {"spec", job["spec"]["rayClusterSpec"]}};
  cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 5;  // the autoscaler's
  std::unique_ptr<Integration> integration = NewRayJobIntegration();
  FrameworkOptions options;
  Related related;
  related.children = {cluster};
  // First the RayJob records its cluster's generation (Kueue's annotation), ...
  std::optional<nlohmann::json> prepare = integration->Wrap(job, related, options)->PreparePatch();
  ASSERT_TRUE(prepare);
  EXPECT_EQ((*prepare)["metadata"]["annotations"]["kueue.x-k8s.io/raycluster-generation"], "2");
  job.merge_patch(*prepare);
  EXPECT_FALSE(integration->Wrap(job, related, options)->PreparePatch());
  // ... which names its slice (the spec's example), counted as the cluster has them.
  absl::StatusOr<v1::Workload> wl = integration->Wrap(job, related, options)->NewWorkload();
  ASSERT_TRUE(wl.ok()) << wl.status();
  EXPECT_EQ(wl->metadata().name(), "rayjob-rayjob-a-a6658");
  EXPECT_EQ(wl->spec().pod_sets(1).count(), 5);
  // A worker group the RayJob does not have.
  cluster["spec"]["workerGroupSpecs"][0]["groupName"] = "other";
  related.children = {cluster};
  EXPECT_EQ(integration->Wrap(job, related, options)->NewWorkload().status().message(),
            "PodSet name mismatch: RayCluster rayjob-a-raycluster-x has worker group other which "
            "is not found in Ray object rayjob-a spec");
  // Not elastic: the RayJob's own spec, and nothing to prepare.
  job["metadata"]["annotations"].erase("kueue.x-k8s.io/elastic-job");
  EXPECT_FALSE(integration->Wrap(job, related, options)->PreparePatch());
  EXPECT_EQ(integration->Wrap(job, related, options)->NewWorkload()->spec().pod_sets(1).count(), 2);
}

}  // namespace rayjob_test
}  // namespace admitd::shim
