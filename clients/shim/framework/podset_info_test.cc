#include "clients/shim/framework/podset_info.h"
#include "clients/shim/integrations/job/job_run.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

// An admitted Workload of one pod set "main": cpu in flavor "spot", memory in "spot" too.
v1::Workload Admitted(int count) {
  v1::Workload wl;
  wl.mutable_metadata()->set_name("job-sample-job-9b1de");
  wl.mutable_spec()->set_queue_name("user-queue");
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(3);
  v1::Admission* a = wl.mutable_status()->mutable_admission();
  a->set_cluster_queue("cluster-queue");
  v1::PodSetAssignment* psa = a->add_pod_set_assignments();
  psa->set_name("main");
  psa->set_count(count);
  (*psa->mutable_flavors())["cpu"] = "spot";
  (*psa->mutable_flavors())["memory"] = "spot";
  return wl;
}

std::map<std::string, v1::ResourceFlavor> Flavors() {
  v1::ResourceFlavor spot;
  (*spot.mutable_spec()->mutable_node_labels())["instance"] = "spot";
  v1::Toleration* t = spot.mutable_spec()->add_tolerations();
  t->set_key("spot");
  t->set_operator_("Exists");
  t->set_effect("NoSchedule");
  return {{"spot", spot}};
}

nlohmann::json SpotJob() {
  return nlohmann::json::parse(R"({
    "metadata": {"name": "sample-job", "annotations": {}},
    "spec": {"suspend": true, "parallelism": 3,
             "template": {"metadata": {"labels": {"app": "x"}},
                          "spec": {"tolerations": [{"key": "spot", "operator": "Exists",
                                                     "effect": "NoSchedule"}],
                                   "containers": [{"name": "c"}]}}}})");
}

TEST(PodSetInfoTest, FlavorsAndQueuesGoIntoTheTemplateAndTheJobStarts) {
  absl::StatusOr<std::vector<PodSetInfo>> infos = PodSetInfos(Admitted(3), Flavors());
  ASSERT_TRUE(infos.ok()) << infos.status();
  ASSERT_EQ(infos->size(), 1u);
  EXPECT_EQ((*infos)[0].count, 3);
  EXPECT_EQ((*infos)[0].tolerations.size(), 1u);  // one distinct flavor for two resources
  absl::StatusOr<nlohmann::json> patch = StartPatch(SpotJob(), *infos, /*elastic=*/false);
  ASSERT_TRUE(patch.ok()) << patch.status();
  const nlohmann::json& spec = (*patch)["spec"];
  EXPECT_EQ(spec["suspend"], false);
  EXPECT_FALSE(spec.contains("parallelism"));
  const nlohmann::json& t = spec["template"];
  EXPECT_EQ(t["spec"]["nodeSelector"]["instance"], "spot");
  EXPECT_EQ(t["spec"]["tolerations"].size(), 1u);  // already there: not added twice
  EXPECT_EQ(t["metadata"]["labels"]["app"], "x");
  EXPECT_EQ(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
  EXPECT_EQ(t["metadata"]["labels"]["kueue.x-k8s.io/local-queue-name"], "user-queue");
  EXPECT_EQ(t["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"], "cluster-queue");
  EXPECT_EQ(t["metadata"]["annotations"]["kueue.x-k8s.io/workload"], "job-sample-job-9b1de");
}

TEST(PodSetInfoTest, APartiallyAdmittedJobRunsTheAdmittedCount) {
  nlohmann::json job = SpotJob();
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1";
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] = "true";
  absl::StatusOr<nlohmann::json> patch =
      StartPatch(job, *PodSetInfos(Admitted(2), Flavors()), false);
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ((*patch)["spec"]["parallelism"], 2);
  EXPECT_EQ((*patch)["spec"]["completions"], 2);
}

TEST(PodSetInfoTest, ConflictsAndMismatchesAreKueuesErrors) {
  nlohmann::json job = SpotJob();
  job["spec"]["template"]["spec"]["nodeSelector"] = {{"instance", "on-demand"}};
  absl::StatusOr<nlohmann::json> patch = StartPatch(job, *PodSetInfos(Admitted(3), Flavors()), false);
  EXPECT_EQ(patch.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(patch.status().message(),
            "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for "
            "key=instance, value1=on-demand, value2=spot");
  v1::Workload two = Admitted(3);
  *two.mutable_status()->mutable_admission()->add_pod_set_assignments() =
      two.status().admission().pod_set_assignments(0);
  EXPECT_EQ(PodSetInfos(two, Flavors()).status().message(),
            "invalid podset infos: expecting 1 podset, got 2");
  // An elastic slice replaces the workload annotation an earlier slice left.
  job = SpotJob();
  job["spec"]["template"]["metadata"]["annotations"] = {{"kueue.x-k8s.io/workload", "old"}};
  EXPECT_FALSE(StartPatch(job, *PodSetInfos(Admitted(3), Flavors()), false).ok());
  patch = StartPatch(job, *PodSetInfos(Admitted(3), Flavors()), true);
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ((*patch)["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/workload"],
            "job-sample-job-9b1de");
}

TEST(PodSetInfoTest, StoppingSuspendsClearsTheStartTimeAndRestoresTheTemplate) {
  v1::Workload wl = Admitted(2);
  v1::PodTemplate* stored = wl.mutable_spec()->mutable_pod_sets(0)->mutable_template_();
  (*stored->mutable_labels())["app"] = "x";
  // The running Job: unsuspended with the podset info merged in, partially admitted.
  nlohmann::json job = SpotJob();
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1";
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] = "true";
  nlohmann::json started = *StartPatch(job, *PodSetInfos(wl, Flavors()), false);
  job["spec"] = started["spec"];
  job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] = "sample-job";
  job["status"]["startTime"] = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(IsSuspended(job));

  const StopPlan plan = PlanStop(job, &wl);
  EXPECT_EQ(plan.suspend["spec"]["suspend"], true);
  EXPECT_EQ(plan.suspend["metadata"]["annotations"]["kueue.x-k8s.io/stopping"], "true");
  EXPECT_EQ(plan.status, nlohmann::json({{"status", {{"startTime", nullptr}}}}));
  const nlohmann::json& t = plan.restore["spec"]["template"];
  EXPECT_EQ(t["metadata"]["labels"]["app"], "x");
  EXPECT_TRUE(t["metadata"]["labels"]["kueue.x-k8s.io/podset"].is_null());  // removed
  EXPECT_FALSE(t["metadata"]["labels"].contains("batch.kubernetes.io/job-name"));  // kept as is
  EXPECT_TRUE(t["metadata"]["annotations"]["kueue.x-k8s.io/workload"].is_null());
  EXPECT_TRUE(t["spec"]["nodeSelector"]["instance"].is_null());
  EXPECT_TRUE(t["spec"]["tolerations"].is_null());
  EXPECT_EQ(plan.restore["spec"]["parallelism"], 3);  // the original count
  EXPECT_EQ(plan.restore["spec"]["completions"], 3);
  EXPECT_TRUE(plan.restore["metadata"]["annotations"]["kueue.x-k8s.io/stopping"].is_null());

  // Half-stopped (suspended, still marked stopping): not suspended for Kueue, and no new
  // suspension (so no second Stopped event).
  job["spec"]["suspend"] = true;
  job["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] = "true";
  EXPECT_FALSE(IsSuspended(job));
  EXPECT_TRUE(PlanStop(job, &wl).suspend.is_null());
}

}  // namespace
}  // namespace admitd::shim
