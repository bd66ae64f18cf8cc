// The engine's lifecycle after a reservation: deactivation and reactivation, admission checks,
// requeue backoff, the maximum execution time, and requeueing when a stopped queue restarts.
#include "server/engine/engine_impl.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders

v1::QueueObject AdmissionCheckObject(const std::string& name) {
  v1::QueueObject o;
  o.mutable_admission_check()->mutable_metadata()->set_name(name);
  o.mutable_admission_check()->mutable_spec()->set_controller_name("example.com/prov");
  return o;
}

// A ClusterQueue with flavors "a" and "b" (4 cpu each) that requires `check` on `on_flavors`.
v1::QueueObject CheckedClusterQueue(const std::string& check,
                                    const std::vector<std::string>& on_flavors = {}) {
  v1::QueueObject o = ClusterQueueObject("cq", {"a", "b"});
  v1::AdmissionCheckStrategyRule* rule = o.mutable_cluster_queue()
                                             ->mutable_spec()
                                             ->mutable_admission_checks_strategy()
                                             ->add_admission_checks();
  rule->set_name(check);
  for (const std::string& f : on_flavors) rule->add_on_flavors(f);
  return o;
}

class LifecycleTest : public EngineApiTest {
 protected:
  explicit LifecycleTest(EngineOptions options = {}) : EngineApiTest(options) {}

  // Flavors a and b, AdmissionCheck "prov", ClusterQueue "cq" requiring it, LocalQueue ns/lq.
  void Checked(const std::vector<std::string>& on_flavors = {}) {
    ASSERT_TRUE(Apply(FlavorObject("a")).ok());
    ASSERT_TRUE(Apply(FlavorObject("b")).ok());
    ASSERT_TRUE(Apply(AdmissionCheckObject("prov")).ok());
    ASSERT_TRUE(Apply(CheckedClusterQueue("prov", on_flavors)).ok());
    ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
    engine_.TakeChanges();
  }
  absl::StatusOr<v1::SetActiveResponse> SetActive(const std::string& name, bool active) {
    v1::SetActiveRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_active(active);
    return engine_.SetActive(req, Now());
  }
  absl::StatusOr<v1::SetAdmissionCheckStateResponse> SetCheck(
      const std::string& name, const std::string& check, const std::string& state,
      const std::string& message = "", std::optional<int> requeue_after = std::nullopt) {
    v1::SetAdmissionCheckStateRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_check(check);
    req.set_state(state);
    req.set_message(message);
    if (requeue_after) req.set_requeue_after_seconds(*requeue_after);
    return engine_.SetAdmissionCheckState(req, Now());
  }
  absl::Status Stopped(const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.mutable_stopped();
    return Release(name, req).status();
  }
  void ExpectCondition(const std::string& name, const char* type, const std::string& status,
                       const std::string& reason, const std::string& message) {
    v1::Condition c = Condition(name, type);
    EXPECT_EQ(c.status(), status) << type;
    EXPECT_EQ(c.reason(), reason) << type;
    EXPECT_EQ(c.message(), message) << type;
  }
};

// ---- Deactivation ---------------------------------------------------------------------------

TEST_F(LifecycleTest, DeactivatingAPendingWorkloadTakesItOutOfItsQueue) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("big", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 0);
  engine_.TakeChanges();
  absl::StatusOr<v1::SetActiveResponse> resp = SetActive("a", false);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_FALSE(resp->workload().spec().active());
  EXPECT_EQ(StateOf(resp->workload()), v1::WORKLOAD_STATE_INACTIVE);
  ExpectCondition("a", kQuotaReserved, "False", "Deactivated", "The workload is deactivated");
  ExpectCondition("a", kEvicted, "True", "Deactivated", "The workload is deactivated");
  EXPECT_EQ(GetClusterQueue("cq").status().pending_workloads(), 0);
  EXPECT_EQ(engine_.TakeChanges().size(), 1u);
  // Again: nothing changes.
  ASSERT_TRUE(SetActive("a", false).ok());
  EXPECT_TRUE(engine_.TakeChanges().empty());
  // Freed quota does not admit it while it is inactive.
  v1::ReleaseQuotaRequest done;
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(Release("big", done).ok());
  EXPECT_EQ(Schedule(), 0);
  // Reactivated, it queues and is admitted.
  ASSERT_TRUE(SetActive("a", true).ok());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Condition("a", kEvicted).status(), "False");
}

TEST_F(LifecycleTest, SetActiveOnAnUnknownWorkloadIsNotFound) {
  Basic();
  EXPECT_EQ(SetActive("nope", false).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LifecycleTest, DeactivatedAdmittedWorkloadIsEvictedAndNotRequeuedUntilReactivated) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 2, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  engine_.TakeChanges();
  ASSERT_TRUE(SetActive("a", false).ok());
  EXPECT_EQ(Reasons(engine_.TakeChanges()), std::vector<std::string>{"Evicted"});
  ExpectCondition("a", kEvicted, "True", "Deactivated", "The workload is deactivated");
  // The quota stays held until the owner reports the job stopped.
  EXPECT_EQ(GetClusterQueue("cq").status().reserving_workloads(), 1);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_INACTIVE);
  ASSERT_TRUE(Stopped("a").ok());
  EXPECT_EQ(GetClusterQueue("cq").status().reserving_workloads(), 0);
  ExpectCondition("a", kRequeued, "False", "Deactivated", "The workload is deactivated");
  ExpectCondition("a", kQuotaReserved, "False", "Deactivated", "The workload is deactivated");
  EXPECT_EQ(Schedule(), 0);

  ASSERT_TRUE(SetActive("a", true).ok());
  ExpectCondition("a", kRequeued, "True", "Reactivated", "The workload was reactivated");
  EXPECT_FALSE(Get("a").status().has_requeue_state());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
  ExpectCondition("a", kEvicted, "False", "QuotaReserved",
                  "Previously: The workload is deactivated");
}

// ---- Admission checks -----------------------------------------------------------------------

TEST_F(LifecycleTest, ClusterQueueNamingAMissingCheckIsInactive) {
  ASSERT_TRUE(Apply(FlavorObject("a")).ok());
  ASSERT_TRUE(Apply(FlavorObject("b")).ok());
  ASSERT_TRUE(Apply(CheckedClusterQueue("prov")).ok());
  v1::Condition active = GetClusterQueue("cq").status().conditions(0);
  EXPECT_EQ(active.status(), "False");
  EXPECT_EQ(active.reason(), "AdmissionCheckNotFound");
  EXPECT_EQ(active.message(),
            "Can't admit new workloads: references missing AdmissionCheck(s): prov.");
  ASSERT_TRUE(Apply(AdmissionCheckObject("prov")).ok());
  EXPECT_EQ(GetClusterQueue("cq").status().conditions(0).reason(), "Ready");
  // In use: the ClusterQueue refers to it.
  v1::DeleteObjectRequest del;
  del.set_kind(v1::OBJECT_KIND_ADMISSION_CHECK);
  del.set_name("prov");
  absl::Status deleted = engine_.Delete(del, Now());
  EXPECT_EQ(deleted.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorReasonOf(deleted), "IN_USE");
  v1::ListObjectsRequest list;
  list.set_kind(v1::OBJECT_KIND_ADMISSION_CHECK);
  ASSERT_EQ(engine_.List(list)->objects_size(), 1);
  EXPECT_EQ(engine_.List(list)->objects(0).admission_check().spec().controller_name(),
            "example.com/prov");
}

TEST_F(LifecycleTest, StoppedAndMissingFlavorAreBothListed) {
  ASSERT_TRUE(Apply(FlavorObject("a")).ok());
  v1::QueueObject cq = CheckedClusterQueue("prov");
  cq.mutable_cluster_queue()->mutable_spec()->set_stop_policy("Hold");
  ASSERT_TRUE(Apply(cq).ok());
  v1::Condition active = GetClusterQueue("cq").status().conditions(0);
  EXPECT_EQ(active.reason(), "Stopped");
  EXPECT_EQ(active.message(),
            "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): b, "
            "references missing AdmissionCheck(s): prov.");
}

TEST_F(LifecycleTest, ReservationWaitsForEveryCheckToBeReady) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  EXPECT_EQ(Reasons(engine_.TakeChanges()),
            (std::vector<std::string>{"Submitted", "QuotaReserved"}));
  v1::Workload wl = Get("a");
  EXPECT_EQ(StateOf(wl), v1::WORKLOAD_STATE_QUOTA_RESERVED);
  ASSERT_EQ(wl.status().admission_checks_size(), 1);
  EXPECT_EQ(wl.status().admission_checks(0).name(), "prov");
  EXPECT_EQ(wl.status().admission_checks(0).state(), "Pending");
  ExpectCondition("a", kQuotaReserved, "True", "QuotaReserved",
                  "Quota reserved in ClusterQueue cq");
  ExpectCondition("a", kAdmitted, "False", "UnsatisfiedAdmissionChecks",
                  "The workload has not all checks ready");
  EXPECT_EQ(GetClusterQueue("cq").status().admitted_workloads(), 0);
  EXPECT_EQ(GetClusterQueue("cq").status().reserving_workloads(), 1);

  ASSERT_TRUE(SetCheck("a", "prov", "Ready", "provisioned").ok());
  std::vector<Change> changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].reason, "Admitted");
  EXPECT_EQ(changes[0].message, "Admitted by ClusterQueue cq, wait time since reservation was 1s");
  ExpectCondition("a", kAdmitted, "True", "Admitted", "The workload is admitted");
  EXPECT_EQ(Get("a").status().admission_checks(0).message(), "provisioned");
  EXPECT_EQ(GetClusterQueue("cq").status().admitted_workloads(), 1);
  // The same report again changes nothing.
  ASSERT_TRUE(SetCheck("a", "prov", "Ready", "provisioned").ok());
  EXPECT_TRUE(engine_.TakeChanges().empty());
}

TEST_F(LifecycleTest, ChecksOnFlavorsApplyOnlyToThoseFlavors) {
  Checked({"b"});
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());  // fits in flavor a
  ASSERT_EQ(Schedule(), 1);
  EXPECT_EQ(Get("a").status().admission_checks_size(), 0);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "4")).ok());  // only b has room left
  ASSERT_EQ(Schedule(), 1);
  ASSERT_EQ(Get("b").status().admission_checks_size(), 1);
  EXPECT_EQ(StateOf(Get("b")), v1::WORKLOAD_STATE_QUOTA_RESERVED);
}

TEST_F(LifecycleTest, ReservationsFollowAChangedStrategy) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_QUOTA_RESERVED);
  // The check is dropped: nothing is left to wait for.
  ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"a", "b"})).ok());
  EXPECT_EQ(Get("a").status().admission_checks_size(), 0);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(GetClusterQueue("cq").status().admitted_workloads(), 1);
  // Added back: the admitted workload gets it Pending but stays admitted, as in Kueue.
  ASSERT_TRUE(Apply(CheckedClusterQueue("prov")).ok());
  ASSERT_EQ(Get("a").status().admission_checks_size(), 1);
  EXPECT_EQ(Get("a").status().admission_checks(0).state(), "Pending");
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
}

TEST_F(LifecycleTest, CheckUpdatesAreValidated) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  absl::Status not_reserved = SetCheck("a", "prov", "Ready").status();
  EXPECT_EQ(not_reserved.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorReasonOf(not_reserved), "WORKLOAD_NOT_RESERVED");
  ASSERT_EQ(Schedule(), 1);
  absl::Status bad_state = SetCheck("a", "prov", "Done").status();
  EXPECT_EQ(bad_state.code(), absl::StatusCode::kInvalidArgument);
  std::vector<FieldViolation> violations = FieldViolationsOf(bad_state);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "state");
  EXPECT_EQ(violations[0].description,
            "Unsupported value: \"Done\": supported values: \"Pending\", \"Ready\", "
            "\"Retry\", \"Rejected\"");
  absl::Status unknown = SetCheck("a", "other", "Ready").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorReasonOf(unknown), "UNKNOWN_ADMISSION_CHECK");
  EXPECT_EQ(unknown.message(),
            "workload \"ns/a\" has no admission check \"other\" (its checks: prov)");
  EXPECT_EQ(SetCheck("nope", "prov", "Ready").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LifecycleTest, RetryEvictsBacksOffAndRequeues) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Ready").ok());
  engine_.TakeChanges();
  const absl::Time retry_time = kT0 + absl::Seconds(tick_ + 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Retry", "capacity gone").ok());
  EXPECT_EQ(Reasons(engine_.TakeChanges()), std::vector<std::string>{"Evicted"});
  ExpectCondition("a", kEvicted, "True", "AdmissionCheck",
                  "Evicted due to AdmissionCheck in Retry state: \"prov\" (capacity gone)");
  v1::Workload wl = Get("a");
  EXPECT_EQ(wl.status().admission_checks(0).state(), "Pending");
  EXPECT_EQ(wl.status().admission_checks(0).message(),
            "Reset to Pending after eviction. Previously: Retry");
  EXPECT_EQ(wl.status().admission_checks(0).retry_count(), 1);
  EXPECT_EQ(wl.status().requeue_state().count(), 1);
  const absl::Time requeue_at = retry_time + absl::Seconds(60);
  EXPECT_EQ(FromProto(wl.status().requeue_state().requeue_at()), requeue_at);
  ExpectCondition("a", kAdmitted, "False", "UnsatisfiedAdmissionChecks",
                  "The workload has not all checks ready");

  ASSERT_TRUE(Stopped("a").ok());
  ExpectCondition("a", kRequeued, "False", "AdmissionCheck",
                  "Evicted due to AdmissionCheck in Retry state: \"prov\" (capacity gone)");
  EXPECT_EQ(Schedule(), 0);  // still backing off
  EXPECT_EQ(GetClusterQueue("cq").status().pending_workloads(), 1);
  EXPECT_EQ(engine_.NextDeadline(), requeue_at);
  engine_.TakeChanges();
  engine_.Tick(requeue_at - absl::Seconds(1));
  EXPECT_TRUE(engine_.TakeChanges().empty());
  engine_.Tick(requeue_at);
  EXPECT_EQ(Reasons(engine_.TakeChanges()), std::vector<std::string>{"Requeued"});
  ExpectCondition("a", kRequeued, "True", "BackoffFinished", "The workload backoff was finished");
  EXPECT_FALSE(Get("a").status().requeue_state().has_requeue_at());
  EXPECT_EQ(Get("a").status().requeue_state().count(), 1);
  EXPECT_EQ(engine_.NextDeadline(), absl::InfiniteFuture());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(Get("a").status().admission_checks(0).state(), "Pending");
  ASSERT_TRUE(SetCheck("a", "prov", "Ready").ok());
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
}

TEST_F(LifecycleTest, RetryHonoursRequeueAfterSeconds) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  const absl::Time retry_time = kT0 + absl::Seconds(tick_ + 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Retry", "", 600).ok());
  EXPECT_EQ(FromProto(Get("a").status().requeue_state().requeue_at()),
            retry_time + absl::Seconds(600));
  EXPECT_EQ(Condition("a", kEvicted).message(),
            "Evicted due to AdmissionCheck in Retry state: \"prov\"");
}

TEST_F(LifecycleTest, RejectedDeactivates) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Rejected", "no capacity anywhere").ok());
  v1::Workload wl = Get("a");
  EXPECT_FALSE(wl.spec().active());
  EXPECT_EQ(FindCondition(wl, kDeactivationTarget), nullptr);
  ExpectCondition("a", kEvicted, "True", "DeactivatedDueToAdmissionCheck",
                  "The workload is deactivated due to AdmissionCheck in Rejected state: \"prov\" "
                  "(no capacity anywhere)");
  EXPECT_EQ(wl.status().admission_checks(0).state(), "Pending");
  ASSERT_TRUE(Stopped("a").ok());
  EXPECT_EQ(Condition("a", kRequeued).status(), "False");
  EXPECT_EQ(Condition("a", kRequeued).reason(), "DeactivatedDueToAdmissionCheck");
  EXPECT_EQ(Schedule(), 0);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_INACTIVE);
}

// §5.4/§6.6: a workload whose backoff ends while an equivalent workload's failure has its shape
// set aside is not attempted; its `PendingEvaluation` condition takes the failure's reason with
// the bypass message. Workloads already queued when the shape failed keep their condition.
TEST_F(LifecycleTest, AWorkloadRequeuedBesideAFailedShapeSaysItWasBypassed) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Retry").ok());
  ASSERT_TRUE(Stopped("a").ok());
  ASSERT_EQ(Condition("a", kQuotaReserved).reason(), kReasonPendingEvaluation);
  const absl::Time requeue_at = FromProto(Get("a").status().requeue_state().requeue_at());
  ASSERT_TRUE(Submit(MakeWorkload("fill-a", 1, "4")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("fill-b", 1, "4")).ok());
  ASSERT_EQ(Schedule(), 2);
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("c", 1, "1")).ok());
  EXPECT_EQ(Schedule(), 0);
  const v1::Condition failed = Condition("b", kQuotaReserved);
  ASSERT_EQ(failed.status(), "False");
  EXPECT_EQ(Condition("c", kQuotaReserved).reason(), "");  // set aside untouched
  engine_.TakeChanges();
  engine_.Tick(requeue_at);
  EXPECT_EQ(Reasons(engine_.TakeChanges()), (std::vector<std::string>{"Pending", "Requeued"}));
  ExpectCondition("a", kQuotaReserved, "False", failed.reason(),
                  "Bypassed scheduling evaluation because an equivalent workload recently failed");
  EXPECT_EQ(engine_.RunCycle(Now()).heads, 0);
  EXPECT_EQ(GetClusterQueue("cq").status().pending_inadmissible_workloads(), 3);
}

// Backoff 10s doubling up to 25s, at most kLimit requeues (negative: unlimited).
template <int kLimit>
class BackoffTest : public LifecycleTest {
 protected:
  static EngineOptions Options() {
    EngineOptions o;
    o.backoff_base = absl::Seconds(10);
    o.backoff_max = absl::Seconds(25);
    o.backoff_limit_count = kLimit;
    return o;
  }
  BackoffTest() : LifecycleTest(Options()) {}
  // Admits `name`, reports Retry, releases it and lets the backoff run out; returns the backoff.
  absl::Duration RetryRound(const std::string& name) {
    EXPECT_EQ(Schedule(), 1) << Get(name).DebugString();
    const absl::Time at = kT0 + absl::Seconds(tick_ + 1);
    EXPECT_TRUE(SetCheck(name, "prov", "Retry").ok());
    const v1::Workload wl = Get(name);
    if (wl.spec().has_active() && !wl.spec().active()) return absl::ZeroDuration();
    const absl::Duration backoff = FromProto(wl.status().requeue_state().requeue_at()) - at;
    EXPECT_TRUE(Stopped(name).ok());
    engine_.Tick(FromProto(wl.status().requeue_state().requeue_at()));
    tick_ += 100;
    return backoff;
  }
};

using BackoffLimitTest = BackoffTest<2>;
using UnlimitedBackoffTest = BackoffTest<-1>;

TEST_F(BackoffLimitTest, BackoffDoublesAndTheLimitDeactivates) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  EXPECT_EQ(RetryRound("a"), absl::Seconds(10));
  EXPECT_EQ(RetryRound("a"), absl::Seconds(20));
  EXPECT_EQ(RetryRound("a"), absl::ZeroDuration());  // the third requeue is over the limit
  v1::Workload wl = Get("a");
  EXPECT_FALSE(wl.spec().active());
  EXPECT_FALSE(wl.status().has_requeue_state());
  ExpectCondition("a", kEvicted, "True", "DeactivatedDueToRequeuingLimitExceeded",
                  "The workload is deactivated due to exceeding the maximum number of re-queuing "
                  "retries");
}

TEST_F(UnlimitedBackoffTest, BackoffIsCappedAtTheMax) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  EXPECT_EQ(RetryRound("a"), absl::Seconds(10));
  EXPECT_EQ(RetryRound("a"), absl::Seconds(20));
  EXPECT_EQ(RetryRound("a"), absl::Seconds(25));
  EXPECT_EQ(RetryRound("a"), absl::Seconds(25));
  EXPECT_EQ(Get("a").status().requeue_state().count(), 4);
}

TEST_F(LifecycleTest, AFailedCheckReportedAfterAnEvictionKeepsItFromBeingTried) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  v1::QueueObject cq = CheckedClusterQueue("prov");
  cq.mutable_cluster_queue()->mutable_spec()->set_stop_policy("HoldAndDrain");
  ASSERT_TRUE(Apply(cq).ok());
  // Already evicted: the Retry is recorded, nothing else happens.
  ASSERT_TRUE(SetCheck("a", "prov", "Retry").ok());
  EXPECT_EQ(Condition("a", kEvicted).reason(), "ClusterQueueStopped");
  EXPECT_FALSE(Get("a").status().has_requeue_state());
  ASSERT_TRUE(Stopped("a").ok());
  cq.mutable_cluster_queue()->mutable_spec()->set_stop_policy("None");
  ASSERT_TRUE(Apply(cq).ok());
  EXPECT_EQ(Schedule(), 0);
  ExpectCondition("a", kQuotaReserved, "False", "PendingEvaluation",
                  "The workload has failed admission checks");
}

// ---- Maximum execution time -----------------------------------------------------------------

TEST_F(LifecycleTest, MaximumExecutionTimeDeactivates) {
  Basic();
  v1::Workload wl = MakeWorkload("a", 1, "1");
  wl.mutable_spec()->set_maximum_execution_time_seconds(10);
  ASSERT_TRUE(Submit(wl).ok());
  const absl::Time admitted_at = kT0 + absl::Seconds(tick_ + 1);
  ASSERT_EQ(Schedule(), 1);
  EXPECT_EQ(engine_.NextDeadline(), admitted_at + absl::Seconds(10));
  engine_.TakeChanges();
  engine_.Tick(admitted_at + absl::Seconds(9));
  EXPECT_TRUE(engine_.TakeChanges().empty());
  engine_.Tick(admitted_at + absl::Seconds(10));
  EXPECT_EQ(Reasons(engine_.TakeChanges()), std::vector<std::string>{"Evicted"});
  EXPECT_FALSE(Get("a").spec().active());
  ExpectCondition("a", kEvicted, "True", "DeactivatedDueToMaximumExecutionTimeExceeded",
                  "The workload is deactivated due to exceeding the maximum execution time");
}

TEST_F(LifecycleTest, PastExecutionTimeAccumulatesAcrossEvictions) {
  Basic();
  v1::Workload wl = MakeWorkload("a", 1, "1");
  wl.mutable_spec()->set_maximum_execution_time_seconds(100);
  ASSERT_TRUE(Submit(wl).ok());
  ASSERT_EQ(Schedule(), 1);  // admitted at tick t
  const absl::Time admitted_at = kT0 + absl::Seconds(tick_);
  ASSERT_TRUE(SetActive("a", false).ok());  // t+1
  tick_ += 28;
  ASSERT_TRUE(Stopped("a").ok());  // t+30: ran 30s
  EXPECT_EQ(Get("a").status().accumulated_past_execution_time_seconds(), 30);
  ASSERT_TRUE(SetActive("a", true).ok());
  ASSERT_EQ(Schedule(), 1);
  const absl::Time readmitted_at = FromProto(Condition("a", kAdmitted).last_transition_time());
  // The first admission's timer is stale and may fire early: Tick checks again.
  engine_.Tick(readmitted_at + absl::Seconds(69));
  EXPECT_TRUE(Get("a").spec().active());
  EXPECT_EQ(engine_.NextDeadline(), readmitted_at + absl::Seconds(70));
  engine_.Tick(readmitted_at + absl::Seconds(70));
  EXPECT_FALSE(Get("a").spec().active());
  (void)admitted_at;
}

// ---- Queue restarts -------------------------------------------------------------------------

TEST_F(LifecycleTest, RestartedClusterQueueRequeuesWhatItsStopEvicted) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  v1::QueueObject cq = ClusterQueueObject("cq", {"default"});
  cq.mutable_cluster_queue()->mutable_spec()->set_stop_policy("HoldAndDrain");
  ASSERT_TRUE(Apply(cq).ok());
  ExpectCondition("a", kEvicted, "True", "ClusterQueueStopped", "The ClusterQueue is stopped");
  ASSERT_TRUE(Stopped("a").ok());
  ExpectCondition("a", kRequeued, "False", "ClusterQueueStopped", "The ClusterQueue is stopped");
  engine_.TakeChanges();
  cq.mutable_cluster_queue()->mutable_spec()->set_stop_policy("None");
  ASSERT_TRUE(Apply(cq).ok());
  ExpectCondition("a", kRequeued, "True", "ClusterQueueRestarted",
                  "The ClusterQueue was restarted after being stopped");
  EXPECT_EQ(Schedule(), 1);
}

TEST_F(LifecycleTest, RestartedLocalQueueRequeuesWhatItsStopEvicted) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  v1::QueueObject lq = LocalQueueObject("ns", "lq", "cq");
  lq.mutable_local_queue()->mutable_spec()->set_stop_policy("HoldAndDrain");
  ASSERT_TRUE(Apply(lq).ok());
  ASSERT_TRUE(Stopped("a").ok());
  ExpectCondition("a", kRequeued, "False", "LocalQueueStopped", "The LocalQueue is stopped");
  lq.mutable_local_queue()->mutable_spec()->clear_stop_policy();
  ASSERT_TRUE(Apply(lq).ok());
  ExpectCondition("a", kRequeued, "True", "LocalQueueRestarted",
                  "The LocalQueue was restarted after being stopped");
}

// ---- Restore --------------------------------------------------------------------------------

TEST_F(LifecycleTest, RestoreKeepsBackoffAndChecks) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Retry").ok());
  ASSERT_TRUE(Stopped("a").ok());
  const v1::Workload stored = Get("a");
  Engine restored;
  for (const char* name : {"a", "b"}) ASSERT_TRUE(restored.Restore(FlavorObject(name)).ok());
  ASSERT_TRUE(restored.Restore(AdmissionCheckObject("prov")).ok());
  ASSERT_TRUE(restored.Restore(CheckedClusterQueue("prov")).ok());
  ASSERT_TRUE(restored.Restore(LocalQueueObject("ns", "lq", "cq")).ok());
  ASSERT_TRUE(restored.Restore(stored).ok());
  ASSERT_TRUE(restored.FinishRestore(engine_.revision()).ok());
  const absl::Time at = FromProto(stored.status().requeue_state().requeue_at());
  EXPECT_EQ(restored.NextDeadline(), at);
  EXPECT_EQ(restored.RunCycle(at - absl::Seconds(1)).admitted, 0);
  restored.Tick(at);
  EXPECT_EQ(restored.RunCycle(at).admitted, 1);
}

}  // namespace
}  // namespace admitd::engine

namespace admitd::engine {
namespace {

// §5.2: a workload evicted by an admission check queues from the time of its eviction, so a
// workload created after it but before the eviction goes first.
TEST_F(LifecycleTest, AnAdmissionCheckEvictionQueuesFromTheEvictionTime) {
  Checked();
  ASSERT_TRUE(Submit(MakeWorkload("a", 4, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("filler", 4, "1")).ok());
  ASSERT_EQ(Schedule(), 2);
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());  // no room left: pending
  Schedule();
  ASSERT_TRUE(SetCheck("a", "prov", "Retry").ok());
  ASSERT_TRUE(Stopped("a").ok());
  engine_.Tick(FromProto(Get("a").status().requeue_state().requeue_at()));
  v1::AdmitRequest req;
  req.set_namespace_("ns");
  req.set_name("a");
  req.set_dry_run(true);
  auto described = engine_.Describe(req, Now());
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->explanation().queue_position(), 1);  // behind b
}

}  // namespace
}  // namespace admitd::engine
