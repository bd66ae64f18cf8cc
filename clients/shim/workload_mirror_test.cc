#include "clients/shim/workload_mirror.h"

#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

TEST(KueueWorkloadJson, KueuesShapeWithNumbersAndTheMirrorLabel) {
  v1::Workload wl;
  wl.mutable_metadata()->set_name("job-a-1");
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_resource_version(42);
  (*wl.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = "u";
  v1::OwnerReference* o = wl.mutable_metadata()->add_owner_references();
  o->set_api_version("batch/v1");
  o->set_kind("Job");
  o->set_name("a");
  o->set_uid("u");
  o->set_controller(true);
  wl.mutable_spec()->set_queue_name("lq");
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(3);
  v1::Condition* c = wl.mutable_status()->add_conditions();
  c->set_type("Admitted");
  c->set_status("True");
  c->set_observed_generation(1);
  wl.mutable_status()->mutable_admission()->set_cluster_queue("cq");
  wl.mutable_status()->mutable_pending_position()->set_position_in_cluster_queue(3);

  const nlohmann::json j = KueueWorkloadJson(wl);
  EXPECT_EQ(j["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(j["kind"], "Workload");
  EXPECT_EQ(j["metadata"]["name"], "job-a-1");
  EXPECT_EQ(j["metadata"]["labels"]["admitd.io/mirror"], "true");
  EXPECT_FALSE(j["metadata"].contains("resourceVersion"));  // the cluster's, not admitd's
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["kind"], "Job");
  EXPECT_EQ(j["spec"]["queueName"], "lq");
  EXPECT_EQ(j["spec"]["podSets"][0]["count"], 3);
  EXPECT_EQ(j["status"]["conditions"][0]["observedGeneration"], 1);
  EXPECT_EQ(j["status"]["admission"]["clusterQueue"], "cq");
  EXPECT_FALSE(j["status"].contains("pendingPosition"));
}

}  // namespace
}  // namespace admitd::shim
