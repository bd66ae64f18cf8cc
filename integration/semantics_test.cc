// Kueue's admission semantics through the public API: a real AdmitdServer with
// --manual-scheduling, stepped one scheduling cycle at a time with RunSchedulingCycles.
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

class SemanticsTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    config_.manual_scheduling = true;
    Start();
  }

  // A ClusterQueue over cpu with the given flavors (name, nominal[, borrowing, lending]).
  v1::ApplyRequest Queue(const std::string& name, const std::string& cohort,
                         const std::vector<std::vector<std::string>>& flavors,
                         const std::string& strategy = "BestEffortFIFO",
                         const std::string& within = "") {
    v1::ApplyRequest req = testing::ClusterQueue(name, {}, {});
    v1::ClusterQueueSpec* spec = req.mutable_object()->mutable_cluster_queue()->mutable_spec();
    spec->set_cohort_name(cohort);
    spec->set_queueing_strategy(strategy);
    if (!within.empty()) spec->mutable_preemption()->set_within_cluster_queue(within);
    spec->clear_resource_groups();
    v1::ResourceGroup* g = spec->add_resource_groups();
    g->add_covered_resources("cpu");
    for (const auto& f : flavors) {
      v1::FlavorQuotas* fq = g->add_flavors();
      fq->set_name(f[0]);
      v1::ResourceQuota* q = fq->add_resources();
      q->set_name("cpu");
      q->set_nominal_quota(f[1]);
      if (f.size() > 2 && !f[2].empty()) q->set_borrowing_limit(f[2]);
      if (f.size() > 3 && !f[3].empty()) q->set_lending_limit(f[3]);
    }
    return req;
  }
  void Submit(const std::string& name, const std::string& queue, int count, int priority = 0,
              int min_count = 0) {
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", name, queue, count, {{"cpu", "1"}}, priority);
    if (min_count > 0) req.mutable_workload()->mutable_spec()->mutable_pod_sets(0)->set_min_count(min_count);
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  int Cycles(int n) {
    grpc::ClientContext ctx;
    v1::RunSchedulingCyclesRequest req;
    req.set_count(n);
    v1::RunSchedulingCyclesResponse resp;
    EXPECT_TRUE(client_->queues->RunSchedulingCycles(&ctx, req, &resp).ok());
    return resp.admitted();
  }
  std::string Flavor(const std::string& name) {
    const v1::Workload wl = Get(name);
    return wl.status().has_admission()
               ? wl.status().admission().pod_set_assignments(0).flavors().at("cpu")
               : "";
  }
  std::string Condition(const std::string& name, const std::string& type) {
    const v1::Workload wl = Get(name);
    for (const auto& c : wl.status().conditions()) {
      if (c.type() == type) return absl::StrCat(c.status(), "/", c.reason(), "/", c.message());
    }
    return "";
  }
  void Release(const std::string& name, bool stopped) {
    grpc::ClientContext ctx;
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    if (stopped) {
      req.mutable_stopped();
    } else {
      req.mutable_finished()->set_succeeded(true);
    }
    v1::ReleaseQuotaResponse resp;
    grpc::Status s = client_->admission->ReleaseQuota(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
};

TEST_F(SemanticsTest, SecondFlavorWhenTheFirstIsFull) {
  Apply(testing::Flavor("on-demand"));
  Apply(testing::Flavor("spot"));
  Apply(Queue("cq", "", {{"on-demand", "2"}, {"spot", "5"}}));
  Apply(testing::LocalQueue("ns", "lq", "cq"));
  Submit("a", "lq", 2);
  Submit("b", "lq", 3);
  EXPECT_EQ(Cycles(1), 1);  // one head per ClusterQueue per cycle
  EXPECT_EQ(Cycles(1), 1);
  EXPECT_EQ(Flavor("a"), "on-demand");
  EXPECT_EQ(Flavor("b"), "spot");
}

TEST_F(SemanticsTest, BorrowingWithinACohortUpToTheBorrowingLimit) {
  Apply(testing::Flavor("default"));
  Apply(Queue("a", "team", {{"default", "2", "2"}}));
  Apply(Queue("b", "team", {{"default", "6"}}));
  Apply(testing::LocalQueue("ns", "lq-a", "a"));
  Submit("borrow-4", "lq-a", 4);
  Submit("borrow-1", "lq-a", 1);
  Cycles(3);
  EXPECT_EQ(Flavor("borrow-4"), "default");
  EXPECT_EQ(Flavor("borrow-1"), "");
  EXPECT_EQ(Condition("borrow-1", "QuotaReserved"),
            "False/WaitingForQuota/couldn't assign flavors to pod set main: insufficient unused "
            "quota for cpu in flavor default, 1 more needed");
}

TEST_F(SemanticsTest, LendingLimitWorkedExample) {
  Apply(testing::Flavor("default"));
  Apply(Queue("lend-a", "lend", {{"default", "3", "", "2"}}));
  Apply(Queue("lend-b", "lend", {{"default", "2", "", "2"}}));
  Apply(testing::LocalQueue("ns", "lq-b", "lend-b"));
  Submit("two", "lq-b", 2);
  Cycles(1);
  EXPECT_EQ(Flavor("two"), "default");
  Submit("three", "lq-b", 3);
  Cycles(1);
  // available(lend-b) = 2 and potential 4: short by 1, not "exceeds max".
  EXPECT_EQ(Condition("three", "QuotaReserved"),
            "False/WaitingForQuota/couldn't assign flavors to pod set main: insufficient unused "
            "quota for cpu in flavor default, 1 more needed");
}

TEST_F(SemanticsTest, StrictFifoBlocksWhileBestEffortFifoSkips) {
  Apply(testing::Flavor("default"));
  Apply(Queue("strict", "", {{"default", "2"}}, "StrictFIFO"));
  Apply(Queue("besteffort", "", {{"default", "2"}}, "BestEffortFIFO"));
  Apply(testing::LocalQueue("ns", "lq-s", "strict"));
  Apply(testing::LocalQueue("ns", "lq-b", "besteffort"));
  Submit("s-big", "lq-s", 3);
  Submit("s-small", "lq-s", 1);
  Submit("b-big", "lq-b", 3);
  Submit("b-small", "lq-b", 1);
  Cycles(5);
  EXPECT_EQ(Flavor("s-small"), "");
  EXPECT_EQ(Flavor("b-small"), "default");
}

TEST_F(SemanticsTest, PreemptionWithinAClusterQueueThenTheVictimRequeues) {
  Apply(testing::Flavor("default"));
  Apply(Queue("cq", "", {{"default", "4"}}, "BestEffortFIFO", "LowerPriority"));
  Apply(testing::LocalQueue("ns", "lq", "cq"));
  Submit("low", "lq", 4, 1);
  Cycles(1);
  EXPECT_EQ(Flavor("low"), "default");
  Submit("high", "lq", 2, 100);
  Cycles(1);
  EXPECT_EQ(Condition("low", "Evicted").rfind("True/Preempted/Preempted to accommodate a workload", 0),
            0u);
  EXPECT_EQ(Condition("high", "QuotaReserved").rfind("False/WaitingForPreemptedWorkloads/", 0), 0u);
  Cycles(2);
  EXPECT_EQ(Flavor("high"), "");  // the victim still holds its quota
  Release("low", /*stopped=*/true);
  Cycles(2);
  EXPECT_EQ(Flavor("high"), "default");
  EXPECT_EQ(Condition("low", "Requeued").rfind("True/Preempted/", 0), 0u);
  EXPECT_EQ(Condition("low", "QuotaReserved").rfind("False/", 0), 0u);
}

TEST_F(SemanticsTest, ReclaimWithinTheCohort) {
  Apply(testing::Flavor("default"));
  v1::ApplyRequest owner = Queue("owner", "team", {{"default", "4"}});
  owner.mutable_object()->mutable_cluster_queue()->mutable_spec()->mutable_preemption()
      ->set_reclaim_within_cohort("Any");
  Apply(owner);
  Apply(Queue("borrower", "team", {{"default", "0"}}));
  Apply(testing::LocalQueue("ns", "lq-owner", "owner"));
  Apply(testing::LocalQueue("ns", "lq-borrower", "borrower"));
  Submit("borrowing", "lq-borrower", 4, 100);  // higher priority does not protect a borrower
  Cycles(1);
  EXPECT_EQ(Flavor("borrowing"), "default");
  Submit("reclaimer", "lq-owner", 2);
  Cycles(1);
  const std::string evicted = Condition("borrowing", "Evicted");
  EXPECT_NE(evicted.find("due to reclamation within the cohort; preemptor path: /team/owner; "
                         "preemptee path: /team/borrower"),
            std::string::npos)
      << evicted;
  EXPECT_EQ(Condition("borrowing", "Preempted").rfind("True/InCohortReclamation/", 0), 0u);
  Release("borrowing", /*stopped=*/true);
  Cycles(2);
  EXPECT_EQ(Flavor("reclaimer"), "default");
}

TEST_F(SemanticsTest, ReclaimWhileBorrowingUnderBorrowWithinCohort) {
  Apply(testing::Flavor("default"));
  v1::ApplyRequest a = Queue("a", "team", {{"default", "2"}});
  auto* preemption = a.mutable_object()->mutable_cluster_queue()->mutable_spec()->mutable_preemption();
  preemption->set_reclaim_within_cohort("LowerPriority");
  preemption->mutable_borrow_within_cohort()->set_policy("LowerPriority");
  Apply(a);
  Apply(Queue("b", "team", {{"default", "4"}}));
  Apply(testing::LocalQueue("ns", "lq-a", "a"));
  Apply(testing::LocalQueue("ns", "lq-b", "b"));
  Submit("low", "lq-b", 6, 0);  // borrows a's 2
  Cycles(1);
  EXPECT_EQ(Flavor("low"), "default");
  Submit("high", "lq-a", 4, 10);  // needs to borrow too
  Cycles(1);
  EXPECT_EQ(Condition("low", "Preempted").rfind("True/InCohortReclaimWhileBorrowing/", 0), 0u)
      << Condition("low", "Preempted");
  EXPECT_NE(Condition("low", "Evicted").find("due to reclamation within the cohort while borrowing"),
            std::string::npos);
}

TEST_F(SemanticsTest, ImportRecordsARunningKueuesAdmissions) {
  Apply(testing::Flavor("default"));
  Apply(Queue("cq", "", {{"default", "2"}}));  // quota was cut below what runs
  Apply(testing::LocalQueue("ns", "lq", "cq"));
  v1::ImportRequest req;
  v1::Workload* wl = req.add_workloads();
  *wl = testing::Workload("ns", "running", "lq", 3, {{"cpu", "1"}});
  wl->mutable_metadata()->set_uid("kueue-uid-1");
  v1::PodSetAssignment* psa = wl->mutable_status()->mutable_admission()->add_pod_set_assignments();
  wl->mutable_status()->mutable_admission()->set_cluster_queue("cq");
  psa->set_name("main");
  (*psa->mutable_flavors())["cpu"] = "default";
  (*psa->mutable_resource_usage())["cpu"] = "3";
  psa->set_count(3);
  v1::Condition* reserved = wl->mutable_status()->add_conditions();
  reserved->set_type("QuotaReserved");
  reserved->set_status("True");
  reserved->mutable_last_transition_time()->set_seconds(1700000000);

  // A bad entry refuses the whole request.
  v1::ImportRequest bad = req;
  v1::Workload* second = bad.add_workloads();
  *second = *wl;
  second->mutable_metadata()->set_name("elsewhere");
  second->mutable_status()->mutable_admission()->set_cluster_queue("nope");
  {
    grpc::ClientContext ctx;
    v1::ImportResponse resp;
    grpc::Status s = client_->queues->Import(&ctx, bad, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    ASSERT_FALSE(testing::FieldViolations(s).empty());
    EXPECT_EQ(testing::FieldViolations(s)[0].rfind("workloads[1].status.admission.clusterQueue", 0),
              0u);
  }
  grpc::ClientContext ctx;
  v1::ImportResponse resp;
  grpc::Status s = client_->queues->Import(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.imported(), 1);
  const v1::Workload got = Get("running");
  EXPECT_EQ(Flavor("running"), "default");
  EXPECT_EQ(Condition("running", "Admitted"), "True/Admitted/The workload is admitted");
  for (const auto& c : got.status().conditions()) {
    if (c.type() == "QuotaReserved") {
      EXPECT_EQ(c.last_transition_time().seconds(), 1700000000);
    }
  }
  // Usage 3 over a quota of 2: nothing else fits until it finishes.
  Submit("next", "lq", 1);
  Cycles(1);
  EXPECT_EQ(Flavor("next"), "");
  Release("running", /*stopped=*/false);
  Cycles(1);
  EXPECT_EQ(Flavor("next"), "default");
}

TEST_F(SemanticsTest, PartialAdmission) {
  Apply(testing::Flavor("default"));
  Apply(Queue("cq", "", {{"default", "5"}}));
  Apply(testing::LocalQueue("ns", "lq", "cq"));
  Submit("partial", "lq", 8, 0, 3);
  Cycles(1);
  const v1::Workload wl = Get("partial");
  ASSERT_TRUE(wl.status().has_admission());
  EXPECT_EQ(wl.status().admission().pod_set_assignments(0).count(), 5);
}

}  // namespace
}  // namespace admitd
