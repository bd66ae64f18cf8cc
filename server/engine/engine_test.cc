#include "server/engine/engine.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {


using testing_fixture::kT0;

struct FlavorSpec {
  std::string name;
  std::string cpu;
};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.FinishRestore(0).ok()); }

  absl::Time Now() { return kT0 + absl::Seconds(++tick_); }

  void Apply(const v1::QueueObject& object) {
    v1::ApplyRequest req;
    *req.mutable_object() = object;
    auto resp = engine_.Apply(req, Now());
    ASSERT_TRUE(resp.ok()) << resp.status();
  }
  void Flavor(const std::string& name, const std::map<std::string, std::string>& labels = {},
              std::vector<v1::Taint> taints = {}) {
    v1::QueueObject o;
    auto* f = o.mutable_resource_flavor();
    f->mutable_metadata()->set_name(name);
    for (const auto& [k, v] : labels) (*f->mutable_spec()->mutable_node_labels())[k] = v;
    for (const auto& t : taints) *f->mutable_spec()->add_node_taints() = t;
    Apply(o);
  }
  // A ClusterQueue covering cpu with the given flavors in order.
  void ClusterQueue(const std::string& name, const std::vector<FlavorSpec>& flavors,
                    const std::string& strategy = "BestEffortFIFO", bool select_all = true,
                    const std::string& cohort = "", const std::string& borrowing_limit = "") {
    v1::QueueObject o;
    auto* cq = o.mutable_cluster_queue();
    cq->mutable_metadata()->set_name(name);
    cq->mutable_spec()->set_cohort_name(cohort);
    cq->mutable_spec()->set_queueing_strategy(strategy);
    if (select_all) cq->mutable_spec()->mutable_namespace_selector();
    auto* g = cq->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    for (const FlavorSpec& f : flavors) {
      auto* fq = g->add_flavors();
      fq->set_name(f.name);
      auto* rq = fq->add_resources();
      rq->set_name("cpu");
      rq->set_nominal_quota(f.cpu);
      if (!borrowing_limit.empty()) rq->set_borrowing_limit(borrowing_limit);
    }
    Apply(o);
  }
  void LocalQueue(const std::string& name, const std::string& cq) {
    v1::QueueObject o;
    auto* lq = o.mutable_local_queue();
    lq->mutable_metadata()->set_namespace_("ns");
    lq->mutable_metadata()->set_name(name);
    lq->mutable_spec()->set_cluster_queue(cq);
    Apply(o);
  }
  v1::Workload MakeWorkload(const std::string& name, int count, const std::string& cpu,
                            int priority = 0, const std::string& queue = "lq") {
    v1::Workload wl;
    wl.mutable_metadata()->set_namespace_("ns");
    wl.mutable_metadata()->set_name(name);
    wl.mutable_spec()->set_queue_name(queue);
    if (priority != 0) wl.mutable_spec()->set_priority(priority);
    auto* ps = wl.mutable_spec()->add_pod_sets();
    ps->set_name("main");
    ps->set_count(count);
    auto* c = ps->mutable_template_()->mutable_spec()->add_containers();
    (*c->mutable_resources()->mutable_requests())["cpu"] = cpu;
    return wl;
  }
  absl::Status Submit(const v1::Workload& wl) {
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    return engine_.Submit(req, Now()).status();
  }
  // Runs cycles until nothing moves, like the sequencer.
  int Schedule() {
    int admitted = 0;
    CycleStats s;
    do {
      s = engine_.RunCycle(Now());
      admitted += s.admitted;
    } while (s.more);
    return admitted;
  }
  v1::Workload Get(const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    return *engine_.GetWorkload(req);
  }
  std::string FlavorOf(const std::string& name) {
    v1::Workload wl = Get(name);
    if (!wl.status().has_admission()) return "";
    return wl.status().admission().pod_set_assignments(0).flavors().at("cpu");
  }
  std::pair<std::string, std::string> Pending(const std::string& name) {
    const v1::Workload wl = Get(name);
    const v1::Condition* c = FindCondition(wl, kQuotaReserved);
    if (c == nullptr) return {"", ""};
    return {c->reason(), c->message()};
  }
  void Finish(const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.mutable_finished()->set_succeeded(true);
    ASSERT_TRUE(engine_.ReleaseQuota(req, Now()).ok());
  }

  Engine engine_;
  int tick_ = 0;
};

TEST_F(EngineTest, AdmitsInTheSecondFlavorWhenTheFirstIsFull) {
  Flavor("on-demand");
  Flavor("spot");
  ClusterQueue("cq", {{"on-demand", "2"}, {"spot", "4"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("a", 2, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 3, "1")).ok());
  EXPECT_EQ(Schedule(), 2);
  EXPECT_EQ(FlavorOf("a"), "on-demand");
  EXPECT_EQ(FlavorOf("b"), "spot");
  v1::Workload b = Get("b");
  EXPECT_EQ(b.status().admission().pod_set_assignments(0).resource_usage().at("cpu"), "3");
  const v1::Condition* reserved = FindCondition(b, kQuotaReserved);
  ASSERT_NE(reserved, nullptr);
  EXPECT_EQ(reserved->reason(), "QuotaReserved");
  EXPECT_EQ(reserved->message(), "Quota reserved in ClusterQueue cq");
  const v1::Condition* admitted = FindCondition(b, kAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->message(), "The workload is admitted");
}

TEST_F(EngineTest, PendingMessagesAreKueues) {
  v1::Taint taint;
  taint.set_key("key");
  taint.set_value("val");
  taint.set_effect("NoSchedule");
  Flavor("on-demand");
  Flavor("spot-tainted", {}, {taint});
  ClusterQueue("cq", {{"on-demand", "5"}, {"spot-tainted", "100"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("running", 5, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("waiting", 5, "1")).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("running"), "on-demand");
  EXPECT_EQ(Pending("waiting"),
            std::make_pair(std::string("WaitingForQuota"),
                           std::string("couldn't assign flavors to pod set main: insufficient unused "
                                       "quota for cpu in flavor on-demand, 5 more needed, "
                                       "untolerated taint {key val NoSchedule <nil>} in flavor "
                                       "spot-tainted")));
  const v1::Workload waiting = Get("waiting");
  const v1::Condition* admitted = FindCondition(waiting, kAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->reason(), "NoReservation");
  EXPECT_EQ(admitted->message(), "The workload has no reservation");
}

TEST_F(EngineTest, RequestAboveNominalExceedsMaxQuota) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "50"}});
  LocalQueue("lq", "cq");
  v1::Workload wl = MakeWorkload("huge", 1, "100");
  wl.mutable_spec()->mutable_pod_sets(0)->set_name("one");
  ASSERT_TRUE(Submit(wl).ok());
  Schedule();
  EXPECT_EQ(Pending("huge"),
            std::make_pair(std::string("ExceedsMaxQuota"),
                           std::string("couldn't assign flavors to pod set one: insufficient quota "
                                       "for cpu in flavor default, previously considered podsets "
                                       "requests (0) + current podset request (100) > maximum "
                                       "capacity (50)")));
}

TEST_F(EngineTest, UncoveredResourceIsNoMatchingFlavor) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "10"}});
  LocalQueue("lq", "cq");
  v1::Workload wl = MakeWorkload("gpu", 1, "1");
  (*wl.mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec()
        ->mutable_containers(0)->mutable_resources()->mutable_requests())["example.com/gpu"] = "1";
  ASSERT_TRUE(Submit(wl).ok());
  Schedule();
  EXPECT_EQ(Pending("gpu"),
            std::make_pair(std::string("NoMatchingFlavor"),
                           std::string("couldn't assign flavors to pod set main: resource "
                                       "example.com/gpu unavailable in ClusterQueue")));
}

TEST_F(EngineTest, NodeAffinityPicksTheMatchingFlavor) {
  Flavor("x86", {{"arch", "amd64"}});
  Flavor("arm", {{"arch", "arm64"}});
  ClusterQueue("cq", {{"x86", "10"}, {"arm", "10"}});
  LocalQueue("lq", "cq");
  v1::Workload wl = MakeWorkload("arm-job", 1, "1");
  (*wl.mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec()
        ->mutable_node_selector())["arch"] = "arm64";
  ASSERT_TRUE(Submit(wl).ok());
  // A selector on a key no flavor labels does not constrain the choice.
  v1::Workload other = MakeWorkload("zoned", 1, "1");
  (*other.mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec()
        ->mutable_node_selector())["zone"] = "a";
  ASSERT_TRUE(Submit(other).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("arm-job"), "arm");
  EXPECT_EQ(FlavorOf("zoned"), "x86");
}

TEST_F(EngineTest, HigherPriorityThenOlderGoesFirst) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "1"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("holder", 1, "1")).ok());
  Schedule();
  ASSERT_TRUE(Submit(MakeWorkload("old-low", 1, "1", 1)).ok());
  ASSERT_TRUE(Submit(MakeWorkload("new-high", 1, "1", 10)).ok());
  ASSERT_TRUE(Submit(MakeWorkload("newer-high", 1, "1", 10)).ok());
  Schedule();
  Finish("holder");
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(FlavorOf("new-high"), "default");
  Finish("new-high");
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(FlavorOf("newer-high"), "default");
  Finish("newer-high");
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(FlavorOf("old-low"), "default");
}

TEST_F(EngineTest, StrictFifoBlocksWhileBestEffortSkips) {
  Flavor("default");
  ClusterQueue("strict", {{"default", "3"}}, "StrictFIFO");
  ClusterQueue("besteffort", {{"default", "3"}}, "BestEffortFIFO");
  LocalQueue("strict-lq", "strict");
  LocalQueue("be-lq", "besteffort");
  for (const auto& [prefix, queue] : {std::pair<std::string, std::string>{"s", "strict-lq"},
                                      {"b", "be-lq"}}) {
    ASSERT_TRUE(Submit(MakeWorkload(prefix + "-holder", 1, "1", 0, queue)).ok());
    Schedule();
    ASSERT_TRUE(Submit(MakeWorkload(prefix + "-big", 3, "1", 0, queue)).ok());
    ASSERT_TRUE(Submit(MakeWorkload(prefix + "-small", 1, "1", 0, queue)).ok());
  }
  Schedule();
  EXPECT_EQ(FlavorOf("b-small"), "default");  // skipped past the big head
  EXPECT_EQ(FlavorOf("s-small"), "");         // blocked behind it
  EXPECT_EQ(Pending("s-small").first, "");    // and never even tried
  EXPECT_EQ(Pending("s-big").first, "WaitingForQuota");
  Finish("s-holder");
  Schedule();
  EXPECT_EQ(FlavorOf("s-big"), "default");
}

TEST_F(EngineTest, UnsetNamespaceSelectorSelectsNothing) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "10"}}, "BestEffortFIFO", /*select_all=*/false);
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  Schedule();
  EXPECT_EQ(Pending("a"), std::make_pair(std::string("Misconfigured"),
                                         std::string("workload namespace doesn't match "
                                                     "ClusterQueue selector")));
}

TEST_F(EngineTest, RefusedSubmitChangesNothing) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "10"}});
  LocalQueue("lq", "cq");
  engine_.TakeChanges();
  const uint64_t before = engine_.revision();
  v1::Workload bad = MakeWorkload("bad", -1, "1");
  absl::Status s = Submit(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(FieldViolationsOf(s).size(), 1u);
  EXPECT_EQ(FieldViolationsOf(s)[0].field, "spec.podSets[0].count");
  EXPECT_EQ(FieldViolationsOf(s)[0].description,
            "Invalid value: -1: must be greater than or equal to 0");
  EXPECT_EQ(engine_.revision(), before);
  EXPECT_TRUE(engine_.TakeChanges().empty());
  v1::ListWorkloadsRequest list;
  EXPECT_EQ(engine_.ListWorkloads(list)->workloads_size(), 0);
}

TEST_F(EngineTest, ReclaimablePodsGiveQuotaBack) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "4"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("a", 4, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 2, "1")).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("b"), "");
  v1::ReleaseQuotaRequest req;
  req.set_namespace_("ns");
  req.set_name("a");
  auto* pod = req.mutable_reclaimable()->add_pods();
  pod->set_name("main");
  pod->set_count(2);
  ASSERT_TRUE(engine_.ReleaseQuota(req, Now()).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("b"), "default");
  pod->set_count(1);  // counts never go down
  EXPECT_EQ(engine_.ReleaseQuota(req, Now()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, StoppedNeedsAnEviction) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "4"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  Schedule();
  v1::ReleaseQuotaRequest req;
  req.set_namespace_("ns");
  req.set_name("a");
  req.mutable_stopped();
  absl::StatusOr<v1::ReleaseQuotaResponse> resp = engine_.ReleaseQuota(req, Now());
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorReasonOf(resp.status()), "WORKLOAD_NOT_EVICTED");
}

TEST_F(EngineTest, BorrowsWithinTheCohortUpToTheBorrowingLimit) {
  Flavor("default");
  ClusterQueue("a", {{"default", "2"}}, "BestEffortFIFO", true, "team", "3");
  ClusterQueue("b", {{"default", "10"}}, "BestEffortFIFO", true, "team");
  LocalQueue("lq-a", "a");
  LocalQueue("lq-b", "b");
  ASSERT_TRUE(Submit(MakeWorkload("borrower", 5, "1", 0, "lq-a")).ok());   // 2 own + 3 borrowed
  ASSERT_TRUE(Submit(MakeWorkload("too-much", 1, "1", 0, "lq-a")).ok());   // beyond the limit
  Schedule();
  EXPECT_EQ(FlavorOf("borrower"), "default");
  EXPECT_EQ(Pending("too-much"),
            std::make_pair(std::string("WaitingForQuota"),
                           std::string("couldn't assign flavors to pod set main: insufficient "
                                       "unused quota for cpu in flavor default, 1 more needed")));
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("a");
  const v1::QueueObject a = *engine_.Get(get);
  EXPECT_EQ(a.cluster_queue().status().flavors_reservation(0).resources(0).total(), "5");
  EXPECT_EQ(a.cluster_queue().status().flavors_reservation(0).resources(0).borrowed(), "3");
  // b lent 3 of its 10: a 8-CPU workload in b no longer fits until the borrower finishes.
  ASSERT_TRUE(Submit(MakeWorkload("owner", 8, "1", 0, "lq-b")).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("owner"), "");
  Finish("borrower");
  Schedule();
  EXPECT_EQ(FlavorOf("owner"), "default");
}

TEST_F(EngineTest, OnlyOneOfTwoBorrowersFitsInOneCycle) {
  Flavor("default");
  ClusterQueue("a", {{"default", "0"}}, "BestEffortFIFO", true, "team");
  ClusterQueue("b", {{"default", "0"}}, "BestEffortFIFO", true, "team");
  ClusterQueue("lender", {{"default", "4"}}, "BestEffortFIFO", true, "team");
  LocalQueue("lq-a", "a");
  LocalQueue("lq-b", "b");
  ASSERT_TRUE(Submit(MakeWorkload("first", 3, "1", 0, "lq-a")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("second", 3, "1", 0, "lq-b")).ok());
  CycleStats cycle = engine_.RunCycle(Now());
  EXPECT_EQ(cycle.admitted, 1);
  EXPECT_EQ(FlavorOf("first"), "default");  // older, so first in the iteration order
  EXPECT_EQ(Pending("second"),
            std::make_pair(std::string("WaitingForQuota"),
                           std::string("Workload no longer fits after processing another workload")));
}

TEST_F(EngineTest, PreemptsTheNewestLowerPriorityWorkloadInTheClusterQueue) {
  Flavor("default");
  v1::QueueObject o;
  auto* cq = o.mutable_cluster_queue();
  cq->mutable_metadata()->set_name("cq");
  cq->mutable_spec()->mutable_namespace_selector();
  cq->mutable_spec()->mutable_preemption()->set_within_cluster_queue("LowerPriority");
  auto* g = cq->mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  auto* fq = g->add_flavors();
  fq->set_name("default");
  fq->add_resources()->set_name("cpu");
  fq->mutable_resources(0)->set_nominal_quota("4");
  Apply(o);
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("low-old", 2, "1", 1)).ok());
  Schedule();
  ASSERT_TRUE(Submit(MakeWorkload("low-new", 2, "1", 1)).ok());
  Schedule();
  v1::Workload high = MakeWorkload("high", 2, "1", 10);
  high.mutable_metadata()->set_uid("high-uid");
  ASSERT_TRUE(Submit(high).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("high"), "");
  EXPECT_EQ(Pending("high"),
            std::make_pair(std::string("WaitingForPreemptedWorkloads"),
                           std::string("couldn't assign flavors to pod set main: insufficient "
                                       "unused quota for cpu in flavor default, 2 more needed. "
                                       "Pending the preemption of 1 workload(s)")));
  const std::string message =
      "Preempted to accommodate a workload (UID: high-uid, JobUID: UNKNOWN) due to "
      "prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq";
  const v1::Workload victim = Get("low-new");
  const v1::Condition* evicted = FindCondition(victim, kEvicted);
  ASSERT_NE(evicted, nullptr);
  EXPECT_EQ(evicted->reason(), "Preempted");
  EXPECT_EQ(evicted->message(), message);
  const v1::Condition* preempted = FindCondition(victim, kPreempted);
  ASSERT_NE(preempted, nullptr);
  EXPECT_EQ(preempted->reason(), "InClusterQueue");
  EXPECT_EQ(StateOf(Get("low-old")), v1::WORKLOAD_STATE_ADMITTED);
  // The victim keeps its quota until its owner reports it stopped; then it requeues.
  Schedule();
  EXPECT_EQ(FlavorOf("high"), "");
  v1::ReleaseQuotaRequest stop;
  stop.set_namespace_("ns");
  stop.set_name("low-new");
  stop.mutable_stopped();
  ASSERT_TRUE(engine_.ReleaseQuota(stop, Now()).ok());
  Schedule();
  EXPECT_EQ(FlavorOf("high"), "default");
  const v1::Workload requeued = Get("low-new");
  EXPECT_EQ(StateOf(requeued), v1::WORKLOAD_STATE_PENDING);
  const v1::Condition* again = FindCondition(requeued, kRequeued);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->status(), "True");
  EXPECT_EQ(again->reason(), "Preempted");
}

TEST_F(EngineTest, NeverPreemptsWithoutAPolicy) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "2"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("low", 2, "1", 1)).ok());
  Schedule();
  ASSERT_TRUE(Submit(MakeWorkload("high", 2, "1", 10)).ok());
  Schedule();
  EXPECT_EQ(Pending("high").first, "WaitingForQuota");
  EXPECT_EQ(FindCondition(Get("low"), kEvicted), nullptr);
}

TEST_F(EngineTest, PartialAdmissionTakesTheLargestCountThatFits) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "4"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("holder", 1, "1")).ok());
  Schedule();
  v1::Workload wl = MakeWorkload("elastic-ish", 10, "1");
  wl.mutable_spec()->mutable_pod_sets(0)->set_min_count(2);
  ASSERT_TRUE(Submit(wl).ok());
  Schedule();
  const v1::Workload got = Get("elastic-ish");
  ASSERT_TRUE(got.status().has_admission());
  EXPECT_EQ(got.status().admission().pod_set_assignments(0).count(), 3);
  EXPECT_EQ(got.status().admission().pod_set_assignments(0).resource_usage().at("cpu"), "3");
  // Below minCount nothing is admitted.
  v1::Workload big = MakeWorkload("too-big", 10, "1");
  big.mutable_spec()->mutable_pod_sets(0)->set_min_count(5);
  Finish("holder");
  ASSERT_TRUE(Submit(big).ok());
  Schedule();
  EXPECT_FALSE(Get("too-big").status().has_admission());
}

TEST_F(EngineTest, StopPolicies) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "10"}});
  LocalQueue("lq", "cq");
  ASSERT_TRUE(Submit(MakeWorkload("running", 1, "1")).ok());
  Schedule();
  // A LocalQueue on Hold keeps new workloads out; lifting it lets them in.
  v1::QueueObject lq;
  lq.mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
  lq.mutable_local_queue()->mutable_metadata()->set_name("lq");
  lq.mutable_local_queue()->mutable_spec()->set_cluster_queue("cq");
  lq.mutable_local_queue()->mutable_spec()->set_stop_policy("Hold");
  Apply(lq);
  ASSERT_TRUE(Submit(MakeWorkload("held", 1, "1")).ok());
  Schedule();
  EXPECT_EQ(Pending("held"), std::make_pair(std::string("Suspended"),
                                            std::string("LocalQueue lq is inactive")));
  EXPECT_EQ(StateOf(Get("running")), v1::WORKLOAD_STATE_ADMITTED);  // Hold does not drain
  lq.mutable_local_queue()->mutable_spec()->set_stop_policy("None");
  Apply(lq);
  Schedule();
  EXPECT_EQ(FlavorOf("held"), "default");
  // HoldAndDrain on the ClusterQueue evicts what it admitted.
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  v1::QueueObject cq = *engine_.Get(get);
  cq.mutable_cluster_queue()->mutable_spec()->set_stop_policy("HoldAndDrain");
  Apply(cq);
  const v1::Workload drained = Get("running");
  const v1::Condition* evicted = FindCondition(drained, kEvicted);
  ASSERT_NE(evicted, nullptr);
  EXPECT_EQ(evicted->reason(), "ClusterQueueStopped");
  EXPECT_EQ(evicted->message(), "The ClusterQueue is stopped");
}

// Whether some LocalQueue holds its workloads is counted: stopping, resuming, re-applying and
// deleting other LocalQueues never lets a held one's workloads in.
TEST_F(EngineTest, AHeldLocalQueueStaysHeldWhileOtherLocalQueuesChange) {
  Flavor("default");
  ClusterQueue("cq", {{"default", "10"}});
  auto local_queue = [](const std::string& name, const std::string& policy) {
    v1::QueueObject lq;
    lq.mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
    lq.mutable_local_queue()->mutable_metadata()->set_name(name);
    lq.mutable_local_queue()->mutable_spec()->set_cluster_queue("cq");
    lq.mutable_local_queue()->mutable_spec()->set_stop_policy(policy);
    return lq;
  };
  Apply(local_queue("lq", "Hold"));
  Apply(local_queue("other", "Hold"));
  Apply(local_queue("other", "Hold"));  // unchanged
  Apply(local_queue("other", "None"));
  Apply(local_queue("other", "HoldAndDrain"));
  v1::DeleteObjectRequest del;
  del.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  del.set_namespace_("ns");
  del.set_name("other");
  ASSERT_TRUE(engine_.Delete(del, Now()).ok());
  ASSERT_TRUE(Submit(MakeWorkload("held", 1, "1")).ok());
  Schedule();
  EXPECT_EQ(Pending("held"), std::make_pair(std::string("Suspended"),
                                            std::string("LocalQueue lq is inactive")));
  Apply(local_queue("lq", ""));
  Schedule();
  EXPECT_EQ(FlavorOf("held"), "default");
}

}  // namespace
}  // namespace admitd::engine
