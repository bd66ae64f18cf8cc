// The Kubernetes Events the engine records on Workloads (Kueue's types, reasons and messages) and
// the eviction counts of status.schedulingStats.
#include <tuple>

#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// type, reason, regarding name, note
using Ev = std::tuple<std::string, std::string, std::string, std::string>;

std::vector<Ev> EventsIn(const std::vector<Change>& changes) {
  std::vector<Ev> out;
  for (const Change& c : changes) {
    if (c.kind != v1::OBJECT_KIND_EVENT) continue;
    const v1::Event e = ToEvent(*c.event);
    out.emplace_back(e.type(), e.reason(), e.regarding().name(), e.note());
  }
  return out;
}

class EventsTest : public EngineApiTest {
 protected:
  EventsTest() : EngineApiTest({}, /*record_events=*/true) {}
  std::vector<Ev> Events() { return EventsIn(engine_.TakeChanges()); }
  absl::StatusOr<v1::SetActiveResponse> SetActive(const std::string& name, bool active) {
    v1::SetActiveRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_active(active);
    return engine_.SetActive(req, Now());
  }
};

TEST_F(EventsTest, AnAdmissionRecordsQuotaReservedThenAdmitted) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());  // created at tick 4
  engine_.TakeChanges();
  tick_ += 2;  // the cycle runs at tick 7: three seconds after creation
  ASSERT_EQ(Schedule(), 1);
  EXPECT_THAT(Events(),
              ElementsAre(Ev{"Normal", "QuotaReserved", "a",
                             "Quota reserved in ClusterQueue cq, wait time since queued was 3s"},
                          Ev{"Normal", "Admitted", "a",
                             "Admitted by ClusterQueue cq, wait time since reservation was 0s"}));
}

TEST_F(EventsTest, QuotaReservedListsTheFlavorsThatDidNotSimplyFit) {
  ASSERT_TRUE(Apply(FlavorObject("small")).ok());
  ASSERT_TRUE(Apply(FlavorObject("big")).ok());
  v1::QueueObject cq = ClusterQueueObject("cq", {"small", "big"}, "1");
  cq.mutable_cluster_queue()->mutable_spec()->mutable_resource_groups(0)->mutable_flavors(1)
      ->mutable_resources(0)->set_nominal_quota("4");
  ASSERT_TRUE(Apply(cq).ok());
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("a", 2, "1")).ok());  // created at tick 4
  engine_.TakeChanges();
  ASSERT_EQ(Schedule(), 1);  // tick 5
  EXPECT_THAT(Events(),
              ElementsAre(Ev{"Normal", "QuotaReserved", "a",
                             "Quota reserved in ClusterQueue cq, wait time since queued was 1s; "
                             "Flavors considered: main: small(NoFit;insufficient quota for cpu in "
                             "flavor small, previously considered podsets requests (0) + current "
                             "podset request (2) > maximum capacity (1))"},
                          Ev{"Normal", "Admitted", "a",
                             "Admitted by ClusterQueue cq, wait time since reservation was 0s"}));
}

TEST_F(EventsTest, EventsNameTheWorkloadAndTheReportingController) {
  Basic();
  v1::Workload wl = MakeWorkload("a", 1, "1");
  wl.mutable_metadata()->set_uid("uid-a");
  ASSERT_TRUE(Submit(wl).ok());
  engine_.TakeChanges();
  ASSERT_EQ(Schedule(), 1);
  const std::vector<Change> changes = engine_.TakeChanges();
  const Change* event = nullptr;
  for (const Change& c : changes) {
    if (c.kind == v1::OBJECT_KIND_EVENT) event = &c;
  }
  ASSERT_NE(event, nullptr);
  const v1::Event e = ToEvent(*event->event);
  EXPECT_EQ(e.regarding().kind(), "Workload");
  EXPECT_EQ(e.regarding().api_version(), "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(e.regarding().namespace_(), "ns");
  EXPECT_EQ(e.regarding().uid(), "uid-a");
  EXPECT_EQ(e.reporting_controller(), "kueue-admission");
  EXPECT_EQ(e.cluster_queue(), "cq");
  EXPECT_EQ(e.action(), "Admitted");
  // Every event has a revision of its own.
  EXPECT_GT(event->revision, changes.front().revision);
}

TEST_F(EventsTest, AFailedAttemptRecordsAWarningWithTheConditionReasonOnce) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("big", 1, "2")).ok());
  engine_.TakeChanges();
  Schedule();
  const v1::Condition pending = Condition("big", kQuotaReserved);
  EXPECT_EQ(pending.reason(), "ExceedsMaxQuota");
  EXPECT_THAT(Events(), ElementsAre(Ev{"Warning", "ExceedsMaxQuota", "big", pending.message()}));
  // The same outcome again changes no condition and records nothing new.
  ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"default"}, "1")).ok());
  Schedule();
  EXPECT_THAT(Events(), IsEmpty());
}

TEST_F(EventsTest, PreemptionRecordsPreemptedAndPreemptedWorkloadWithPriorities) {
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  v1::QueueObject cq = ClusterQueueObject("cq", {"default"}, "2");
  cq.mutable_cluster_queue()->mutable_spec()->mutable_preemption()->set_within_cluster_queue(
      "LowerPriority");
  ASSERT_TRUE(Apply(cq).ok());
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  v1::Workload low = MakeWorkload("low", 2, "1");
  low.mutable_metadata()->set_uid("low-uid");
  low.mutable_spec()->set_priority(1);
  ASSERT_TRUE(Submit(low).ok());
  ASSERT_EQ(Schedule(), 1);
  v1::Workload high = MakeWorkload("high", 2, "1");
  high.mutable_metadata()->set_uid("high-uid");
  high.mutable_spec()->set_priority(10);
  ASSERT_TRUE(Submit(high).ok());
  engine_.TakeChanges();
  Schedule();
  const std::string message =
      "Preempted to accommodate a workload (UID: high-uid, JobUID: UNKNOWN) due to "
      "prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq";
  const std::string priorities =
      "; preemptor effective priority: 10 (base: 10, boost: 0); preemptee effective priority: 1 "
      "(base: 1, boost: 0)";
  EXPECT_THAT(
      Events(),
      ElementsAre(Ev{"Normal", "EvictedDueToPreempted", "low", message},
                  Ev{"Normal", "Preempted", "low", message + priorities},
                  Ev{"Normal", "PreemptedWorkload", "high",
                     "Preempted workload ns/low (UID: low-uid) in ClusterQueue cq" + priorities},
                  Ev{"Warning", "WaitingForPreemptedWorkloads", "high",
                     Condition("high", kQuotaReserved).message()}));
  const v1::SchedulingStats stats = Get("low").status().scheduling_stats();
  ASSERT_EQ(stats.evictions_size(), 1);
  EXPECT_EQ(stats.evictions(0).reason(), "Preempted");
  EXPECT_EQ(stats.evictions(0).underlying_cause(), "");
  EXPECT_EQ(stats.evictions(0).count(), 1);
}

TEST_F(EventsTest, DeactivationEvictsWithItsCauseAndCountsEachEviction) {
  Basic();
  v1::Workload wl = MakeWorkload("a", 1, "1");
  wl.mutable_spec()->set_maximum_execution_time_seconds(10);
  ASSERT_TRUE(Submit(wl).ok());
  const absl::Time admitted_at = kT0 + absl::Seconds(tick_ + 1);
  ASSERT_EQ(Schedule(), 1);
  engine_.TakeChanges();
  engine_.Tick(admitted_at + absl::Seconds(10));
  EXPECT_THAT(
      Events(),
      ElementsAre(Ev{"Warning", "MaximumExecutionTimeExceeded", "a",
                     "The maximum execution time (10s) exceeded"},
                  Ev{"Normal", "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded", "a",
                     "The workload is deactivated due to exceeding the maximum execution time"}));
  v1::SchedulingStats stats = Get("a").status().scheduling_stats();
  ASSERT_EQ(stats.evictions_size(), 1);
  EXPECT_EQ(stats.evictions(0).reason(), "Deactivated");
  EXPECT_EQ(stats.evictions(0).underlying_cause(), "MaximumExecutionTimeExceeded");
  EXPECT_EQ(stats.evictions(0).count(), 1);

  // Stopped, reactivated, admitted and deactivated by hand: a second reason, the first kept.
  v1::ReleaseQuotaRequest stop;
  stop.mutable_stopped();
  ASSERT_TRUE(Release("a", stop).ok());
  ASSERT_TRUE(SetActive("a", true).ok());
  ASSERT_EQ(Schedule(), 1);
  engine_.TakeChanges();
  ASSERT_TRUE(SetActive("a", false).ok());
  EXPECT_THAT(Events(), ElementsAre(Ev{"Normal", "EvictedDueToDeactivated", "a",
                                       "The workload is deactivated"}));
  stats = Get("a").status().scheduling_stats();
  ASSERT_EQ(stats.evictions_size(), 2);
  EXPECT_EQ(stats.evictions(1).reason(), "Deactivated");
  EXPECT_EQ(stats.evictions(1).underlying_cause(), "");
  EXPECT_EQ(stats.evictions(1).count(), 1);
}

TEST_F(EventsTest, NoEventsWhenRecordingIsOff) {
  EngineOptions options;
  options.record_events = false;
  Engine engine(options);
  ASSERT_TRUE(engine.FinishRestore(0).ok());
  for (const v1::QueueObject& o : {FlavorObject("default"), ClusterQueueObject("cq", {"default"}),
                                   LocalQueueObject("ns", "lq", "cq")}) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    ASSERT_TRUE(engine.Apply(req, Now()).ok());
  }
  v1::SubmitRequest submit;
  *submit.mutable_workload() = MakeWorkload("a", 1, "1");
  ASSERT_TRUE(engine.Submit(submit, Now()).ok());
  EXPECT_EQ(engine.RunCycle(Now()).admitted, 1);
  EXPECT_THAT(EventsIn(engine.TakeChanges()), IsEmpty());
}

}  // namespace
}  // namespace admitd::engine
