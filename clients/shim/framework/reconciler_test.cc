// The generic reconcile on a made-up kind (testing/fake_job.h) against in-memory fakes of the
// API server, the informer caches, the event recorder and admitd: every step of the flow
// (kueue-jobframework.md §1.7), without a cluster or an admitd.
#include "clients/shim/framework/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "clients/shim/framework/testing/fake_job.h"
#include "clients/shim/framework/testing/fakes.h"
#include "clients/shim/framework/testing/reconciler_fixture.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace reconciler_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::FakeJobObject;

constexpr const char* kJobs = testing::kFakeJobs;
constexpr char kWorkload[] = "fakejob-a";

class GenericReconcileTest : public testing::ReconcilerFixture {
 protected:
  GenericReconcileTest() : ReconcilerFixture("spot", {{"instance", "spot"}}) {}

  // The Workload `name` in admitd (an empty one, after a test failure, when there is none).
  v1::Workload Workload(const std::string& name = kWorkload) {
    std::optional<v1::Workload> wl = admitd_.Workload("ns", name);
    EXPECT_TRUE(wl.has_value()) << name;
    return wl.value_or(v1::Workload());
  }
  // A submitted, admitted job, started; calls and events cleared.
  void Running() {
    PutJob(FakeJobObject("ns", "a", 2));
    ASSERT_TRUE(Reconcile().ok());
    admitd_.Admit("ns", kWorkload, "cq", {{"cpu", "spot"}});
    ASSERT_TRUE(Reconcile().ok());
    ASSERT_EQ(Job()["spec"]["suspend"], false);
    Change({{"status", {{"active", 2}}}});
    admitd_.ClearCalls();
    kube_.ClearWrites();
    events_.Clear();
  }
};

TEST_F(GenericReconcileTest, ANewJobGetsItsWorkloadOnceWithTheClusterLabelAndDigest) {
  PutJob(FakeJobObject("ns", "a", 3));
  ASSERT_TRUE(Reconcile().ok());
  const v1::Workload wl = Workload();
  EXPECT_EQ(wl.spec().pod_sets(0).count(), 3);
  EXPECT_EQ(wl.metadata().labels().at(kJobClusterLabel), "c1");
  EXPECT_EQ(wl.metadata().annotations().at(kContainersDigestAnnotation).size(), 32u);
  ASSERT_EQ(events_.events().size(), 1u);
  EXPECT_EQ(events_.events()[0].reason, "CreatedWorkload");
  EXPECT_EQ(events_.events()[0].message, "Created Workload: ns/fakejob-a");
  EXPECT_EQ(events_.events()[0].component, "example.com/fakejob-kueue-controller");
  // Level-triggered: the same state again changes nothing.
  admitd_.ClearCalls();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
  EXPECT_THAT(kube_.writes(), IsEmpty());
  EXPECT_EQ(reconciler().counters().submits.load(), 1);
}

TEST_F(GenericReconcileTest, JobsTheShimDoesNotManageAreLeftAlone) {
  nlohmann::json unqueued = FakeJobObject("ns", "a");
  unqueued["metadata"].erase("labels");
  PutJob(unqueued);
  nlohmann::json owned = FakeJobObject("ns", "b");
  owned["metadata"]["ownerReferences"] = {
      {{"apiVersion", "example.com/v1"}, {"kind", "FakeJob"}, {"name", "a"}, {"uid", "x"},
       {"controller", true}}};
  PutJob(owned);
  PutJob(FakeJobObject("kube-system", "c"));
  options_.excluded_namespaces = {"kube-system"};
  ASSERT_TRUE(Reconcile("ns/a").ok());
  ASSERT_TRUE(Reconcile("ns/b").ok());
  ASSERT_TRUE(Reconcile("kube-system/c").ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(GenericReconcileTest, WithoutAQueueNameWhenTold) {
  options_.manage_jobs_without_queue_name = true;
  nlohmann::json unqueued = FakeJobObject("ns", "a");
  unqueued["metadata"].erase("labels");
  PutJob(unqueued);
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("Submit"));
}

TEST_F(GenericReconcileTest, AnObjectThatCannotBeReadGetsNoWorkloadAndNoRetry) {
  nlohmann::json bad = FakeJobObject("ns", "a");
  bad["spec"]["count"] = -1;
  PutJob(bad);
  EXPECT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(GenericReconcileTest, AdmissionStartsTheJobWithItsFlavorsNodeLabels) {
  PutJob(FakeJobObject("ns", "a", 2));
  ASSERT_TRUE(Reconcile().ok());
  admitd_.Admit("ns", kWorkload, "cq", {{"cpu", "spot"}});
  ASSERT_TRUE(Reconcile().ok());
  const nlohmann::json job = Job();
  EXPECT_EQ(job["spec"]["suspend"], false);
  EXPECT_EQ(job["spec"]["template"]["spec"]["nodeSelector"]["instance"], "spot");
  EXPECT_EQ(events_.reasons().back(), "Started");
  EXPECT_EQ(events_.events().back().message, "Admitted by clusterQueue cq");
  EXPECT_EQ(reconciler().counters().starts.load(), 1);
}

TEST_F(GenericReconcileTest, AFlavorNotKnownYetIsRetriedWithoutAWrite) {
  PutJob(FakeJobObject("ns", "a"));
  ASSERT_TRUE(Reconcile().ok());
  admitd_.Admit("ns", kWorkload, "cq", {{"cpu", "reserved"}});
  kube_.ClearWrites();
  EXPECT_EQ(Reconcile().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(kube_.writes(), IsEmpty());
}

TEST_F(GenericReconcileTest, AnAdmissionTheJobCannotTakeFinishesTheWorkload) {
  nlohmann::json job = FakeJobObject("ns", "a");
  job["spec"]["template"]["spec"]["nodeSelector"] = {{"instance", "on-demand"}};
  PutJob(job);
  ASSERT_TRUE(Reconcile().ok());
  admitd_.Admit("ns", kWorkload, "cq", {{"cpu", "spot"}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["spec"]["suspend"], true);
  const v1::Workload wl = Workload();
  const v1::Condition* finished = FindCondition(wl, "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->reason(), "Failed");
  EXPECT_THAT(finished->message(), HasSubstr("instance"));
}

TEST_F(GenericReconcileTest, EvictionStopsTheJobAndReleasesOnceItsPodsAreGone) {
  Running();
  admitd_.Evict("ns", kWorkload, "Preempted to accommodate a workload");
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["spec"]["suspend"], true);
  // Restored: the flavor's node label is gone.
  EXPECT_FALSE(Job()["spec"]["template"]["spec"]["nodeSelector"].contains("instance"));
  ASSERT_EQ(events_.reasons(), std::vector<std::string>{"Stopped"});
  EXPECT_EQ(events_.events()[0].message, "Preempted to accommodate a workload");
  EXPECT_THAT(admitd_.methods(), IsEmpty());  // two pods still run
  Change({{"status", {{"active", 0}}}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("ReleaseQuota"));
  EXPECT_THAT(admitd_.calls()[0].request, HasSubstr("stopped"));
  EXPECT_FALSE(ConditionTrue(Workload(), "QuotaReserved"));
  EXPECT_EQ(reconciler().counters().stops.load(), 1);
}

TEST_F(GenericReconcileTest, ARunningJobWithoutAdmissionIsStopped) {
  Running();
  admitd_.SetCondition("ns", kWorkload, "Admitted", "False", "NoReservation");
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["spec"]["suspend"], true);
  EXPECT_EQ(events_.events().back().message, "Not admitted by cluster queue");
}

TEST_F(GenericReconcileTest, AFinishedJobFinishesItsWorkloadAndAFinishedJobGetsNone) {
  Running();
  Change({{"status", {{"active", 0}, {"finished", "Succeeded"}, {"message", "done"}}}});
  ASSERT_TRUE(Reconcile().ok());
  const v1::Workload wl = Workload();
  const v1::Condition* finished = FindCondition(wl, "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->reason(), "Succeeded");
  EXPECT_EQ(finished->message(), "done");
  EXPECT_EQ(events_.events().back().reason, "FinishedWorkload");
  EXPECT_EQ(events_.events().back().message, "Workload 'ns/fakejob-a' is declared finished");
  admitd_.ClearCalls();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());

  nlohmann::json done = FakeJobObject("ns", "b");
  done["status"] = {{"finished", "Failed"}};
  PutJob(done);
  ASSERT_TRUE(Reconcile("ns/b").ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(GenericReconcileTest, ReclaimablePodsAreReportedOnceCappedToThePodSet) {
  Running();
  Change({{"status", {{"reclaimable", 5}}}});
  ASSERT_TRUE(Reconcile().ok());
  ASSERT_THAT(admitd_.methods(), ElementsAre("ReleaseQuota"));
  ASSERT_EQ(Workload().status().reclaimable_pods_size(), 1);
  EXPECT_EQ(Workload().status().reclaimable_pods(0).count(), 2);
  admitd_.ClearCalls();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(GenericReconcileTest, PodsReadyIsReportedWhenItDiffers) {
  Running();
  admitd_.SetCondition("ns", kWorkload, "PodsReady", "False", "WaitForStart");
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());  // not ready, as the condition says
  Change({{"status", {{"ready", true}}}});
  ASSERT_TRUE(Reconcile().ok());
  ASSERT_THAT(admitd_.methods(), ElementsAre("ReportPodsReady"));
  EXPECT_TRUE(ConditionTrue(Workload(), "PodsReady"));
}

TEST_F(GenericReconcileTest, ASuspendedJobsPendingWorkloadFollowsItsChanges) {
  PutJob(FakeJobObject("ns", "a", 2));
  ASSERT_TRUE(Reconcile().ok());
  const std::string uid = Workload().metadata().uid();
  Change({{"spec", {{"count", 4}}}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("Submit", "DeleteWorkload", "Submit"));
  EXPECT_EQ(Workload().spec().pod_sets(0).count(), 4);
  EXPECT_NE(Workload().metadata().uid(), uid);
  EXPECT_EQ(events_.reasons().back(), "UpdatedWorkload");
  EXPECT_EQ(events_.events().back().message,
            "Updated not matching Workload for suspended job: ns/fakejob-a");
}

TEST_F(GenericReconcileTest, ARunningJobThatNoLongerMatchesIsStoppedAndItsWorkloadReplaced) {
  Running();
  Change({{"spec", {{"template", {{"spec", {{"containers", {{{"name", "other"}}}}}}}}}}});
  EXPECT_EQ(Reconcile().code(), absl::StatusCode::kAborted);  // reconciled again
  EXPECT_EQ(Job()["spec"]["suspend"], true);
  EXPECT_THAT(events_.reasons(), ElementsAre("Stopped", "DeletedWorkload"));
  EXPECT_EQ(events_.events()[0].message,
            "No matching Workload; restoring pod templates according to existent Workload");
  EXPECT_FALSE(admitd_.Workload("ns", kWorkload).has_value());
  // Its pods still run: no Workload until they are gone.
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_FALSE(admitd_.Workload("ns", kWorkload).has_value());
  Change({{"status", {{"active", 0}}}});
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_TRUE(admitd_.Workload("ns", kWorkload).has_value());
}

TEST_F(GenericReconcileTest, ARunningJobWithoutAnyWorkloadIsSuspended) {
  nlohmann::json job = FakeJobObject("ns", "a");
  job["spec"]["suspend"] = false;
  PutJob(job);
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["spec"]["suspend"], true);
  EXPECT_EQ(events_.events()[0].message, "Missing Workload; unable to restore pod templates");
  EXPECT_THAT(admitd_.methods(), IsEmpty());
  // Suspended now, with no pod active: submitted.
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("Submit"));
}

TEST_F(GenericReconcileTest, DeletedJobsAndEarlierObjectsOfTheNameLoseTheirWorkloads) {
  PutJob(FakeJobObject("ns", "a"));
  ASSERT_TRUE(Reconcile().ok());
  // The job is deleted and made again: a new uid.
  nlohmann::json again = FakeJobObject("ns", "a");
  again["metadata"]["uid"] = "second";
  PutJob(again);
  admitd_.ClearCalls();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("DeleteWorkload", "Submit"));
  const v1::Workload replaced = Workload();
  EXPECT_EQ(ControllerOwner(replaced)->uid(), "second");
  // Deleted for good.
  ASSERT_TRUE(kube_.Delete(Path("a")).ok());
  jobs_.Sync();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_FALSE(admitd_.Workload("ns", kWorkload).has_value());
}

TEST_F(GenericReconcileTest, AStaleObjectIsAConflictToRetry) {
  PutJob(FakeJobObject("ns", "a"));
  ASSERT_TRUE(Reconcile().ok());
  admitd_.Admit("ns", kWorkload, "cq", {{"cpu", "spot"}});
  // The API server moved on; the informer has not heard yet.
  nlohmann::json newer = Job();
  newer["metadata"]["labels"]["x"] = "y";
  kube_.Put(Path("a"), newer);
  kube_.Patch(Path("a"), {{"metadata", {{"annotations", {{"z", "1"}}}}}}).IgnoreError();
  EXPECT_EQ(reconciler().Reconcile("ns/a").code(), absl::StatusCode::kAborted);
  jobs_.Sync();
  EXPECT_TRUE(Reconcile().ok());
  EXPECT_EQ(Job()["spec"]["suspend"], false);
}

TEST_F(GenericReconcileTest, AnAdmitdErrorIsReturnedForTheQueuesBackoff) {
  PutJob(FakeJobObject("ns", "a"));
  admitd_.FailNext("Submit", absl::UnavailableError("submit: connection refused"));
  EXPECT_EQ(Reconcile().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Reconcile().ok());
  EXPECT_TRUE(admitd_.Workload("ns", kWorkload).has_value());
}

TEST_F(GenericReconcileTest, AJobOnHoldGivesItsQuotaBackAndIsNotRequeued) {
  Running();
  Change({{"status", {{"onHold", true}, {"active", 0}}}});
  // Deactivated (admitd evicts it, Deactivated), then its quota released once evicted.
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ElementsAre("SetActive"));
  EXPECT_FALSE(Workload().spec().active());
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), ::testing::Contains("ReleaseQuota"));
  EXPECT_FALSE(Workload().status().has_admission());
  // Nothing more while it stays on hold.
  admitd_.ClearCalls();
  ASSERT_TRUE(Reconcile().ok());
  EXPECT_THAT(admitd_.methods(), IsEmpty());
}

TEST_F(GenericReconcileTest, AChildRunsOnlyWhileItsParentsWorkloadIsAdmitted) {
  options_.enabled = {"example.com/fakejob"};
  PutJob(FakeJobObject("ns", "p", 2));  // the parent, with a queue name
  ASSERT_TRUE(Reconcile("ns/p").ok());
  // A running child (its parent's controller made it, without a queue name of its own).
  nlohmann::json child = FakeJobObject("ns", "c");
  child["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  child["spec"]["suspend"] = false;
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "example.com/v1"},
                                           {"kind", "FakeJob"},
                                           {"name", "p"},
                                           {"uid", Job("p")["metadata"]["uid"]},
                                           {"controller", true}}};
  PutJob(child);
  // The parent's Workload is not admitted: the child is suspended, and gets no Workload.
  ASSERT_TRUE(Reconcile("ns/c").ok());
  EXPECT_EQ(Job("c")["spec"]["suspend"], true);
  EXPECT_THAT(events_.reasons(), ::testing::Contains("Suspended"));
  EXPECT_EQ(events_.events().back().message, "Kueue managed child job suspended");
  EXPECT_FALSE(admitd_.Workload("ns", "fakejob-c").has_value());
  // Admitted: a running child is left to run.
  admitd_.Admit("ns", "fakejob-p", "cq", {{"cpu", "spot"}});
  Change({{"spec", {{"suspend", false}}}}, "c");
  events_.Clear();
  ASSERT_TRUE(Reconcile("ns/c").ok());
  EXPECT_EQ(Job("c")["spec"]["suspend"], false);
  EXPECT_THAT(events_.reasons(), IsEmpty());
  // A parent without a queue name is not Kueue's: its children are left alone.
  nlohmann::json free_parent = Job("p");
  free_parent["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  kube_.Put(Path("p"), free_parent);
  admitd_.Evict("ns", "fakejob-p", "Preempted");
  admitd_.SetCondition("ns", "fakejob-p", "Admitted", "False");
  ASSERT_TRUE(Reconcile("ns/c").ok());
  EXPECT_EQ(Job("c")["spec"]["suspend"], false);
}

// The controller reference of an object of `kind` (FakeJob or ReplicaSet) named `name`.
nlohmann::json OwnedBy(const std::string& kind, const std::string& name, const std::string& uid) {
  return {{{"apiVersion", kind == "ReplicaSet" ? "apps/v1" : "example.com/v1"},
           {"kind", kind},
           {"name", name},
           {"uid", uid},
           {"controller", true}}};
}

TEST_F(GenericReconcileTest, AGrandchildBelongsToItsTopManagedAncestor) {
  options_.enabled = {"example.com/fakejob", "deployment"};
  PutJob(FakeJobObject("ns", "p", 2));  // the top: a queue name
  ASSERT_TRUE(Reconcile("ns/p").ok());
  // p -> ReplicaSet rs (a known interim owner) -> c, a running FakeJob with a queue name of its
  // own: still p's, so no Workload of its own, and suspended while p is not admitted.
  kube_.Put("/apis/apps/v1/namespaces/ns/replicasets/rs",
            {{"apiVersion", "apps/v1"},
             {"kind", "ReplicaSet"},
             {"metadata",
              {{"name", "rs"},
               {"namespace", "ns"},
               {"uid", "rs-uid"},
               {"ownerReferences", OwnedBy("FakeJob", "p", Job("p")["metadata"]["uid"])}}}});
  nlohmann::json child = FakeJobObject("ns", "c");
  child["spec"]["suspend"] = false;
  child["metadata"]["ownerReferences"] = OwnedBy("ReplicaSet", "rs", "rs-uid");
  PutJob(child);
  ASSERT_TRUE(Reconcile("ns/c").ok());
  EXPECT_EQ(Job("c")["spec"]["suspend"], true);
  EXPECT_FALSE(admitd_.Workload("ns", "fakejob-c").has_value());
  // A reference whose uid is not the owner's is stale: the walk stops, c is top-level.
  child = Job("c");
  child["metadata"]["ownerReferences"] = OwnedBy("ReplicaSet", "rs", "another-uid");
  PutJob(child);
  ASSERT_TRUE(Reconcile("ns/c").ok());
  EXPECT_TRUE(admitd_.Workload("ns", "fakejob-c").has_value());
}

TEST_F(GenericReconcileTest, AnOwnerGoneLeavesTheChildToTheCollector) {
  options_.enabled = {"example.com/fakejob"};
  nlohmann::json child = FakeJobObject("ns", "c");
  child["metadata"]["ownerReferences"] = OwnedBy("FakeJob", "gone", "gone-uid");
  PutJob(child);
  ASSERT_TRUE(Reconcile("ns/c").ok());
  EXPECT_FALSE(admitd_.Workload("ns", "fakejob-c").has_value());
  EXPECT_TRUE(admitd_.calls().empty());
}

TEST_F(GenericReconcileTest, CyclesAndTooDeepChainsAreRefused) {
  options_.enabled = {"example.com/fakejob"};
  // x <-> y: a cycle is an error (retried), never a Workload.
  nlohmann::json x = FakeJobObject("ns", "x"), y = FakeJobObject("ns", "y");
  PutJob(x);
  PutJob(y);
  x = Job("x");
  y = Job("y");
  x["metadata"]["ownerReferences"] = OwnedBy("FakeJob", "y", y["metadata"]["uid"]);
  y["metadata"]["ownerReferences"] = OwnedBy("FakeJob", "x", x["metadata"]["uid"]);
  PutJob(x);
  PutJob(y);
  EXPECT_EQ(Reconcile("ns/x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(admitd_.Workload("ns", "fakejob-x").has_value());
  // j0 <- j1 <- ... <- j11: eleven hops, one past Kueue's limit.
  for (int i = 0; i <= 11; ++i) {
    nlohmann::json j = FakeJobObject("ns", absl::StrCat("j", i));
    if (i > 0) {
      const std::string parent = absl::StrCat("j", i - 1);
      j["metadata"]["ownerReferences"] = OwnedBy("FakeJob", parent, Job(parent)["metadata"]["uid"]);
    }
    PutJob(j);
  }
  EXPECT_EQ(Reconcile("ns/j11").code(), absl::StatusCode::kResourceExhausted);
  ASSERT_FALSE(events_.events().empty());
  EXPECT_EQ(events_.events().back().type, "Warning");
  EXPECT_EQ(events_.events().back().reason, "JobNestingTooDeep");
  EXPECT_EQ(events_.events().back().message,
            "Terminated search for Kueue-managed Job because ancestor depth exceeded limit of 10");
  // Ten hops are walked: j10's top is j0.
  EXPECT_TRUE(Reconcile("ns/j10").ok());
  EXPECT_FALSE(admitd_.Workload("ns", "fakejob-j10").has_value());
}

}  // namespace reconciler_test
}  // namespace admitd::shim
