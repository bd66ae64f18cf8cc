// Preemption and the cycle around it, through the engine's API: hierarchical reclaim in nested
// cohorts (§7.3), capacity reservation for a preemptor without candidates (§6.5.3), preemptors
// whose targets overlap within a cycle (§6.5.1) and the sticky preemptor (§5.2).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using testing_fixture::kT0;

struct QueueSpec {
  std::string name;
  std::string cohort;
  std::string cpu;  // nominal quota of flavor "default"
  std::string within = "Never";
  std::string reclaim = "Never";
};

class PreemptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(engine_.FinishRestore(0).ok());
    v1::QueueObject f;
    f.mutable_resource_flavor()->mutable_metadata()->set_name("default");
    Apply(f);
  }
  absl::Time Now() { return kT0 + absl::Seconds(++tick_); }
  void Apply(const v1::QueueObject& o) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    auto resp = engine_.Apply(req, Now());
    ASSERT_TRUE(resp.ok()) << resp.status();
  }
  void Cohort(const std::string& name, const std::string& parent) {
    v1::QueueObject o;
    o.mutable_cohort()->mutable_metadata()->set_name(name);
    o.mutable_cohort()->mutable_spec()->set_parent_name(parent);
    Apply(o);
  }
  // A ClusterQueue over cpu in flavor "default", with a LocalQueue ns/<name>.
  void Queue(const QueueSpec& q) {
    v1::QueueObject o;
    v1::ClusterQueue* cq = o.mutable_cluster_queue();
    cq->mutable_metadata()->set_name(q.name);
    cq->mutable_spec()->set_cohort_name(q.cohort);
    cq->mutable_spec()->mutable_namespace_selector();
    cq->mutable_spec()->mutable_preemption()->set_within_cluster_queue(q.within);
    cq->mutable_spec()->mutable_preemption()->set_reclaim_within_cohort(q.reclaim);
    v1::ResourceGroup* g = cq->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    v1::FlavorQuotas* fq = g->add_flavors();
    fq->set_name("default");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota(q.cpu);
    Apply(o);
    v1::QueueObject lq;
    lq.mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
    lq.mutable_local_queue()->mutable_metadata()->set_name(q.name);
    lq.mutable_local_queue()->mutable_spec()->set_cluster_queue(q.name);
    Apply(lq);
  }
  void Submit(const std::string& name, const std::string& queue, int cpus, int priority) {
    v1::SubmitRequest req;
    v1::Workload* wl = req.mutable_workload();
    wl->mutable_metadata()->set_namespace_("ns");
    wl->mutable_metadata()->set_name(name);
    wl->mutable_metadata()->set_uid(name + "-uid");
    wl->mutable_spec()->set_queue_name(queue);
    wl->mutable_spec()->set_priority(priority);
    v1::PodSet* ps = wl->mutable_spec()->add_pod_sets();
    ps->set_name("main");
    ps->set_count(cpus);
    (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
          ->mutable_requests())["cpu"] = "1";
    ASSERT_TRUE(engine_.Submit(req, Now()).ok());
  }
  CycleStats Cycle() { return engine_.RunCycle(Now()); }
  // Queues `a` and `b` with 10 cpu each (`b` reclaiming with `b_reclaim`) and `x` without
  // quota, in cohort `co`; then `x`'s borrowers {name, cpu, priority}, admitted in turn.
  struct Borrower {
    std::string name;
    int cpus;
    int priority;
  };
  void BorrowedCohort(const std::string& b_reclaim, const std::vector<Borrower>& borrowers) {
    Queue({"a", "co", "10", "Never", "Any"});
    Queue({"b", "co", "10", "Never", b_reclaim});
    Queue({"x", "co", "0"});
    for (const Borrower& b : borrowers) {
      Submit(b.name, "x", b.cpus, b.priority);
      Drain();
      ASSERT_TRUE(Admitted(b.name));
    }
  }
  static void ExpectOneRecomputation(const CycleStats& stats, const std::string& cq,
                                     const char* result) {
    ASSERT_EQ(stats.recomputations.size(), 1u);
    EXPECT_EQ(stats.recomputations[0].first, cq);
    EXPECT_STREQ(stats.recomputations[0].second, result);
  }
  void Drain() {
    while (Cycle().more) {
    }
  }
  v1::Workload Get(const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    return *engine_.GetWorkload(req);
  }
  v1::Condition Condition(const std::string& name, const char* type) {
    const v1::Workload wl = Get(name);
    const v1::Condition* c = FindCondition(wl, type);
    return c == nullptr ? v1::Condition() : *c;
  }
  bool Admitted(const std::string& name) { return StateOf(Get(name)) == v1::WORKLOAD_STATE_ADMITTED; }
  void Stop(const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.mutable_stopped();
    ASSERT_TRUE(engine_.ReleaseQuota(req, Now()).ok());
  }

  Engine engine_;
  int tick_ = 0;
};

// root ─┬─ mine ─┬─ a (2 cpu)
//       │        └─ b (2 cpu)
//       └─ c (0 cpu, borrows all 4)
// A request of 4 in `a` fits in its sub-cohort `mine`, so `a` has the hierarchical advantage over
// `c`'s borrowing workload and reclaims it even while `a` itself borrows from `b`.
TEST_F(PreemptionTest, HierarchicalAdvantageReclaimsFromAnotherSubtree) {
  Cohort("root", "");
  Cohort("mine", "root");
  Queue({"a", "mine", "2", "Never", "Any"});
  Queue({"b", "mine", "2"});
  Queue({"c", "root", "0"});
  Submit("borrower", "c", 4, 5);
  Drain();
  ASSERT_TRUE(Admitted("borrower"));
  Submit("owner", "a", 4, 1);
  Drain();
  EXPECT_FALSE(Admitted("owner"));
  const v1::Condition preempted = Condition("borrower", kPreempted);
  EXPECT_EQ(preempted.status(), "True");
  EXPECT_EQ(preempted.reason(), "InCohortReclamation");
  EXPECT_EQ(preempted.message(),
            "Preempted to accommodate a workload (UID: owner-uid, JobUID: UNKNOWN) due to "
            "reclamation within the cohort; preemptor path: /root/mine/a; preemptee path: "
            "/root/c");
  EXPECT_EQ(Condition("owner", kQuotaReserved).message(),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
            "default, 4 more needed. Pending the preemption of 1 workload(s)");
  Stop("borrower");
  Drain();
  EXPECT_TRUE(Admitted("owner"));
  EXPECT_FALSE(Admitted("borrower"));
}

// The same quotas in one flat cohort: `a` would have to borrow, and without borrowWithinCohort
// it may only reclaim while staying within its nominal quota, so nothing is preempted.
TEST_F(PreemptionTest, WithoutTheAdvantageABorrowingPreemptorReclaimsNothing) {
  Queue({"a", "root", "2", "Never", "Any"});
  Queue({"b", "root", "2"});
  Queue({"c", "root", "0"});
  Submit("borrower", "c", 4, 5);
  Drain();
  ASSERT_TRUE(Admitted("borrower"));
  Submit("owner", "a", 4, 1);
  Drain();
  EXPECT_FALSE(Admitted("owner"));
  EXPECT_EQ(Condition("borrower", kPreempted).status(), "");
  const v1::Condition pending = Condition("owner", kQuotaReserved);
  EXPECT_EQ(pending.reason(), kReasonWaitingForQuota);
  EXPECT_EQ(pending.message(),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
            "default, 4 more needed");
}

// §6.5.3: `p` needs its nominal quota back but may not preempt the higher-priority borrower, so
// it holds back what it would get; `q`'s later entry, which fitted at nomination, no longer does.
TEST_F(PreemptionTest, PreemptorWithoutCandidatesReservesItsNominalQuota) {
  Queue({"p", "co", "4", "Never", "LowerPriority"});
  Queue({"q", "co", "4"});
  Submit("big", "q", 6, 10);
  Drain();
  ASSERT_TRUE(Admitted("big"));
  Submit("owner", "p", 4, 0);
  Submit("small", "q", 2, 0);
  Cycle();
  EXPECT_FALSE(Admitted("owner"));
  EXPECT_EQ(Condition("owner", kQuotaReserved).reason(), kReasonWaitingForQuota);
  EXPECT_FALSE(Admitted("small"));
  const v1::Condition small = Condition("small", kQuotaReserved);
  EXPECT_EQ(small.reason(), kReasonWaitingForQuota);
  EXPECT_EQ(small.message(), "Workload no longer fits after processing another workload");
}

// With reclaimWithinCohort Any the queue reclaims from the borrower whatever its priority. Later
// entries of the cycle are checked as if this cycle's victims were gone (§6.5.7), so the other
// queue's small entry fits beside the preemptor.
TEST_F(PreemptionTest, QueueThatCanAlwaysReclaimPreemptsTheBorrower) {
  Queue({"p", "co", "4", "Never", "Any"});
  Queue({"q", "co", "4"});
  Submit("big", "q", 6, 10);
  Drain();
  ASSERT_TRUE(Admitted("big"));
  Submit("owner", "p", 4, 0);
  Submit("small", "q", 2, 0);
  Cycle();
  EXPECT_EQ(Condition("big", kPreempted).reason(), "InCohortReclamation");
  EXPECT_FALSE(Admitted("owner"));
  EXPECT_TRUE(Admitted("small"));
}

// A victim larger than its preemptor keeps its quota until it is released: the entries of the
// cycle admitted beside the preemption may take what is free now, not what the victim will free
// (Kueue checks only the latter, and would admit `second` too, 10 cpu in a cohort of 8).
TEST_F(PreemptionTest, EntriesBesideAPreemptionTakeOnlyWhatIsFreeNow) {
  Queue({"p", "co", "4", "Never", "Any"});
  Queue({"q", "co", "4"});
  Queue({"r", "co", "0"});
  Submit("big", "q", 6, 10);
  Drain();
  ASSERT_TRUE(Admitted("big"));
  Submit("owner", "p", 4, 0);
  Submit("first", "q", 2, 0);
  Submit("second", "r", 2, 0);
  Cycle();
  EXPECT_EQ(Condition("big", kPreempted).reason(), "InCohortReclamation");
  EXPECT_FALSE(Admitted("owner"));
  EXPECT_TRUE(Admitted("first"));
  EXPECT_FALSE(Admitted("second"));
  const v1::Condition second = Condition("second", kQuotaReserved);
  EXPECT_EQ(second.reason(), kReasonWaitingForQuota);
  EXPECT_EQ(second.message(), "Workload no longer fits after processing another workload");
  // Once the victim is gone, both wait no longer: 2 + 4 + 2 of 8.
  Stop("big");
  Drain();
  EXPECT_TRUE(Admitted("owner"));
  EXPECT_TRUE(Admitted("second"));
}

// §6.5.1: two preemptors of a cycle nominate the same victim (the borrower reserved last). The
// second one's assignment is computed again with the first one's victim removed, as a workload
// and not only as usage, so it finds the other borrower instead of the same victim again and
// preempts it in the same cycle.
TEST_F(PreemptionTest, AnOverlappingPreemptorFindsNewTargetsWithoutTheCyclesVictims) {
  BorrowedCohort("Any", {{"x1", 10, 0}, {"x2", 10, 0}});
  Submit("wa", "a", 10, 0);
  Submit("wb", "b", 10, 0);
  const CycleStats stats = Cycle();
  ExpectOneRecomputation(stats, "b", "new_targets");
  EXPECT_TRUE(stats.preemption_skips.empty());
  const v1::Condition x2 = Condition("x2", kPreempted);
  EXPECT_EQ(x2.reason(), "InCohortReclamation");
  EXPECT_EQ(x2.message(),
            "Preempted to accommodate a workload (UID: wa-uid, JobUID: UNKNOWN) due to "
            "reclamation within the cohort; preemptor path: /co/a; preemptee path: /co/x");
  const v1::Condition x1 = Condition("x1", kPreempted);
  EXPECT_EQ(x1.reason(), "InCohortReclamation");
  EXPECT_EQ(x1.message(),
            "Preempted to accommodate a workload (UID: wb-uid, JobUID: UNKNOWN) due to "
            "reclamation within the cohort; preemptor path: /co/b; preemptee path: /co/x");
  for (const char* preemptor : {"wa", "wb"}) {
    const v1::Condition pending = Condition(preemptor, kQuotaReserved);
    EXPECT_EQ(pending.reason(), kReasonWaitingForPreemptedWorkloads) << preemptor;
    EXPECT_EQ(pending.message(),
              "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
              "flavor default, 10 more needed. Pending the preemption of 1 workload(s)")
        << preemptor;
  }
  Stop("x1");
  Stop("x2");
  Drain();
  EXPECT_TRUE(Admitted("wa"));
  EXPECT_TRUE(Admitted("wb"));
}

// One borrower holds the whole cohort: once the first preemptor's victim is gone the second one
// fits, so it waits for that preemption instead of preempting anything (a deferred fit).
TEST_F(PreemptionTest, AnOverlappingPreemptorThatFitsAfterTheCyclesPreemptionsWaits) {
  BorrowedCohort("Any", {{"x1", 20, 0}});
  Submit("wa", "a", 10, 0);
  Submit("wb", "b", 10, 0);
  ExpectOneRecomputation(Cycle(), "b", "deferred_fit");
  EXPECT_EQ(Condition("x1", kPreempted).message(),
            "Preempted to accommodate a workload (UID: wa-uid, JobUID: UNKNOWN) due to "
            "reclamation within the cohort; preemptor path: /co/a; preemptee path: /co/x");
  const v1::Condition wb = Condition("wb", kQuotaReserved);
  EXPECT_EQ(wb.reason(), kReasonWaitingForPreemptedWorkloads);
  EXPECT_EQ(wb.message(),
            "Workload has overlapping preemption targets with another workload, but will fit "
            "after these preemptions complete");
  Stop("x1");
  Drain();
  EXPECT_TRUE(Admitted("wa"));
  EXPECT_TRUE(Admitted("wb"));
}

// The second preemptor may take only lower priorities: with the first one's victim gone, the
// borrower left has a higher priority than it, so the recomputation finds nothing to preempt.
TEST_F(PreemptionTest, AnOverlappingPreemptorWithNothingElseToPreemptWaitsForQuota) {
  BorrowedCohort("LowerPriority", {{"x1", 10, 7}, {"x2", 10, 0}});
  Submit("wa", "a", 10, 10);
  Submit("wb", "b", 10, 5);
  const CycleStats stats = Cycle();
  ExpectOneRecomputation(stats, "b", "skipped");
  EXPECT_TRUE(stats.preemption_skips.empty());  // no targets is not a skipped preemption
  EXPECT_EQ(Condition("x2", kPreempted).reason(), "InCohortReclamation");
  EXPECT_EQ(Condition("x1", kPreempted).status(), "");
  const v1::Condition wb = Condition("wb", kQuotaReserved);
  EXPECT_EQ(wb.reason(), kReasonWaitingForQuota);
  EXPECT_EQ(wb.message(),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
            "flavor default, 10 more needed");
}

// §6.5 step 7 for a preemptor: `wp` cannot reclaim the higher-priority borrower and holds back
// its nominal quota for the cycle (step 3), so `wq`, whose own victim would have made room, no
// longer fits: a skipped preemption, counted for its queue.
TEST_F(PreemptionTest, APreemptorThatNoLongerFitsIsASkippedPreemption) {
  Queue({"p", "co", "10", "Never", "LowerPriority"});
  Queue({"q", "co", "10", "LowerPriority", "Never"});
  Queue({"x", "co", "0"});
  Submit("x1", "x", 10, 10);
  Submit("q0", "q", 10, 0);
  Drain();
  ASSERT_TRUE(Admitted("x1"));
  ASSERT_TRUE(Admitted("q0"));
  Submit("wp", "p", 10, 5);
  Submit("wq", "q", 10, 5);
  const CycleStats stats = Cycle();
  EXPECT_EQ(stats.preemption_skips, (std::map<std::string, int>{{"q", 1}}));
  EXPECT_TRUE(stats.recomputations.empty());
  EXPECT_EQ(Condition("q0", kPreempted).status(), "");
  const v1::Condition wq = Condition("wq", kQuotaReserved);
  EXPECT_EQ(wq.reason(), kReasonWaitingForQuota);
  EXPECT_EQ(wq.message(), "Workload no longer fits after processing another workload");
}

// The same with a second flavor that has no quota anywhere: the recomputed assignment keeps the
// flavor of its nomination and skips the other, which the message says instead of that
// flavor's own reason.
TEST_F(PreemptionTest, ARecomputedAssignmentKeepsTheNominatedFlavors) {
  v1::QueueObject f2;
  f2.mutable_resource_flavor()->mutable_metadata()->set_name("spare");
  Apply(f2);
  for (const char* name : {"a", "b", "x"}) {
    Queue({name, "co", std::string(name) == "x" ? "0" : "10", "Never", "Any"});
    v1::QueueObject o;
    v1::ClusterQueue* cq = o.mutable_cluster_queue();
    cq->mutable_metadata()->set_name(name);
    cq->mutable_spec()->set_cohort_name("co");
    cq->mutable_spec()->mutable_namespace_selector();
    cq->mutable_spec()->mutable_preemption()->set_within_cluster_queue("Never");
    cq->mutable_spec()->mutable_preemption()->set_reclaim_within_cohort("Any");
    v1::ResourceGroup* g = cq->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    for (const char* flavor : {"default", "spare"}) {
      v1::FlavorQuotas* fq = g->add_flavors();
      fq->set_name(flavor);
      fq->add_resources()->set_name("cpu");
      const bool quota = std::string(flavor) == "default" && std::string(name) != "x";
      fq->mutable_resources(0)->set_nominal_quota(quota ? "10" : "0");
    }
    Apply(o);
  }
  Submit("x1", "x", 10, 0);
  Drain();
  Submit("x2", "x", 10, 0);
  Drain();
  ASSERT_TRUE(Admitted("x1"));
  ASSERT_TRUE(Admitted("x2"));
  Submit("wa", "a", 10, 0);
  Submit("wb", "b", 10, 0);
  Cycle();
  EXPECT_EQ(Condition("x2", kPreempted).reason(), "InCohortReclamation");
  EXPECT_EQ(Condition("x1", kPreempted).reason(), "InCohortReclamation");
  EXPECT_EQ(Condition("wa", kQuotaReserved).message(),
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor spare, "
            "previously considered podsets requests (0) + current podset request (10) > maximum "
            "capacity (0), insufficient unused quota for cpu in flavor default, 10 more needed. "
            "Pending the preemption of 1 workload(s)");
  EXPECT_EQ(Condition("wb", kQuotaReserved).message(),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
            "flavor default, 10 more needed, skipping flavor spare as it is not found in the "
            "nomination mapping for resource cpu. Pending the preemption of 1 workload(s)");
}

// BestEffortFIFO: a workload that issued preemptions stays the head of its queue until it is
// admitted, even when a higher-priority workload arrives meanwhile.
TEST_F(PreemptionTest, PreemptorStaysTheHeadUntilAdmitted) {
  Queue({"cq", "", "4", "LowerPriority", "Never"});
  Submit("low", "cq", 4, 0);
  Drain();
  ASSERT_TRUE(Admitted("low"));
  Submit("mid", "cq", 4, 5);
  Drain();
  EXPECT_EQ(Condition("low", kPreempted).reason(), "InClusterQueue");
  Submit("high", "cq", 4, 10);
  Drain();
  // `high` is behind the sticky `mid`: never attempted while `mid` waits for its victim.
  EXPECT_EQ(Condition("high", kQuotaReserved).reason(), "");
  EXPECT_EQ(Condition("mid", kQuotaReserved).reason(), kReasonWaitingForPreemptedWorkloads);
  Stop("low");
  Cycle();
  EXPECT_TRUE(Admitted("mid"));
  EXPECT_FALSE(Admitted("high"));
  // Now `high` gets its turn and preempts `mid` in its turn.
  Drain();
  EXPECT_EQ(Condition("mid", kPreempted).reason(), "InClusterQueue");
  EXPECT_EQ(Condition("high", kQuotaReserved).reason(), kReasonWaitingForPreemptedWorkloads);
}

// §5.4: once a workload fails without preemption candidates, the equivalent ones behind it are
// set aside without an attempt (no condition written), and so are equivalent arrivals, until
// quota frees; a different workload behind them is still tried.
TEST_F(PreemptionTest, EquivalentWorkloadsAreSetAsideTogether) {
  Queue({"cq", "", "4"});
  Submit("running", "cq", 3, 0);
  Drain();
  ASSERT_TRUE(Admitted("running"));
  Submit("big-1", "cq", 2, 0);
  Submit("big-2", "cq", 2, 0);
  Submit("big-3", "cq", 2, 0);
  Submit("small", "cq", 1, 0);
  const CycleStats first = Cycle();
  EXPECT_EQ(first.heads, 1);
  EXPECT_EQ(Condition("big-1", kQuotaReserved).reason(), kReasonWaitingForQuota);
  Drain();
  EXPECT_TRUE(Admitted("small"));
  EXPECT_EQ(Condition("big-2", kQuotaReserved).reason(), "");  // never attempted
  EXPECT_EQ(Condition("big-3", kQuotaReserved).reason(), "");
  Submit("big-4", "cq", 2, 0);
  EXPECT_EQ(Cycle().heads, 0);  // the arrival went straight to the inadmissible set
  // Quota frees: every set-aside workload gets its attempt again.
  v1::ReleaseQuotaRequest done;
  done.set_namespace_("ns");
  done.set_name("running");
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(engine_.ReleaseQuota(done, Now()).ok());
  Drain();
  EXPECT_TRUE(Admitted("big-1"));
  // big-2 is tried and fails (1 cpu left); big-3 and big-4 are set aside with it again.
  EXPECT_EQ(Condition("big-2", kQuotaReserved).reason(), kReasonWaitingForQuota);
  EXPECT_EQ(Condition("big-3", kQuotaReserved).reason(), "");
}

// §7.4/§7.5 with more candidates than the search takes off its heap: the preemptor needs 20 of
// 30 one-cpu workloads, and the search takes them lowest priority first, so exactly those with
// the 20 lowest priorities are preempted, whatever order they were admitted in.
TEST_F(PreemptionTest, ALongSearchTakesCandidatesLowestPriorityFirst) {
  Queue({"cq", "", "30", "LowerPriority"});
  for (int i = 0; i < 30; ++i) Submit("w-" + std::to_string(i), "cq", 1, (i * 7) % 30);
  Drain();
  Submit("high", "cq", 20, 100);
  Drain();
  for (int i = 0; i < 30; ++i) {
    const std::string name = "w-" + std::to_string(i);
    const bool low = (i * 7) % 30 < 20;
    EXPECT_EQ(Condition(name, kPreempted).status(), low ? "True" : "") << name;
  }
}

// Past several of the chunks the candidate order is settled in (16, 16, 32, 64, ...): 70 of
// 200 candidates, in lowest-priority-first order whatever order they were admitted in.
TEST_F(PreemptionTest, AVeryLongSearchTakesCandidatesLowestPriorityFirst) {
  Queue({"cq", "", "200", "LowerPriority"});
  for (int i = 0; i < 200; ++i) Submit("w-" + std::to_string(i), "cq", 1, (i * 7) % 200);
  Drain();
  Submit("high", "cq", 70, 1000);
  Drain();
  for (int i = 0; i < 200; ++i) {
    const std::string name = "w-" + std::to_string(i);
    EXPECT_EQ(Condition(name, kPreempted).status(), (i * 7) % 200 < 70 ? "True" : "") << name;
  }
}

// §7.4's last key on a tie of everything else (same priority, quota reserved at the same time):
// the UID, compared as a string. The UIDs share a long prefix and differ only at the end, as
// the ones admitd makes do, and were given in an order unlike theirs.
TEST_F(PreemptionTest, TiedCandidatesGoInUidOrder) {
  Queue({"cq", "", "30", "LowerPriority"});
  auto uid = [](int i) {
    const int j = (i * 7) % 30;
    return "00000000-0000-4000-8000-0000000000" + std::string(1, "0123456789abcdef"[j / 16]) +
           std::string(1, "0123456789abcdef"[j % 16]);
  };
  const absl::Time t = Now();
  for (int i = 0; i < 30; ++i) {
    v1::SubmitRequest req;
    v1::Workload* wl = req.mutable_workload();
    wl->mutable_metadata()->set_namespace_("ns");
    wl->mutable_metadata()->set_name("w-" + std::to_string(i));
    wl->mutable_metadata()->set_uid(uid(i));
    wl->mutable_spec()->set_queue_name("cq");
    v1::PodSet* ps = wl->mutable_spec()->add_pod_sets();
    ps->set_name("main");
    ps->set_count(1);
    (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
          ->mutable_requests())["cpu"] = "1";
    ASSERT_TRUE(engine_.Submit(req, t).ok());
  }
  while (engine_.RunCycle(t).more) {
  }
  std::vector<std::string> uids;
  for (int i = 0; i < 30; ++i) uids.push_back(uid(i));
  std::sort(uids.begin(), uids.end());
  Submit("high", "cq", 20, 100);
  Drain();
  int preempted = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "w-" + std::to_string(i);
    ASSERT_TRUE(Condition(name, kQuotaReserved).last_transition_time().seconds() ==
                absl::ToUnixSeconds(t));
    const bool first = uid(i) < uids[20];
    EXPECT_EQ(Condition(name, kPreempted).status(), first ? "True" : "") << name << " " << uid(i);
    preempted += first ? 1 : 0;
  }
  EXPECT_EQ(preempted, 20);
}

}  // namespace
}  // namespace admitd::engine
