// Fair sharing through the engine's API (§19 of the semantics): status.fairSharing, the
// tournament that orders a cycle's heads by share (Kueue's TestScheduleForFairSharing cases),
// and preemption by share with both strategies (Kueue's TestFairPreemptions cases).
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {
namespace fair {

using testing_fixture::kT0;

EngineOptions FairOptions(std::vector<FairPreemptionStrategy> strategies = {
                              FairPreemptionStrategy::kLessThanOrEqualToFinalShare,
                              FairPreemptionStrategy::kLessThanInitialShare}) {
  EngineOptions o;
  o.fair_sharing = true;
  o.fair_preemption_strategies = std::move(strategies);
  o.record_events = false;
  return o;
}

struct Queue {
  std::string name;
  std::string cohort;
  std::string cpu;  // nominal quota of flavor "default"
  std::string weight = "";  // spec.fairSharing.weight; empty: unset
  std::string within = "LowerPriority";
  std::string reclaim = "Any";
};

// A workload {name, queue, cpu, priority}.
struct Admitted {
  std::string name;
  std::string queue;
  std::string cpu;
  int priority = 0;
};

class FairSharingTest : public ::testing::Test {
 protected:
  explicit FairSharingTest(EngineOptions options = FairOptions()) : engine_(options) {}
  void SetUp() override {
    ASSERT_TRUE(engine_.FinishRestore(0).ok());
    v1::QueueObject f;
    f.mutable_resource_flavor()->mutable_metadata()->set_name("default");
    Apply(f);
  }
  absl::Time Now() { return kT0 + absl::Seconds(++tick_); }
  v1::ApplyResponse Apply(const v1::QueueObject& o) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    auto resp = engine_.Apply(req, Now());
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : v1::ApplyResponse();
  }
  // A Cohort object; with `cpu`, quota of its own in flavor "default".
  void Cohort(const std::string& name, const std::string& parent, const std::string& weight = "",
              const std::string& cpu = "") {
    v1::QueueObject o;
    o.mutable_cohort()->mutable_metadata()->set_name(name);
    o.mutable_cohort()->mutable_spec()->set_parent_name(parent);
    if (!weight.empty()) o.mutable_cohort()->mutable_spec()->mutable_fair_sharing()->set_weight(weight);
    if (!cpu.empty()) {
      v1::ResourceGroup* g = o.mutable_cohort()->mutable_spec()->add_resource_groups();
      g->add_covered_resources("cpu");
      v1::FlavorQuotas* fq = g->add_flavors();
      fq->set_name("default");
      fq->add_resources()->set_name("cpu");
      fq->mutable_resources(0)->set_nominal_quota(cpu);
    }
    Apply(o);
  }
  // A ClusterQueue over cpu in flavor "default", with a LocalQueue ns/<name>.
  void AddQueue(const Queue& q) {
    v1::QueueObject o;
    v1::ClusterQueue* cq = o.mutable_cluster_queue();
    cq->mutable_metadata()->set_name(q.name);
    cq->mutable_spec()->set_cohort_name(q.cohort);
    cq->mutable_spec()->mutable_namespace_selector();
    cq->mutable_spec()->mutable_preemption()->set_within_cluster_queue(q.within);
    cq->mutable_spec()->mutable_preemption()->set_reclaim_within_cohort(q.reclaim);
    if (!q.weight.empty()) cq->mutable_spec()->mutable_fair_sharing()->set_weight(q.weight);
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
  // A workload of one pod asking for `cpu` in the LocalQueue named like its ClusterQueue.
  void Submit(const std::string& name, const std::string& queue, const std::string& cpu,
              int priority = 0, absl::Time created = absl::InfinitePast()) {
    v1::SubmitRequest req;
    v1::Workload* wl = req.mutable_workload();
    wl->mutable_metadata()->set_namespace_("ns");
    wl->mutable_metadata()->set_name(name);
    wl->mutable_metadata()->set_uid(name);
    wl->mutable_spec()->set_queue_name(queue);
    wl->mutable_spec()->set_priority(priority);
    v1::PodSet* ps = wl->mutable_spec()->add_pod_sets();
    ps->set_name("main");
    ps->set_count(1);
    (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
          ->mutable_requests())["cpu"] = cpu;
    const absl::Time now = created == absl::InfinitePast() ? Now() : created;
    auto submitted = engine_.Submit(req, now);
    ASSERT_TRUE(submitted.ok()) << submitted.status();
  }
  // Workloads admitted in that order, all at the same time (so that candidate order falls to
  // priority and UID, as in Kueue's tables).
  void Admit(const std::vector<Admitted>& workloads) {
    const absl::Time at = Now();
    for (const Admitted& w : workloads) {
      Submit(w.name, w.queue, w.cpu, w.priority);
      while (engine_.RunCycle(at).more) {
      }
      ASSERT_EQ(StateOf(Get(w.name)), v1::WORKLOAD_STATE_ADMITTED) << w.name;
    }
  }
  void Drain() {
    while (engine_.RunCycle(Now()).more) {
    }
  }
  v1::Workload Get(const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    return *engine_.GetWorkload(req);
  }
  // Every workload preempted so far, with its Preempted reason.
  std::map<std::string, std::string> Preempted() {
    std::map<std::string, std::string> out;
    v1::ListWorkloadsRequest req;
    auto page = engine_.ListWorkloads(req);
    EXPECT_TRUE(page.ok());
    for (const v1::Workload& wl : page->workloads()) {
      const v1::Condition* c = FindCondition(wl, kPreempted);
      if (c != nullptr && c->status() == "True") out[wl.metadata().name()] = c->reason();
    }
    return out;
  }
  int64_t ClusterQueueShare(const std::string& name) {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    req.set_name(name);
    auto o = engine_.Get(req);
    EXPECT_TRUE(o.ok());
    EXPECT_TRUE(o->cluster_queue().status().has_fair_sharing());
    return o->cluster_queue().status().fair_sharing().weighted_share();
  }
  int64_t CohortShare(const std::string& name) {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_COHORT);
    req.set_name(name);
    auto o = engine_.Get(req);
    EXPECT_TRUE(o.ok());
    EXPECT_TRUE(o->cohort().status().has_fair_sharing());
    return o->cohort().status().fair_sharing().weighted_share();
  }

  // Cohort eng: alpha (50 cpu) within nominal, beta (50) borrowing 5 of shared's 10; then one
  // cycle over beta's older 1-cpu head and alpha's newer 5-cpu head, with room for one.
  void LowestShareScenario() {
    AddQueue({"alpha", "eng", "50"});
    AddQueue({"beta", "eng", "50"});
    AddQueue({"shared", "eng", "10"});
    Admit({{"all-nominal", "alpha", "50"}, {"borrowing", "beta", "55"}});
    Submit("older-new", "beta", "1", 0, kT0 - absl::Minutes(1));
    Submit("new", "alpha", "5");
    engine_.RunCycle(Now());
  }

  Engine engine_;
  int tick_ = 0;
};

// §19.4 with the worked example of §19.3: a and b with 10 cpu each in cohort root; a uses 15.
TEST_F(FairSharingTest, StatusShowsTheWeightedShareOfQueuesAndCohorts) {
  Cohort("root", "");
  Cohort("org", "root", "2");
  AddQueue({"a", "org", "10"});
  AddQueue({"b", "org", "10", "0"});
  AddQueue({"c", "root", "20"});
  EXPECT_EQ(ClusterQueueShare("a"), 0);
  EXPECT_EQ(CohortShare("org"), 0);
  EXPECT_EQ(CohortShare("root"), 0);
  Admit({{"a1", "a", "15"}});
  // a borrows 5 of the 40 its parent could lend: 5000 * 1000 / 40000 = 125.
  EXPECT_EQ(ClusterQueueShare("a"), 125);
  EXPECT_EQ(ClusterQueueShare("b"), 0);
  EXPECT_EQ(CohortShare("org"), 0);  // within its subtree's 20
  Admit({{"a2", "a", "10"}});
  // a: 15 of 40 → 375; org borrows 5 of root's 40 at weight 2 → 62.5 → 63.
  EXPECT_EQ(ClusterQueueShare("a"), 375);
  EXPECT_EQ(CohortShare("org"), 63);
  Admit({{"b1", "b", "11"}});
  // b borrows with weight 0: infinite, shown as the largest int64.
  EXPECT_EQ(ClusterQueueShare("b"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(CohortShare("root"), 0);
  std::vector<NodeShare> shares = engine_.WeightedShares();
  ASSERT_EQ(shares.size(), 5u);  // a, b, c, then the cohorts org and root
  EXPECT_FALSE(shares[0].cohort);
  EXPECT_EQ(shares[0].name, "a");
  EXPECT_EQ(shares[0].parent_cohort, "org");
  EXPECT_DOUBLE_EQ(shares[0].precise, 375);
}

class ClassicalTest : public FairSharingTest {
 protected:
  ClassicalTest() : FairSharingTest(EngineOptions()) {}
};

TEST_F(ClassicalTest, WithoutFairSharingNoShareIsShown) {
  AddQueue({"a", "co", "10"});
  Cohort("co", "");
  v1::GetObjectRequest req;
  req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  req.set_name("a");
  EXPECT_FALSE(engine_.Get(req)->cluster_queue().status().has_fair_sharing());
  req.set_kind(v1::OBJECT_KIND_COHORT);
  req.set_name("co");
  EXPECT_FALSE(engine_.Get(req)->cohort().status().has_fair_sharing());
  EXPECT_TRUE(engine_.WeightedShares().empty());
}

// Kueue's TestScheduleForFairSharing "with fair sharing: schedule workload with lowest share
// first": alpha within nominal, beta borrowing; alpha's newer head goes first because alpha's
// share with it admitted is lower, and beta's older head then no longer fits.
TEST_F(FairSharingTest, ScheduleWorkloadWithLowestShareFirst) {
  LowestShareScenario();
  EXPECT_EQ(StateOf(Get("new")), v1::WORKLOAD_STATE_ADMITTED);
  const v1::Workload older = Get("older-new");
  EXPECT_EQ(StateOf(older), v1::WORKLOAD_STATE_PENDING);
  EXPECT_EQ(FindCondition(older, kQuotaReserved)->message(),
            "Workload no longer fits after processing another workload");
}

// The same heads without fair sharing: the classical order takes the older head first.
TEST_F(ClassicalTest, TheClassicalOrderTakesTheOlderHeadInstead) {
  LowestShareScenario();
  EXPECT_EQ(StateOf(Get("older-new")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(StateOf(Get("new")), v1::WORKLOAD_STATE_PENDING);
}

// "fair sharing schedule highest priority first" and "... earliest timestamp first": equal
// shares fall to priority, then to the queue-order time.
TEST_F(FairSharingTest, ScheduleHighestPriorityThenEarliestTimestampFirst) {
  AddQueue({"a", "co", "5"});
  AddQueue({"b", "co", "5"});
  Admit({{"a0", "a", "4"}, {"b0", "b", "4"}});
  Submit("a-old-low", "a", "2", 0, kT0 - absl::Minutes(2));
  Submit("b-new-high", "b", "2", 5);
  engine_.RunCycle(Now());
  EXPECT_EQ(StateOf(Get("b-new-high")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(StateOf(Get("a-old-low")), v1::WORKLOAD_STATE_PENDING);

  AddQueue({"c", "co2", "5"});
  AddQueue({"d", "co2", "5"});
  Admit({{"c0", "c", "4"}, {"d0", "d", "4"}});
  Submit("d-new", "d", "2", 0, kT0 - absl::Minutes(1));
  Submit("c-old", "c", "2", 0, kT0 - absl::Minutes(2));
  engine_.RunCycle(Now());
  EXPECT_EQ(StateOf(Get("c-old")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(StateOf(Get("d-new")), v1::WORKLOAD_STATE_PENDING);
}

// "fair sharing two queues with weight 0 schedules workload which borrows less": both shares
// are infinite, so their unweighted ratios decide.
TEST_F(FairSharingTest, TwoQueuesWithWeightZeroScheduleTheOneThatBorrowsLess) {
  AddQueue({"a", "co", "5", "0"});
  AddQueue({"b", "co", "5", "0"});
  AddQueue({"lender", "co", "10"});
  Submit("a-big", "a", "9", 0, kT0 - absl::Minutes(2));
  Submit("b-small", "b", "8");
  Admit({{"fill", "lender", "4"}});  // 16 left: only one of 9 and 8 fits
  EXPECT_EQ(StateOf(Get("b-small")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(StateOf(Get("a-big")), v1::WORKLOAD_STATE_PENDING);
}

// "hierarchical fair sharing schedule workload which wins tournament": at the root the
// subtree that would not borrow goes first, whatever its queue's own share.
//   root ─┬─ left ─┬─ x (5)
//         │        └─ y (5)
//         └─ right ── z (10)
TEST_F(FairSharingTest, HierarchicalTournamentPrefersTheSubtreeThatStaysWithinItsQuota) {
  Cohort("root", "");
  Cohort("left", "root");
  Cohort("right", "root");
  AddQueue({"x", "left", "5"});
  AddQueue({"y", "left", "5"});
  AddQueue({"z", "right", "10"});
  Admit({{"x0", "x", "8"}, {"z0", "z", "10"}});
  Submit("z-first", "z", "2", 0, kT0 - absl::Minutes(5));
  Submit("x-later", "x", "2");
  engine_.RunCycle(Now());
  EXPECT_EQ(StateOf(Get("x-later")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(StateOf(Get("z-first")), v1::WORKLOAD_STATE_PENDING);
}

// Kueue's TestFairPreemptions, over its base queues: a, b and c with 3 cpu each in cohort
// "all" (withinClusterQueue LowerPriority, reclaimWithinCohort Any) and "preemptible" with none.
struct FairPreemptionCase {
  std::string name;
  std::vector<Admitted> admitted;
  Admitted incoming;
  std::map<std::string, std::string> want;  // preempted workload -> reason
  std::vector<FairPreemptionStrategy> strategies = {
      FairPreemptionStrategy::kLessThanOrEqualToFinalShare,
      FairPreemptionStrategy::kLessThanInitialShare};
  std::string b_weight = "";
};

std::vector<Admitted> Units(const std::string& queue, int n, int first = 1) {
  std::vector<Admitted> out;
  for (int i = first; i < first + n; ++i) out.push_back({queue + std::to_string(i), queue, "1"});
  return out;
}

std::vector<Admitted> Concat(
    std::initializer_list<std::vector<Admitted>> parts) {
  std::vector<Admitted> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

class FairPreemptionsTest : public FairSharingTest,
                            public ::testing::WithParamInterface<FairPreemptionCase> {
 protected:
  FairPreemptionsTest() : FairSharingTest(FairOptions(GetParam().strategies)) {}
};

TEST_P(FairPreemptionsTest, PreemptsWhatKueuePreempts) {
  const FairPreemptionCase& c = GetParam();
  AddQueue({"a", "all", "3"});
  AddQueue({"b", "all", "3", c.b_weight});
  AddQueue({"c", "all", "3"});
  AddQueue({"preemptible", "all", "0", "", "Never", "Never"});
  Admit(c.admitted);
  Submit(c.incoming.name, c.incoming.queue, c.incoming.cpu, c.incoming.priority);
  engine_.RunCycle(Now());
  EXPECT_EQ(Preempted(), c.want);
}

const FairPreemptionCase kFairPreemptionCases[] = {
    {"ReclaimNominalFromUserUsingTheMost",
     Concat({Units("a", 3), Units("b", 5), Units("c", 1)}),
     {"c-incoming", "c", "1"},
     {{"b1", "InCohortReclamation"}}},
    {"CanReclaimFromQueueUsingLessIfTakingTheLatestWorkloadFromUserUsingTheMostIsntEnough",
     {{"a1", "a", "3"}, {"a2", "a", "1"}, {"b1", "b", "2"}, {"b2", "b", "3"}},
     {"c-incoming", "c", "3"},
     {{"a1", "InCohortReclamation"}}},
    {"ReclaimBorrowableQuotaFromUserUsingTheMost",
     Concat({Units("a", 3), Units("b", 5), Units("c", 1)}),
     {"a-incoming", "a", "1"},
     {{"b1", "InCohortFairSharing"}}},
    {"PreemptOneFromEachCQBorrowing",
     {{"a1", "a", "0.5"}, {"a2", "a", "0.5"}, {"a3", "a", "3"},
      {"b1", "b", "0.5"}, {"b2", "b", "0.5"}, {"b3", "b", "3"}},
     {"c-incoming", "c", "2"},
     {{"a1", "InCohortReclamation"}, {"b1", "InCohortReclamation"}}},
    {"CantPreemptWhenEveryoneUnderNominal",
     Concat({Units("a", 3), Units("b", 3), Units("c", 3)}),
     {"c-incoming", "c", "1"},
     {}},
    {"CantPreemptWhenItWouldSwitchTheImbalance",
     Concat({Units("a", 3), Units("b", 5)}),
     {"a-incoming", "a", "2"},
     {}},
    {"CanPreemptLowerPriorityWorkloadsFromSameCQ",
     Concat({{{"a1-low", "a", "1", -1}, {"a2-low", "a", "1", -1}, {"a3", "a", "1"},
              {"a4", "a", "1"}},
             Units("b", 5)}),
     {"a-incoming", "a", "2"},
     {{"a1-low", "InClusterQueue"}, {"a2-low", "InClusterQueue"}}},
    {"CanPreemptACombinationOfSameCQAndHighestUser",
     Concat({{{"a-low", "a", "1", -1}, {"a2", "a", "1"}, {"a3", "a", "1"}}, Units("b", 6)}),
     {"a-incoming", "a", "2"},
     {{"a-low", "InClusterQueue"}, {"b1", "InCohortFairSharing"}}},
    {"PreemptHugeWorkloadIfThereIsNoOtherOption",
     {{"b1", "b", "9"}},
     {"a-incoming", "a", "2"},
     {{"b1", "InCohortReclamation"}}},
    {"CantPreemptHugeWorkloadIfTheIncomingIsAlsoHuge",
     {{"a1", "a", "2"}, {"b1", "b", "7"}},
     {"a-incoming", "a", "5"},
     {}},
    {"CantPreemptTwoSmallerWorkloadsIfTheIncomingIsHuge",
     {{"b1", "b", "2"}, {"b2", "b", "2"}, {"b3", "b", "3"}},
     {"a-incoming", "a", "6"},
     {}},
    {"PreemptFromTargetAndOthersEvenIfOverNominal",
     {{"a1-low", "a", "2", -1}, {"a2-low", "a", "1", -1}, {"b1", "b", "3"}, {"b2", "b", "3"}},
     {"a-incoming", "a", "4"},
     {{"a1-low", "InClusterQueue"}, {"b1", "InCohortFairSharing"}}},
    {"PreferToPreemptWorkloadsThatDontMakeTheTargetCQHaveTheBiggestShare",
     {{"b1", "b", "2"}, {"b2", "b", "1"}, {"b3", "b", "2"}, {"c1", "c", "1"}},
     {"a-incoming", "a", "3.5"},
     {{"b2", "InCohortFairSharing"}}},
    {"PreemptFromDifferentClusterQueuesIfTheEndResultHasASmallerMaxShare",
     {{"b1", "b", "2"}, {"b2", "b", "2.5"}, {"c1", "c", "2"}, {"c2", "c", "2.5"}},
     {"a-incoming", "a", "3.5"},
     {{"b1", "InCohortFairSharing"}, {"c1", "InCohortFairSharing"}}},
    {"ScenarioAboveDoesNotFlap",
     {{"a1", "a", "3.5"}, {"b2", "b", "2.5"}, {"c2", "c", "2.5"}},
     {"b-incoming", "b", "2"},
     {}},
    {"CannotPreemptIfItWouldMakeTheCandidateCQGoUnderNominal",
     {{"b1", "b", "3"}, {"b2", "b", "3"}, {"c1", "c", "3"}},
     {"a-incoming", "a", "4"},
     {}},
    {"WorkloadsUnderPriorityThresholdNotCapriciouslyPreempted",
     Concat({Units("a", 3), Units("b", 3),
             {{"preemptible1", "preemptible", "1", -3}, {"preemptible2", "preemptible", "1", -3},
              {"preemptible3", "preemptible", "1", -3}}}),
     {"a-incoming", "a", "2"},
     {}},
    {"PreemptLowerPriorityFirstEvenIfBig",
     {{"a1", "a", "3"}, {"b-low", "b", "5", 0}, {"b-high", "b", "1", 1}},
     {"a-incoming", "a", "1"},
     {{"b-low", "InCohortFairSharing"}},
     {FairPreemptionStrategy::kLessThanInitialShare}},
    {"PreemptWorkloadThatDoesntTransferTheImbalanceEvenIfHighPriority",
     {{"a1", "a", "3"}, {"b-low", "b", "5", 0}, {"b-high", "b", "1", 1}},
     {"a-incoming", "a", "1"},
     {{"b-high", "InCohortFairSharing"}},
     {FairPreemptionStrategy::kLessThanOrEqualToFinalShare}},
    {"CanPreemptAnythingBorrowingFromCQWith0Weight",
     Concat({Units("a", 3), Units("b", 6)}),
     {"a-incoming", "a", "3"},
     {{"b1", "InCohortFairSharing"}, {"b2", "InCohortFairSharing"},
      {"b3", "InCohortFairSharing"}},
     {FairPreemptionStrategy::kLessThanOrEqualToFinalShare,
      FairPreemptionStrategy::kLessThanInitialShare},
     "0"},
    {"CantPreemptNominalFromCQWith0Weight",
     Concat({Units("a", 3), Units("b", 3)}),
     {"a-incoming", "a", "1"},
     {},
     {FairPreemptionStrategy::kLessThanOrEqualToFinalShare,
      FairPreemptionStrategy::kLessThanInitialShare},
     "0"},
};

INSTANTIATE_TEST_SUITE_P(Kueue, FairPreemptionsTest, ::testing::ValuesIn(kFairPreemptionCases),
                         [](const auto& info) { return info.param.name; });

// Kueue's TestFairPreemptions cases over cohort trees: cohorts {name, parent, weight, cpu},
// then queues, the admitted workloads and the incoming one.
struct CohortSpec {
  std::string name, parent, weight, cpu;
};
struct TreeCase {
  std::string name;
  std::vector<CohortSpec> cohorts;
  std::vector<Queue> queues;
  std::vector<Admitted> admitted;
  Admitted incoming;
  std::map<std::string, std::string> want;
};

class FairTreePreemptionsTest : public FairSharingTest,
                                public ::testing::WithParamInterface<TreeCase> {};

TEST_P(FairTreePreemptionsTest, PreemptsWhatKueuePreempts) {
  const TreeCase& c = GetParam();
  for (const CohortSpec& co : c.cohorts) Cohort(co.name, co.parent, co.weight, co.cpu);
  for (const Queue& q : c.queues) AddQueue(q);
  Admit(c.admitted);
  Submit(c.incoming.name, c.incoming.queue, c.incoming.cpu, c.incoming.priority);
  engine_.RunCycle(Now());
  EXPECT_EQ(Preempted(), c.want);
}

std::vector<Admitted> Prioritized(const std::string& queue, int n) {
  std::vector<Admitted> out;
  for (int i = 1; i <= n; ++i) out.push_back({queue + std::to_string(i), queue, "1", i});
  return out;
}

const TreeCase kFairTreeCases[] = {
    {"HierarchicalPreemption",
     {{"root", "", "", "5"}, {"left", "root", "2", "5"}, {"right", "root", "", "5"}},
     {{"a", "left", "1", "2", "Never", "Any"},
      {"b", "left", "1", "", "Never", "Never"},
      {"c", "root", "1", "", "Never", "Never"},
      {"d", "right", "1", "", "Never", "Never"},
      {"e", "right", "1", "0.99", "Never", "Never"}},
     Concat({Prioritized("b", 5), Prioritized("c", 5), Prioritized("d", 5), Prioritized("e", 5)}),
     {"unit", "a", "5"},
     {{"b1", "InCohortFairSharing"}, {"b2", "InCohortFairSharing"},
      {"c1", "InCohortFairSharing"}, {"c2", "InCohortFairSharing"},
      {"e1", "InCohortFairSharing"}}},
    {"BorrowingCQInNonBorrowingCohortIsProtected",
     {{"root", "", "", ""}, {"right", "root", "0.1", "1"}},
     {{"a", "root", "5", "10", "LowerPriority", "Any"}, {"b", "right", "0", "0.1", "Never", "Never"}},
     {{"a1", "a", "1", -1}, {"a2", "a", "1", -1}, {"a3", "a", "1", -1}, {"b1", "b", "1", -1}},
     {"unit", "a", "5"},
     {{"a1", "InClusterQueue"}, {"a2", "InClusterQueue"}, {"a3", "InClusterQueue"}}},
    {"ForcedToPreemptWithinClusterQueueBecauseBorrowingWorkloadTooImportant",
     {{"root", "", "", ""}, {"right", "root", "0.1", "3"}},
     {{"a", "root", "5", "10", "LowerPriority", "LowerPriority"},
      {"b", "right", "0", "0.1", "Never", "Never"}},
     {{"a1", "a", "1", -1}, {"a2", "a", "1", -1}, {"a3", "a", "1", -1}, {"b1", "b", "4", 100}},
     {"unit", "a", "4"},
     {{"a1", "InClusterQueue"}, {"a2", "InClusterQueue"}, {"a3", "InClusterQueue"}}},
    {"DeepPreemption",
     {{"root", "", "", ""}, {"ca", "root", "1.01", ""}, {"caa", "ca", "", ""},
      {"caaa", "caa", "", ""}, {"cb", "root", "0.99", ""}, {"cbb", "cb", "", ""},
      {"cbbb", "cbb", "", ""}, {"cc", "root", "", ""}, {"ccc", "cc", "", ""},
      {"cccc", "ccc", "", ""}, {"ccccc", "cccc", "", "1"}},
     {{"a", "caaa", "0", "", "Never", "Any"}, {"b", "cbbb", "0", "", "Never", "Never"}},
     {{"b1", "b", "1"}},
     {"a1", "a", "1"},
     {{"b1", "InCohortFairSharing"}}},
    {"CQWithZeroWeightCanReclaimNominalQuota",
     {{"root", "", "", ""}},
     {{"a", "root", "1", "0.0", "Never", "Any"}, {"b", "root", "0", "1.0", "Never", "Never"}},
     {{"b1", "b", "1"}},
     {"a1", "a", "1"},
     {{"b1", "InCohortReclamation"}}},
    {"CohortWithZeroWeightCanReclaimNominalQuota",
     {{"root", "", "", ""}, {"ca", "root", "0.0", "1"}},
     {{"a", "ca", "0", "0.0", "Never", "Any"}, {"b", "root", "0", "1.0", "Never", "Never"}},
     {{"b1", "b", "1"}},
     {"a1", "a", "1"},
     {{"b1", "InCohortFairSharing"}}},
};

INSTANTIATE_TEST_SUITE_P(Kueue, FairTreePreemptionsTest, ::testing::ValuesIn(kFairTreeCases),
                         [](const auto& info) { return info.param.name; });

// The message a fair-sharing victim gets (§19.6).
TEST_F(FairSharingTest, AFairSharingVictimIsToldWhy) {
  AddQueue({"a", "all", "3"});
  AddQueue({"b", "all", "3"});
  AddQueue({"c", "all", "3"});
  Admit(Concat({Units("a", 3), Units("b", 5), Units("c", 1)}));
  Submit("a-incoming", "a", "1");
  engine_.RunCycle(Now());
  const v1::Workload b1 = Get("b1");
  const v1::Condition* c = FindCondition(b1, kPreempted);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason(), "InCohortFairSharing");
  EXPECT_EQ(c->message(),
            "Preempted to accommodate a workload (UID: a-incoming, JobUID: UNKNOWN) due to Fair "
            "Sharing within the cohort; preemptor path: /all/a; preemptee path: /all/b");
}

}  // namespace fair
}  // namespace
}  // namespace admitd::engine
