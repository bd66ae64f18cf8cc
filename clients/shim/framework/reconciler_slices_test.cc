// The generic reconcile's elastic and MultiKueue paths on the made-up kind
// (testing/fake_job.h): resizing through admitd and ungating the admitted slice's pods; a
// prebuilt Workload adopted, reported to, finished OutOfSync or withdrawn; a manager's job
// mirroring its worker.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "clients/shim/framework/elastic_pods.h"
#include "clients/shim/framework/reconciler.h"
#include "clients/shim/framework/testing/fake_job.h"
#include "clients/shim/framework/testing/fakes.h"
#include "clients/shim/framework/testing/reconciler_fixture.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace reconciler_slices_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::FakeJobObject;

constexpr const char* kJobs = testing::kFakeJobs;
constexpr char kPods[] = "/api/v1/namespaces/ns/pods/";

class SlicesTest : public testing::ReconcilerFixture {
 protected:
  SlicesTest() { options_.cluster = "w1"; }

  // A gated pod of the job's pod set "main", of the slice chain `chain`.
  void PutPod(const std::string& name, const std::string& chain) {
    nlohmann::json owner = {{"apiVersion", "example.com/v1"},
                            {"kind", "FakeJob"},
                            {"name", "a"},
                            {"uid", Str(Job()["metadata"], "uid")},
                            {"controller", true}};
    nlohmann::json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
    pod["metadata"] = {{"namespace", "ns"}, {"name", name}};
    pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "main";
    pod["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"] = chain;
    pod["metadata"]["ownerReferences"] = nlohmann::json::array({owner});
    pod["spec"]["schedulingGates"] = nlohmann::json::array({{{"name", kElasticJobGate}}});
    kube_.Put(kPods + name, std::move(pod));
    pods_.Sync();
  }
  bool Gated(const std::string& name) { return HasElasticGate(*kube_.Object(kPods + name)); }
};

nlohmann::json ElasticJob(int count) {
  nlohmann::json job = FakeJobObject("ns", "a", count);
  job["metadata"]["annotations"] = {{kElasticJobAnnotation, "true"}};
  return job;
}

TEST_F(SlicesTest, ACountChangeResizesAndOnlyTheAdmittedSlicesPodsAreUngated) {
  PutJob(ElasticJob(2));
  ASSERT_TRUE(Reconcile().ok());
  admitd_.Admit("ns", "fakejob-a", "cq", {{"cpu", "default"}});
  ASSERT_TRUE(Reconcile().ok());
  ASSERT_EQ(Job()["spec"]["suspend"], false);
  PutPod("p0", "fakejob-a");
  PutPod("p1", "fakejob-a");
  PutPod("p2", "fakejob-a");  // one more than admitted
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_FALSE(Gated("p0"));
  EXPECT_FALSE(Gated("p1"));
  EXPECT_TRUE(Gated("p2"));
  EXPECT_EQ(reconciler().counters().ungated.load(), 2);

  // Scale to 3: one Resize with the new counts, nothing else.
  admitd_.ClearCalls();
  Change({{"spec", {{"count", 3}}}, {"metadata", {{"generation", 2}}}});
  ASSERT_TRUE(Reconcile().ok());
  ASSERT_THAT(admitd_.methods(), ElementsAre("Resize"));
  EXPECT_THAT(admitd_.calls()[0].request, HasSubstr("count: 3"));
  EXPECT_THAT(admitd_.calls()[0].request, HasSubstr("generation: 2"));
  EXPECT_THAT(admitd_.calls()[0].request, HasSubstr("kind: \"FakeJob\""));
  // The admitted count now covers the third pod.
  admitd_.Admit("ns", "fakejob-a", "cq", {{"cpu", "default"}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_FALSE(Gated("p2"));
  EXPECT_EQ(Job()["spec"]["suspend"], false);  // never restarted
}

TEST_F(SlicesTest, AnElasticJobWaitsForItsSliceWithoutBeingStopped) {
  PutJob(ElasticJob(1));
  ASSERT_TRUE(Reconcile().ok());
  admitd_.Admit("ns", "fakejob-a", "cq", {{"cpu", "default"}});
  ASSERT_TRUE(Reconcile().ok());
  admitd_.SetCondition("ns", "fakejob-a", "Admitted", "False", "Pending");
  kube_.ClearWrites();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(kube_.writes(), IsEmpty());
}

// A worker's job made for a MultiKueue copy: the copy is adopted and told the job's status.
v1::Workload Copy() {
  v1::Workload copy;
  copy.mutable_metadata()->set_namespace_("ns");
  copy.mutable_metadata()->set_name("copy-a");
  (*copy.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "manager";
  v1::PodSet* ps = copy.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(1);
  ps->mutable_template_()->mutable_spec()->add_containers()->set_name("c");
  return copy;
}

nlohmann::json WorkerJob() {
  nlohmann::json job = FakeJobObject("ns", "a");
  job["metadata"]["labels"][kPrebuiltWorkloadKey] = "copy-a";
  job["metadata"]["labels"][kMultiKueueOriginLabel] = "manager";
  return job;
}

TEST_F(SlicesTest, APrebuiltCopyIsAdoptedToldTheStatusAndStartsTheJob) {
  admitd_.Put(Copy());
  PutJob(WorkerJob());
  ASSERT_TRUE(Reconcile().ok());
  ASSERT_THAT(admitd_.methods(), ElementsAre("UpdateRemoteJob"));
  const v1::Workload copy = *admitd_.Workload("ns", "copy-a");
  ASSERT_NE(ControllerOwner(copy), nullptr);
  EXPECT_EQ(ControllerOwner(copy)->kind(), "FakeJob");
  EXPECT_EQ(ControllerOwner(copy)->uid(), Str(Job()["metadata"], "uid"));
  EXPECT_EQ(copy.remote_job().status(), "{}");
  EXPECT_FALSE(admitd_.Workload("ns", "fakejob-a").has_value());  // never one of its own

  admitd_.Admit("ns", "copy-a", "cq", {{"cpu", "default"}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["spec"]["suspend"], false);
  // Its status goes to the copy as it changes.
  admitd_.ClearCalls();
  Change({{"status", {{"active", 1}}}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("UpdateRemoteJob"));
  EXPECT_EQ(admitd_.Workload("ns", "copy-a")->remote_job().status(), R"({"active":1})");
  EXPECT_EQ(reconciler().counters().reported.load(), 2);
}

TEST_F(SlicesTest, APrebuiltWorkloadOfAnotherShapeIsFinishedOutOfSync) {
  v1::Workload copy = Copy();
  copy.mutable_spec()->mutable_pod_sets(0)->set_count(5);
  admitd_.Put(copy);
  PutJob(WorkerJob());
  ASSERT_TRUE(Reconcile().ok());
  const v1::Workload wl = *admitd_.Workload("ns", "copy-a");
  const v1::Condition* finished = FindCondition(wl, "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->reason(), "OutOfSync");
  EXPECT_EQ(finished->message(), "The prebuilt workload is out of sync with its user job");
}

TEST_F(SlicesTest, AWorkerJobWhoseCopyWasWithdrawnGoesWithIt) {
  PutJob(WorkerJob());
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_FALSE(kube_.Object(std::string(kJobs) + "a").has_value());
  ASSERT_EQ(kube_.writes().size(), 1u);
  EXPECT_EQ(kube_.writes()[0].verb, "DELETE");
  EXPECT_EQ(reconciler().counters().withdrawn.load(), 1);
  // A job that is not a worker's waits for its prebuilt Workload instead.
  nlohmann::json waiting = FakeJobObject("ns", "a");
  waiting["metadata"]["labels"][kPrebuiltWorkloadKey] = "later";
  PutJob(waiting);
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_TRUE(kube_.Object(std::string(kJobs) + "a").has_value());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(SlicesTest, AStaleCacheNeverAdoptsTheCopy) {
  admitd_.Put(Copy());
  PutJob(WorkerJob());
  // The API server now holds another object of the name (deleted and made again).
  nlohmann::json other = WorkerJob();
  other["metadata"]["uid"] = "newer";
  kube_.Put(std::string(kJobs) + "a", other);
  ASSERT_TRUE(reconciler().Reconcile("ns/a").ok());
  EXPECT_EQ(ControllerOwner(*admitd_.Workload("ns", "copy-a")), nullptr);
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(SlicesTest, AManagersJobMirrorsItsWorkersStatus) {
  nlohmann::json job = FakeJobObject("ns", "a");
  job["spec"]["managedBy"] = kMultiKueueControllerName;
  PutJob(job);
  ASSERT_TRUE(Reconcile().ok());
  v1::Workload wl = *admitd_.Workload("ns", "fakejob-a");
  wl.mutable_remote_job()->set_status(R"({"active":1})");
  admitd_.Put(wl);
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["status"]["active"], 1);
  EXPECT_EQ(kube_.writes().back().path, std::string(kJobs) + "a/status");
  EXPECT_EQ(reconciler().counters().mirrored.load(), 1);
}

}  // namespace reconciler_slices_test
}  // namespace admitd::shim
