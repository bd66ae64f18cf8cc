#include "clients/shim/podset_info.h"

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

nlohmann::json Job() {
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
  absl::StatusOr<nlohmann::json> patch = StartPatch(Job(), *infos, /*elastic=*/false);
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
  nlohmann::json job = Job();
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1";
  job["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] = "true";
  absl::StatusOr<nlohmann::json> patch =
      StartPatch(job, *PodSetInfos(Admitted(2), Flavors()), false);
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ((*patch)["spec"]["parallelism"], 2);
  EXPECT_EQ((*patch)["spec"]["completions"], 2);
}

TEST(PodSetInfoTest, ConflictsAndMismatchesAreKueuesErrors) {
  nlohmann::json job = Job();
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
  job = Job();
  job["spec"]["template"]["metadata"]["annotations"] = {{"kueue.x-k8s.io/workload", "old"}};
  EXPECT_FALSE(StartPatch(job, *PodSetInfos(Admitted(3), Flavors()), false).ok());
  patch = StartPatch(job, *PodSetInfos(Admitted(3), Flavors()), true);
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ((*patch)["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/workload"],
            "job-sample-job-9b1de");
}

}  // namespace
}  // namespace admitd::shim
