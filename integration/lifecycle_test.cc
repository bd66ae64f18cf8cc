// A workload's life after its reservation, through the public API: admission checks,
// deactivation, requeue backoff and the maximum execution time. A real AdmitdServer with
// --manual-scheduling and --manual-clock, stepped with RunSchedulingCycles(advance_clock_seconds).
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

const v1::Condition* FindCondition(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

class LifecycleTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    config_.manual_scheduling = true;
    config_.manual_clock = true;
    Start();
  }

  // Flavor "default", AdmissionCheck "prov" (when `with_check`), ClusterQueue "cq" with 4 cpu
  // requiring it, LocalQueue ns/lq.
  void Setup(bool with_check) {
    Apply(testing::Flavor("default"));
    v1::ApplyRequest cq = testing::ClusterQueue("cq", {"default"}, {{"cpu", "4"}});
    if (with_check) {
      v1::ApplyRequest check;
      v1::AdmissionCheck* ac = check.mutable_object()->mutable_admission_check();
      ac->mutable_metadata()->set_name("prov");
      ac->mutable_spec()->set_controller_name("example.com/provisioning");
      Apply(check);
      cq.mutable_object()
          ->mutable_cluster_queue()
          ->mutable_spec()
          ->mutable_admission_checks_strategy()
          ->add_admission_checks()
          ->set_name("prov");
    }
    Apply(cq);
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
  void Submit(const std::string& name, int max_execution_seconds = 0) {
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "1"}});
    if (max_execution_seconds > 0) {
      req.mutable_workload()->mutable_spec()->set_maximum_execution_time_seconds(
          max_execution_seconds);
    }
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  grpc::Status RunCycles(int64_t advance_seconds, v1::RunSchedulingCyclesResponse* resp) {
    grpc::ClientContext ctx;
    v1::RunSchedulingCyclesRequest req;
    req.set_count(1);
    req.set_advance_clock_seconds(advance_seconds);
    return client_->queues->RunSchedulingCycles(&ctx, req, resp);
  }
  int Cycle(int64_t advance_seconds = 0) {
    v1::RunSchedulingCyclesResponse resp;
    grpc::Status s = RunCycles(advance_seconds, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.admitted();
  }
  grpc::Status SetCheck(const std::string& name, const std::string& check, const std::string& state,
                        v1::Workload* out = nullptr) {
    grpc::ClientContext ctx;
    v1::SetAdmissionCheckStateRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_check(check);
    req.set_state(state);
    v1::SetAdmissionCheckStateResponse resp;
    grpc::Status s = client_->admission->SetAdmissionCheckState(&ctx, req, &resp);
    if (out != nullptr) *out = resp.workload();
    return s;
  }
  grpc::Status SetActive(const std::string& name, bool active) {
    grpc::ClientContext ctx;
    v1::SetActiveRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_active(active);
    v1::SetActiveResponse resp;
    return client_->admission->SetActive(&ctx, req, &resp);
  }
  grpc::Status Stopped(const std::string& name) {
    grpc::ClientContext ctx;
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.mutable_stopped();
    v1::ReleaseQuotaResponse resp;
    return client_->admission->ReleaseQuota(&ctx, req, &resp);
  }
  void ExpectCondition(const std::string& name, const std::string& type, const std::string& status,
                       const std::string& reason, const std::string& message) {
    const v1::Workload wl = Get(name);
    const v1::Condition* c = FindCondition(wl, type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ(c->status(), status) << type;
    EXPECT_EQ(c->reason(), reason) << type;
    EXPECT_EQ(c->message(), message) << type;
  }
};

TEST_F(LifecycleTest, ReadyCheckAdmits) {
  Setup(/*with_check=*/true);
  Submit("a");
  ASSERT_EQ(Cycle(), 1);
  v1::Workload wl = Get("a");
  ASSERT_EQ(wl.status().admission_checks_size(), 1);
  EXPECT_EQ(wl.status().admission_checks(0).state(), "Pending");
  ExpectCondition("a", "Admitted", "False", "UnsatisfiedAdmissionChecks",
                  "The workload has not all checks ready");
  ASSERT_TRUE(SetCheck("a", "prov", "Ready", &wl).ok());
  EXPECT_EQ(wl.status().admission_checks(0).state(), "Ready");
  ExpectCondition("a", "Admitted", "True", "Admitted", "The workload is admitted");

  grpc::Status bad = SetCheck("a", "prov", "Maybe");
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(testing::FieldViolations(bad).size(), 1u);
  grpc::Status unknown = SetCheck("a", "other", "Ready");
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(testing::ErrorReason(unknown), "UNKNOWN_ADMISSION_CHECK");
  EXPECT_EQ(SetCheck("nope", "prov", "Ready").error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LifecycleTest, RetryBacksOffAndIsAdmittedAgain) {
  Setup(/*with_check=*/true);
  Submit("a");
  ASSERT_EQ(Cycle(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Retry").ok());
  ExpectCondition("a", "Evicted", "True", "AdmissionCheck",
                  "Evicted due to AdmissionCheck in Retry state: \"prov\"");
  EXPECT_EQ(Get("a").status().requeue_state().count(), 1);
  ASSERT_TRUE(Stopped("a").ok());
  ExpectCondition("a", "Requeued", "False", "AdmissionCheck",
                  "Evicted due to AdmissionCheck in Retry state: \"prov\"");
  EXPECT_EQ(Cycle(), 0);    // backing off (60s by default)
  EXPECT_EQ(Cycle(30), 0);  // halfway
  EXPECT_EQ(Cycle(31), 1);  // over: requeued, then admitted in the same call
  ExpectCondition("a", "Requeued", "True", "BackoffFinished", "The workload backoff was finished");
  EXPECT_EQ(Get("a").status().admission_checks(0).state(), "Pending");
  ASSERT_TRUE(SetCheck("a", "prov", "Ready").ok());
  ExpectCondition("a", "Admitted", "True", "Admitted", "The workload is admitted");
}

TEST_F(LifecycleTest, RejectedDeactivates) {
  Setup(/*with_check=*/true);
  Submit("a");
  ASSERT_EQ(Cycle(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Rejected").ok());
  v1::Workload wl = Get("a");
  EXPECT_FALSE(wl.spec().active());
  ExpectCondition("a", "Evicted", "True", "DeactivatedDueToAdmissionCheck",
                  "The workload is deactivated due to AdmissionCheck in Rejected state: \"prov\"");
  ASSERT_TRUE(Stopped("a").ok());
  EXPECT_EQ(Cycle(3600), 0);
  EXPECT_EQ(Get("a").spec().active(), false);
}

TEST_F(LifecycleTest, DeactivateReleaseActivate) {
  Setup(/*with_check=*/false);
  Submit("a");
  ASSERT_EQ(Cycle(), 1);
  ASSERT_TRUE(SetActive("a", false).ok());
  ASSERT_TRUE(SetActive("a", false).ok());  // idempotent
  ExpectCondition("a", "Evicted", "True", "Deactivated", "The workload is deactivated");
  ASSERT_TRUE(Stopped("a").ok());
  ExpectCondition("a", "Requeued", "False", "Deactivated", "The workload is deactivated");
  ExpectCondition("a", "QuotaReserved", "False", "Deactivated", "The workload is deactivated");
  EXPECT_EQ(Cycle(), 0);
  ASSERT_TRUE(SetActive("a", true).ok());
  ExpectCondition("a", "Requeued", "True", "Reactivated", "The workload was reactivated");
  EXPECT_EQ(Cycle(), 1);
  ExpectCondition("a", "Admitted", "True", "Admitted", "The workload is admitted");
  EXPECT_EQ(SetActive("nope", false).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LifecycleTest, MaximumExecutionTimeExceeded) {
  Setup(/*with_check=*/false);
  Submit("a", /*max_execution_seconds=*/600);
  ASSERT_EQ(Cycle(), 1);
  Cycle(300);
  EXPECT_TRUE(!Get("a").spec().has_active() || Get("a").spec().active());
  Cycle(301);
  EXPECT_FALSE(Get("a").spec().active());
  ExpectCondition("a", "Evicted", "True", "DeactivatedDueToMaximumExecutionTimeExceeded",
                  "The workload is deactivated due to exceeding the maximum execution time");
  ASSERT_TRUE(Stopped("a").ok());
  EXPECT_GE(Get("a").status().accumulated_past_execution_time_seconds(), 601);
}

TEST_F(LifecycleTest, AdvancingTheClockNeedsManualClock) {
  config_.manual_clock = false;
  Start();
  v1::RunSchedulingCyclesResponse resp;
  grpc::Status s = RunCycles(10, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(RunCycles(0, &resp).ok());
}

TEST_F(LifecycleTest, TheSequencerWakesForDeadlinesWithoutManualScheduling) {
  config_.manual_scheduling = false;
  config_.manual_clock = false;
  Start();
  Setup(/*with_check=*/false);
  Submit("a", /*max_execution_seconds=*/1);
  // Only the sequencer's own timer can deactivate it: the test just watches, calling nothing.
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  v1::WatchRequest watch;
  watch.set_since_revision(1);
  watch.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  auto reader = client_->admission->Watch(&ctx, watch);
  v1::WatchEvent event;
  v1::Workload wl;
  while (reader->Read(&event)) {
    if (event.type() == v1::WatchEvent::SYNCED) continue;
    wl = event.workload();
    if (wl.spec().has_active() && !wl.spec().active()) break;
  }
  ctx.TryCancel();
  reader->Finish().IgnoreError();
  EXPECT_FALSE(wl.spec().active());
  ExpectCondition("a", "Evicted", "True", "DeactivatedDueToMaximumExecutionTimeExceeded",
                  "The workload is deactivated due to exceeding the maximum execution time");
}

TEST_F(LifecycleTest, ChecksBackoffAndAdmissionChecksSurviveARestart) {
  Setup(/*with_check=*/true);
  Submit("a");
  Submit("b");
  ASSERT_EQ(Cycle(), 1);  // both fit: one per cycle and queue
  ASSERT_EQ(Cycle(), 1);
  ASSERT_TRUE(SetCheck("a", "prov", "Ready").ok());
  ASSERT_TRUE(SetCheck("b", "prov", "Retry").ok());
  ASSERT_TRUE(Stopped("b").ok());
  const v1::Workload a_before = Get("a");
  const v1::Workload b_before = Get("b");
  Restart();
  {
    grpc::ClientContext ctx;
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_ADMISSION_CHECK);
    req.set_name("prov");
    v1::QueueObject check;
    ASSERT_TRUE(client_->queues->Get(&ctx, req, &check).ok());
    EXPECT_EQ(check.admission_check().spec().controller_name(), "example.com/provisioning");
  }
  v1::Workload a = Get("a");
  EXPECT_EQ(a.status().admission_checks(0).state(), "Ready");
  ExpectCondition("a", "Admitted", "True", "Admitted", "The workload is admitted");
  v1::Workload b = Get("b");
  EXPECT_EQ(b.status().requeue_state().count(), 1);
  EXPECT_EQ(b.status().requeue_state().requeue_at().seconds(),
            b_before.status().requeue_state().requeue_at().seconds());
  // The restarted clock is the real one again: the backoff is still running.
  EXPECT_EQ(Cycle(), 0);
  EXPECT_EQ(Cycle(61), 1);
  ExpectCondition("b", "Requeued", "True", "BackoffFinished", "The workload backoff was finished");
  (void)a_before;
}

}  // namespace
}  // namespace admitd
