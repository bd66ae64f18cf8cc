// waitForPodsReady through the engine's API (§21 of the semantics), after Kueue's workload
// controller tables: the PodsReady condition's reasons, the timeout that evicts and requeues
// with backoff, deactivation at the requeuing limit, the recovery timeout, blockAdmission, and
// readiness derived from reported pods.
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_impl.h"
#include "server/engine/engine_test_fixture.h"
#include "server/pods/pod_group.h"

namespace admitd::engine {
namespace {
namespace pods_ready {

using testing_fixture::ClusterQueueObject;
using testing_fixture::FlavorObject;
using testing_fixture::kT0;
using testing_fixture::LocalQueueObject;
using testing_fixture::MakeWorkload;

EngineOptions WithPodsReady(int limit = -1, bool block = false,
                            absl::Duration recovery = absl::Minutes(3)) {
  EngineOptions o;
  o.record_events = false;
  o.wait_for_pods_ready.enabled = true;
  o.wait_for_pods_ready.timeout = absl::Minutes(5);
  o.wait_for_pods_ready.block_admission = block;
  o.wait_for_pods_ready.recovery_timeout = recovery;
  o.backoff_base = absl::Seconds(60);
  o.backoff_max = absl::Seconds(3600);
  o.backoff_limit_count = limit;
  return o;
}

class PodsReadyTest : public ::testing::Test {
 protected:
  explicit PodsReadyTest(EngineOptions options = WithPodsReady()) : engine_(options) {}
  void SetUp() override {
    ASSERT_TRUE(engine_.FinishRestore(0).ok());
    for (const v1::QueueObject& o : {FlavorObject("default"), ClusterQueueObject("cq", {"default"}),
                                     LocalQueueObject("ns", "lq", "cq")}) {
      v1::ApplyRequest req;
      *req.mutable_object() = o;
      ASSERT_TRUE(engine_.Apply(req, now_).ok());
    }
  }
  void Submit(const std::string& name, const std::string& cpu = "1") {
    v1::SubmitRequest req;
    *req.mutable_workload() = MakeWorkload(name, 1, cpu);
    ASSERT_TRUE(engine_.Submit(req, now_).ok());
  }
  void Schedule() {
    while (engine_.RunCycle(now_).more) {
    }
  }
  // Moves the clock to `at` and runs what falls due (timers, then cycles), as the server does.
  void At(absl::Time at) {
    now_ = at;
    if (engine_.NextDeadline() <= now_) engine_.Tick(now_);
    Schedule();
  }
  absl::StatusOr<v1::ReportPodsReadyResponse> Report(const std::string& name, bool ready) {
    v1::ReportPodsReadyRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_ready(ready);
    return engine_.ReportPodsReady(req, now_);
  }
  void Stopped(const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.mutable_stopped();
    ASSERT_TRUE(engine_.ReleaseQuota(req, now_).ok());
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
  void ExpectPodsReady(const std::string& name, const std::string& status,
                       const std::string& reason, const std::string& message) {
    const v1::Condition c = Condition(name, kPodsReady);
    EXPECT_EQ(c.status(), status) << name;
    EXPECT_EQ(c.reason(), reason) << name;
    EXPECT_EQ(c.message(), message) << name;
  }

  Engine engine_;
  absl::Time now_ = kT0;
};

constexpr char kNotReady[] = "Not all pods are ready or succeeded";
constexpr char kReady[] = "All pods reached readiness and the workload is running";
constexpr char kRecovery[] = "At least one pod has failed, waiting for recovery";

// Kueue's generatePodsReadyCondition: WaitForStart until the first readiness, Started, then
// WaitForRecovery when a pod fails, Recovered when they are all ready again.
TEST_F(PodsReadyTest, TheConditionFollowsWhatTheIntegrationReports) {
  Submit("w");
  ExpectPodsReady("w", "False", "WaitForStart", kNotReady);
  Schedule();
  ASSERT_TRUE(IsConditionTrue(Get("w"), kAdmitted));
  ExpectPodsReady("w", "False", "WaitForStart", kNotReady);
  now_ += absl::Seconds(30);
  ASSERT_TRUE(Report("w", true).ok());
  ExpectPodsReady("w", "True", "Started", kReady);
  EXPECT_EQ(FromProto(Condition("w", kPodsReady).last_transition_time()), now_);
  now_ += absl::Seconds(30);
  ASSERT_TRUE(Report("w", false).ok());
  ExpectPodsReady("w", "False", "WaitForRecovery", kRecovery);
  ASSERT_TRUE(Report("w", true).ok());
  ExpectPodsReady("w", "True", "Recovered", kReady);
  // The same report again changes nothing.
  const v1::Workload before = Get("w");
  ASSERT_TRUE(Report("w", true).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Get("w"), before));
}

// reconcileNotReadyTimeout: evicted after the timeout, requeued after base * 2^(n-1).
TEST_F(PodsReadyTest, ATimeoutEvictsAndRequeuesWithBackoff) {
  Submit("w");
  Schedule();
  const absl::Time admitted = now_;
  At(admitted + absl::Minutes(5) - absl::Seconds(1));
  EXPECT_FALSE(IsConditionTrue(Get("w"), kEvicted));
  At(admitted + absl::Minutes(5));
  v1::Workload wl = Get("w");
  const v1::Condition* evicted = FindCondition(wl, kEvicted);
  ASSERT_NE(evicted, nullptr);
  EXPECT_EQ(evicted->status(), "True");
  EXPECT_EQ(evicted->reason(), "PodsReadyTimeout");
  EXPECT_EQ(evicted->message(), "Exceeded the PodsReady timeout ns/w");
  EXPECT_EQ(wl.status().requeue_state().count(), 1);
  EXPECT_EQ(FromProto(wl.status().requeue_state().requeue_at()), now_ + absl::Seconds(60));
  ASSERT_EQ(wl.status().scheduling_stats().evictions_size(), 1);
  EXPECT_EQ(wl.status().scheduling_stats().evictions(0).reason(), "PodsReadyTimeout");
  EXPECT_EQ(wl.status().scheduling_stats().evictions(0).underlying_cause(), "WaitForStart");
  // The job stops; the workload waits out its backoff, then is admitted again.
  Stopped("w");
  const v1::Condition requeued = Condition("w", kRequeued);
  EXPECT_EQ(requeued.status(), "False");
  EXPECT_EQ(requeued.reason(), "PodsReadyTimeout");
  ExpectPodsReady("w", "False", "WaitForStart", kNotReady);
  At(now_ + absl::Seconds(59));
  EXPECT_FALSE(IsConditionTrue(Get("w"), kAdmitted));
  At(now_ + absl::Seconds(1));
  EXPECT_EQ(Condition("w", kRequeued).reason(), "BackoffFinished");
  EXPECT_EQ(Condition("w", kRequeued).message(), "The workload backoff was finished");
  EXPECT_TRUE(IsConditionTrue(Get("w"), kAdmitted));
  // The second timeout waits twice as long.
  At(now_ + absl::Minutes(5));
  wl = Get("w");
  EXPECT_EQ(wl.status().requeue_state().count(), 2);
  EXPECT_EQ(FromProto(wl.status().requeue_state().requeue_at()), now_ + absl::Seconds(120));
}

TEST_F(PodsReadyTest, ReadyInTimeIsNeverEvicted) {
  Submit("w");
  Schedule();
  const absl::Time admitted = now_;
  now_ += absl::Minutes(4);
  ASSERT_TRUE(Report("w", true).ok());
  At(admitted + absl::Hours(2));
  EXPECT_FALSE(IsConditionTrue(Get("w"), kEvicted));
  EXPECT_TRUE(IsConditionTrue(Get("w"), kAdmitted));
}

// recoveryTimeout: a workload whose pods stopped being ready has that long to recover.
TEST_F(PodsReadyTest, ARecoveryTimeoutEvictsAWorkloadThatDoesNotRecover) {
  Submit("w");
  Schedule();
  ASSERT_TRUE(Report("w", true).ok());
  now_ += absl::Minutes(20);
  ASSERT_TRUE(Report("w", false).ok());
  const absl::Time failed = now_;
  At(failed + absl::Minutes(3) - absl::Seconds(1));
  EXPECT_FALSE(IsConditionTrue(Get("w"), kEvicted));
  At(failed + absl::Minutes(3));
  const v1::Workload wl = Get("w");
  EXPECT_EQ(FindCondition(wl, kEvicted)->reason(), "PodsReadyTimeout");
  EXPECT_EQ(wl.status().scheduling_stats().evictions(0).underlying_cause(), "WaitForRecovery");
}

class PodsReadyLimitTest : public PodsReadyTest {
 protected:
  PodsReadyLimitTest() : PodsReadyTest(WithPodsReady(/*limit=*/1)) {}
};

// triggerDeactivation: with backoffLimitCount 1, the second timeout deactivates.
TEST_F(PodsReadyLimitTest, TheTimeoutPastTheLimitDeactivates) {
  Submit("w");
  Schedule();
  At(now_ + absl::Minutes(5));
  ASSERT_EQ(Condition("w", kEvicted).reason(), "PodsReadyTimeout");
  Stopped("w");
  At(now_ + absl::Seconds(60));
  ASSERT_TRUE(IsConditionTrue(Get("w"), kAdmitted));
  At(now_ + absl::Minutes(5));
  const v1::Workload wl = Get("w");
  EXPECT_FALSE(wl.spec().active());
  const v1::Condition* evicted = FindCondition(wl, kEvicted);
  ASSERT_NE(evicted, nullptr);
  EXPECT_EQ(evicted->reason(), "DeactivatedDueToRequeuingLimitExceeded");
  EXPECT_EQ(evicted->message(),
            "The workload is deactivated due to exceeding the maximum number of re-queuing "
            "retries");
  EXPECT_FALSE(wl.status().has_requeue_state());
  Stopped("w");
  EXPECT_EQ(Condition("w", kRequeued).reason(), "DeactivatedDueToRequeuingLimitExceeded");
}

class BlockAdmissionTest : public PodsReadyTest {
 protected:
  BlockAdmissionTest() : PodsReadyTest(WithPodsReady(-1, /*block=*/true)) {}
};

// waitForPodsReadyIfNeeded: nothing is admitted while an admitted workload is not ready.
TEST_F(BlockAdmissionTest, NothingIsAdmittedUntilTheAdmittedWorkloadIsReady) {
  Submit("first");
  Schedule();
  ASSERT_TRUE(IsConditionTrue(Get("first"), kAdmitted));
  Submit("second");
  Schedule();
  EXPECT_FALSE(IsConditionTrue(Get("second"), kQuotaReserved));
  const v1::Condition waiting = Condition("second", kQuotaReserved);
  EXPECT_EQ(waiting.reason(), "WaitingForPodsReady");
  EXPECT_EQ(waiting.message(), "waiting for all admitted workloads to be in PodsReady condition");
  ASSERT_TRUE(Report("first", true).ok());
  Schedule();
  EXPECT_TRUE(IsConditionTrue(Get("second"), kAdmitted));
}

TEST_F(BlockAdmissionTest, AWorkloadThatGivesItsQuotaBackUnblocks) {
  Submit("first");
  Schedule();
  Submit("second");
  Schedule();
  ASSERT_FALSE(IsConditionTrue(Get("second"), kQuotaReserved));
  v1::ReleaseQuotaRequest done;
  done.set_namespace_("ns");
  done.set_name("first");
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(engine_.ReleaseQuota(done, now_).ok());
  Schedule();
  EXPECT_TRUE(IsConditionTrue(Get("second"), kAdmitted));
}

class PodsReadyOffTest : public PodsReadyTest {
 protected:
  PodsReadyOffTest() : PodsReadyTest(EngineOptions()) {}
};

TEST_F(PodsReadyOffTest, WithoutWaitForPodsReadyThereIsNoConditionAndReportsAreRefused) {
  Submit("w");
  Schedule();
  EXPECT_EQ(FindCondition(Get("w"), kPodsReady), nullptr);
  absl::StatusOr<v1::ReportPodsReadyResponse> r = Report("w", true);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("waitForPodsReady"));
  At(now_ + absl::Hours(1));
  EXPECT_FALSE(IsConditionTrue(Get("w"), kEvicted));
}

// Pods reported by a shim (§21.3): a group is ready once all of its pods are known and Ready.
class PodGroupReadyTest : public PodsReadyTest {
 protected:
  v1::PodObservation Member(const std::string& name, bool running, bool ready, int version) {
    v1::PodObservation p;
    p.set_namespace_("ns");
    p.set_name(name);
    p.set_uid(name + "-uid");
    p.set_resource_version(version);
    p.set_phase(running ? v1::POD_PHASE_RUNNING : v1::POD_PHASE_PENDING);
    *p.mutable_creation_timestamp() = ToProtoTime(kT0);
    (*p.mutable_labels())[kQueueNameLabel] = "lq";
    (*p.mutable_labels())[kManagedLabel] = "true";
    (*p.mutable_labels())[kGroupNameLabel] = "g";
    (*p.mutable_annotations())[kGroupTotalCountAnnotation] = "2";
    p.add_finalizers(kManagedFinalizer);
    if (!running) p.add_scheduling_gates()->set_name(kAdmissionGate);
    v1::Container* c = p.mutable_spec()->add_containers();
    c->set_name("c");
    (*c->mutable_resources()->mutable_requests())["cpu"] = "1";
    if (running) {
      p.set_node_name("node-1");
      v1::Condition* r = p.add_conditions();
      r->set_type("Ready");
      r->set_status(ready ? "True" : "False");
    }
    return p;
  }
  void ReportPods(const std::vector<v1::PodObservation>& pods) {
    v1::ReportPodsRequest req;
    req.set_cluster("c1");
    for (const v1::PodObservation& p : pods) *req.add_pods() = p;
    ASSERT_TRUE(engine_.ReportPods(req, now_).ok());
    Schedule();
  }
};

TEST_F(PodGroupReadyTest, AGroupIsReadyWhenEveryPodIsReady) {
  ReportPods({Member("a", false, false, 1), Member("b", false, false, 1)});
  ASSERT_TRUE(IsConditionTrue(Get("g"), kAdmitted));
  ExpectPodsReady("g", "False", "WaitForStart", kNotReady);
  ReportPods({Member("a", true, true, 2), Member("b", true, false, 2)});
  ExpectPodsReady("g", "False", "WaitForStart", kNotReady);
  ReportPods({Member("b", true, true, 3)});
  ExpectPodsReady("g", "True", "Started", kReady);
  // A report of its own is refused: admitd derives it.
  EXPECT_EQ(Report("g", false).status().code(), absl::StatusCode::kFailedPrecondition);
  ReportPods({Member("a", true, false, 4)});
  ExpectPodsReady("g", "False", "WaitForRecovery", kRecovery);
}

}  // namespace pods_ready
}  // namespace
}  // namespace admitd::engine
