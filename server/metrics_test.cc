#include "server/metrics.h"

#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "common/raw_http_client.h"

namespace admitd {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

engine::Change WorkloadChange(const std::string& reason, const std::string& cq,
                              const std::string& evicted_reason = "") {
  auto wl = std::make_shared<v1::Workload>();
  wl->mutable_metadata()->set_namespace_("ns");
  wl->mutable_metadata()->set_name("w");
  wl->mutable_spec()->set_queue_name("lq");
  if (!cq.empty()) wl->mutable_status()->mutable_admission()->set_cluster_queue(cq);
  if (!evicted_reason.empty()) {
    v1::Condition* c = wl->mutable_status()->add_conditions();
    c->set_type(engine::kEvicted);
    c->set_status("True");
    c->set_reason(evicted_reason);
  }
  engine::Change change;
  change.kind = v1::OBJECT_KIND_WORKLOAD;
  change.key = "ns/w";
  change.reason = reason;
  change.workload = wl;
  return change;
}

google::protobuf::Timestamp At(int64_t seconds) {
  google::protobuf::Timestamp t;
  t.set_seconds(seconds);
  return t;
}

void AddCondition(v1::Workload* wl, const char* type, const std::string& reason,
                  int64_t at_seconds, const std::string& message = "") {
  v1::Condition* c = wl->mutable_status()->add_conditions();
  c->set_type(type);
  c->set_status("True");
  c->set_reason(reason);
  c->set_message(message);
  *c->mutable_last_transition_time() = At(at_seconds);
}

v1::ClusterQueue QueueWithStatus(const std::string& name, bool active) {
  v1::ClusterQueue cq;
  cq.mutable_metadata()->set_name(name);
  cq.mutable_spec()->set_cohort_name("all");
  v1::FlavorQuotas* f = cq.mutable_spec()->add_resource_groups()->add_flavors();
  f->set_name("default");
  v1::ResourceQuota* cpu = f->add_resources();
  cpu->set_name("cpu");
  cpu->set_nominal_quota("1500m");
  cpu->set_borrowing_limit("2");
  v1::ResourceQuota* memory = f->add_resources();
  memory->set_name("memory");
  memory->set_nominal_quota("1Gi");
  v1::ClusterQueueStatus* s = cq.mutable_status();
  s->set_pending_active_workloads(3);
  s->set_pending_inadmissible_workloads(1);
  s->set_reserving_workloads(2);
  s->set_admitted_workloads(1);
  v1::Condition* c = s->add_conditions();
  c->set_type("Active");
  c->set_status(active ? "True" : "False");
  v1::FlavorUsage* reserved = s->add_flavors_reservation();
  reserved->set_name("default");
  reserved->add_resources()->set_name("cpu");
  reserved->mutable_resources(0)->set_total("500m");
  v1::FlavorUsage* used = s->add_flavors_usage();
  used->set_name("default");
  used->add_resources()->set_name("cpu");
  used->mutable_resources(0)->set_total("250m");
  return cq;
}

TEST(MetricsTest, ClusterQueueGaugesAreReadAtEachScrapeUnderKueuesNames) {
  Metrics m;
  std::optional<Metrics::EngineState> answer = Metrics::EngineState{
      {QueueWithStatus("a", true), QueueWithStatus("b", false)}, {{"Workload", 12}}};
  int reads = 0;
  m.SetEngineSource([&] {
    ++reads;
    return answer;
  });
  const std::string text = m.Render();
  EXPECT_EQ(reads, 1);
  EXPECT_THAT(text, HasSubstr("# TYPE kueue_pending_workloads gauge\n"));
  EXPECT_THAT(text, HasSubstr("kueue_pending_workloads{cluster_queue=\"a\",status=\"active\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("kueue_pending_workloads{cluster_queue=\"a\",status=\"inadmissible\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kueue_reserving_active_workloads{cluster_queue=\"a\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("kueue_admitted_active_workloads{cluster_queue=\"a\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("admitd_engine_objects{kind=\"Workload\"} 12\n"));
  EXPECT_THAT(text, HasSubstr("kueue_cluster_queue_status{cluster_queue=\"a\",status=\"active\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kueue_cluster_queue_status{cluster_queue=\"b\",status=\"pending\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kueue_cluster_queue_status{cluster_queue=\"b\",status=\"active\"} 0\n"));
  const MetricLabels cpu = {
      {"cohort", "all"}, {"cluster_queue", "a"}, {"flavor", "default"}, {"resource", "cpu"}};
  const MetricLabels memory = {
      {"cohort", "all"}, {"cluster_queue", "a"}, {"flavor", "default"}, {"resource", "memory"}};
  // Base units, as Kueue reports them: cores and bytes.
  EXPECT_EQ(m.Value("kueue_cluster_queue_nominal_quota", cpu), 1.5);
  EXPECT_EQ(m.Value("kueue_cluster_queue_nominal_quota", memory), 1073741824);
  EXPECT_EQ(m.Value("kueue_cluster_queue_borrowing_limit", cpu), 2);
  EXPECT_EQ(m.Value("kueue_cluster_queue_resource_reservation", cpu), 0.5);
  EXPECT_EQ(m.Value("kueue_cluster_queue_resource_usage", cpu), 0.25);
  // No limit set, no series.
  EXPECT_THAT(text, Not(HasSubstr("kueue_cluster_queue_lending_limit{")));
  EXPECT_THAT(text, Not(HasSubstr("kueue_cluster_queue_borrowing_limit{cluster_queue=\"a\",cohort=\"all\",flavor=\"default\",resource=\"memory\"}")));

  // A source that cannot answer leaves the last values; a ClusterQueue that is gone loses its
  // series.
  answer.reset();
  EXPECT_THAT(m.Render(), HasSubstr("cluster_queue=\"b\""));
  answer = Metrics::EngineState{{QueueWithStatus("b", true)}, {}};
  EXPECT_THAT(m.Render(), Not(HasSubstr("cluster_queue=\"a\"")));
}

TEST(MetricsTest, WeightedSharesAreGaugesOnlyWhileFairSharingIsOn) {
  Metrics m;
  std::optional<Metrics::EngineState> answer = Metrics::EngineState{{}, {}, {}};
  m.SetEngineSource([&] { return answer; });
  EXPECT_THAT(m.Render(), Not(HasSubstr("weighted_share")));
  answer = Metrics::EngineState{{},
                                {},
                                {{false, "a", "org", 62.5},
                                 {false, "z", "org", std::numeric_limits<double>::infinity()},
                                 {true, "org", "", std::numeric_limits<double>::infinity()}}};
  const std::string text = m.Render();
  EXPECT_EQ(m.Value("kueue_cluster_queue_weighted_share", {{"cluster_queue", "a"}, {"cohort", "org"}}),
            62.5);
  // A weight-0 queue that borrows is NaN; a cohort's infinity stays as Kueue reports it.
  EXPECT_THAT(text, HasSubstr("kueue_cluster_queue_weighted_share{cluster_queue=\"z\",cohort=\"org\"} Nan\n"));
  EXPECT_THAT(text, HasSubstr("kueue_cohort_weighted_share{cohort=\"org\"} +Inf\n"));
}

TEST(MetricsTest, LocalQueueUsageIsAGaugeOnlyWhileAdmissionFairSharingIsOn) {
  Metrics m;
  std::optional<Metrics::EngineState> answer = Metrics::EngineState{{}, {}, {}, {}};
  m.SetEngineSource([&] { return answer; });
  EXPECT_THAT(m.Render(), Not(HasSubstr("admission_fair_sharing_usage")));
  answer = Metrics::EngineState{{}, {}, {}, {{"ns", "lq-a", "cq1", 6.5}}};
  m.Render();
  EXPECT_EQ(m.Value("kueue_local_queue_admission_fair_sharing_usage",
                    {{"name", "lq-a"}, {"namespace", "ns"}, {"cluster_queue", "cq1"}}),
            6.5);
}

TEST(MetricsTest, CountsCommittedChangesUnderKueuesNames) {
  Metrics m;
  m.CountChanges({WorkloadChange("Admitted", "cq"), WorkloadChange("Admitted", "cq"),
                  WorkloadChange("Evicted", "cq", "Preempted"),
                  WorkloadChange("Evicted", "cq", "DeactivatedDueToRequeuingLimitExceeded"),
                  WorkloadChange("WorkloadSliceReplaced", "cq"),
                  WorkloadChange("SliceCreated", ""), WorkloadChange("Finished", "cq")});
  EXPECT_EQ(m.Value("kueue_admitted_workloads_total", {{"cluster_queue", "cq"}}), 2);
  EXPECT_EQ(m.Value("kueue_evicted_workloads_total",
                    {{"cluster_queue", "cq"}, {"reason", "Preempted"}, {"underlying_cause", ""}}),
            1);
  EXPECT_EQ(m.Value("kueue_evicted_workloads_total", {{"cluster_queue", "cq"},
                                                      {"reason", "Deactivated"},
                                                      {"underlying_cause", "RequeuingLimitExceeded"}}),
            1);
  EXPECT_EQ(m.Value("kueue_replaced_workload_slices_total", {{"cluster_queue", "cq"}}), 1);
  EXPECT_EQ(m.Value("kueue_finished_workloads_total", {{"cluster_queue", "cq"}}), 1);
  EXPECT_EQ(m.Value("admitd_workload_slices_created_total", {{"local_queue", "ns/lq"}}), 1);
  EXPECT_EQ(m.Value("admitd_workload_changes_total", {{"reason", "Admitted"}}), 2);
}

TEST(MetricsTest, AFinishedWorkloadsExecutionTimeCountsEveryAdmission) {
  Metrics m;
  // Admitted at 100 s, finished at 160 s, after 40 s in earlier admissions: 100 s.
  engine::Change ran = WorkloadChange("Finished", "cq");
  auto wl = std::make_shared<v1::Workload>(*ran.workload);
  AddCondition(wl.get(), engine::kAdmitted, "Admitted", 100);
  AddCondition(wl.get(), engine::kFinished, "Succeeded", 160);
  wl->mutable_status()->set_accumulated_past_execution_time_seconds(40);
  ran.workload = wl;
  // Finished without being admitted (deleted while pending): no execution time.
  engine::Change never = WorkloadChange("Finished", "cq");
  auto pending = std::make_shared<v1::Workload>(*never.workload);
  AddCondition(pending.get(), engine::kFinished, "Failed", 50);
  never.workload = pending;
  m.CountChanges({ran, never});
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("kueue_execution_time_seconds_count{cluster_queue=\"cq\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kueue_execution_time_seconds_sum{cluster_queue=\"cq\"} 100\n"));
  // Kueue's buckets: 1 s, then 2.5 s doubling.
  EXPECT_THAT(text,
              HasSubstr("kueue_execution_time_seconds_bucket{cluster_queue=\"cq\",le=\"80\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("kueue_execution_time_seconds_bucket{cluster_queue=\"cq\",le=\"160\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kueue_execution_time_seconds_bucket{cluster_queue=\"cq\",le=\"40960\"} 1\n"));
  EXPECT_EQ(m.Value("kueue_finished_workloads_total", {{"cluster_queue", "cq"}}), 2);
}

TEST(MetricsTest, AWorkloadsFirstEvictionOfAKindIsCountedOnce) {
  // The workload's scheduling stats after each eviction, as the engine keeps them.
  auto evicted = [](const std::string& condition_reason, int preempted, int requeuing_limit) {
    engine::Change c = WorkloadChange("Evicted", "cq", condition_reason);
    auto wl = std::make_shared<v1::Workload>(*c.workload);
    v1::SchedulingStats* stats = wl->mutable_status()->mutable_scheduling_stats();
    if (preempted > 0) {
      v1::WorkloadSchedulingStatsEviction* e = stats->add_evictions();
      e->set_reason("Preempted");
      e->set_count(preempted);
    }
    if (requeuing_limit > 0) {
      v1::WorkloadSchedulingStatsEviction* e = stats->add_evictions();
      e->set_reason("Deactivated");
      e->set_underlying_cause("RequeuingLimitExceeded");
      e->set_count(requeuing_limit);
    }
    c.workload = wl;
    return c;
  };
  Metrics m;
  m.CountChanges({evicted("Preempted", 1, 0)});
  m.CountChanges({evicted("Preempted", 2, 0)});
  m.CountChanges({evicted("DeactivatedDueToRequeuingLimitExceeded", 2, 1)});
  const MetricLabels preempted = {
      {"cluster_queue", "cq"}, {"reason", "Preempted"}, {"underlying_cause", ""}};
  EXPECT_EQ(m.Value("kueue_evicted_workloads_total", preempted), 2);
  EXPECT_EQ(m.Value("kueue_evicted_workloads_once_total", preempted), 1);
  EXPECT_EQ(m.Value("kueue_evicted_workloads_once_total",
                    {{"cluster_queue", "cq"},
                     {"reason", "Deactivated"},
                     {"underlying_cause", "RequeuingLimitExceeded"}}),
            1);
}

TEST(MetricsTest, WaitTimesRunFromCreationOrTheLastRequeue) {
  // Created at 100, reserved and admitted together at 130: one reservation, waits of 30 s.
  engine::Change direct = WorkloadChange("Admitted", "cq");
  auto wl = std::make_shared<v1::Workload>(*direct.workload);
  *wl->mutable_metadata()->mutable_creation_timestamp() = At(100);
  AddCondition(wl.get(), engine::kQuotaReserved, "QuotaReserved", 130);
  AddCondition(wl.get(), engine::kAdmitted, "Admitted", 130);
  direct.workload = wl;
  // Requeued at 200, reserved at 203, admitted by its checks at 210 (in a later batch).
  engine::Change reserved = WorkloadChange("QuotaReserved", "cq");
  auto wl2 = std::make_shared<v1::Workload>(*reserved.workload);
  wl2->mutable_metadata()->set_name("w2");
  *wl2->mutable_metadata()->mutable_creation_timestamp() = At(100);
  AddCondition(wl2.get(), engine::kRequeued, "Preempted", 200);
  AddCondition(wl2.get(), engine::kQuotaReserved, "QuotaReserved", 203);
  reserved.key = "ns/w2";
  reserved.workload = wl2;
  Metrics m;
  m.CountChanges({direct, reserved});
  auto wl3 = std::make_shared<v1::Workload>(*wl2);
  AddCondition(wl3.get(), engine::kAdmitted, "Admitted", 210);
  engine::Change admitted = reserved;
  admitted.reason = "Admitted";
  admitted.workload = wl3;
  m.CountChanges({admitted});

  EXPECT_EQ(m.Value("kueue_quota_reserved_workloads_total", {{"cluster_queue", "cq"}}), 2);
  EXPECT_EQ(m.Value("kueue_admitted_workloads_total", {{"cluster_queue", "cq"}}), 2);
  const std::string text = m.Render();
  // Reservation waits: 30 s and 3 s; admission waits 30 s and 10 s; checks 0 s and 7 s.
  EXPECT_THAT(text, HasSubstr("kueue_quota_reserved_wait_time_seconds_sum{cluster_queue=\"cq\"} 33\n"));
  EXPECT_THAT(text, HasSubstr("kueue_quota_reserved_wait_time_seconds_count{cluster_queue=\"cq\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("kueue_admission_wait_time_seconds_sum{cluster_queue=\"cq\"} 40\n"));
  EXPECT_THAT(text, HasSubstr("kueue_admission_checks_wait_time_seconds_sum{cluster_queue=\"cq\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("kueue_admission_wait_time_seconds_bucket{cluster_queue=\"cq\",le=\"20\"} 1\n"));
}

TEST(MetricsTest, PreemptionsCountUnderThePreemptingClusterQueue) {
  engine::Change evicted = WorkloadChange("Evicted", "victim-cq", "Preempted");
  auto wl = std::make_shared<v1::Workload>(*evicted.workload);
  AddCondition(wl.get(), engine::kPreempted, "InCohortReclamation", 5,
               "Preempted to accommodate a workload (UID: u, JobUID: UNKNOWN) due to reclamation "
               "within the cohort; preemptor path: /root/team/cq-a; preemptee path: /root/victim-cq");
  evicted.workload = wl;
  Metrics m;
  m.CountChanges({evicted});
  EXPECT_EQ(m.Value("kueue_preempted_workloads_total",
                    {{"preempting_cluster_queue", "cq-a"}, {"reason", "InCohortReclamation"}}),
            1);
}

TEST(MetricsTest, AdmissionAttemptsCountByResult) {
  Metrics m;
  m.CountAdmissionAttempt(true, absl::Milliseconds(2));
  m.CountAdmissionAttempt(false, absl::Microseconds(30));
  m.CountAdmissionAttempt(false, absl::Microseconds(40));
  EXPECT_EQ(m.Value("kueue_admission_attempts_total", {{"result", "success"}}), 1);
  EXPECT_EQ(m.Value("kueue_admission_attempts_total", {{"result", "inadmissible"}}), 2);
  EXPECT_EQ(m.Value("kueue_admission_attempt_duration_seconds", {{"result", "inadmissible"}}), 2);
  EXPECT_THAT(m.Render(), HasSubstr("kueue_admission_attempt_duration_seconds_bucket{result=\"inadmissible\",le=\"5e-05\"} 2\n"));
}

TEST(MetricsTest, CyclePreemptionSkipsAndRecomputations) {
  Metrics m;
  engine::CycleStats first;
  first.preemption_skips = {{"cq-a", 2}, {"cq-b", 1}};
  first.recomputations = {{"cq-a", "new_targets"}, {"cq-a", "new_targets"}, {"cq-b", "skipped"}};
  m.CountCyclePreemptions(first);
  engine::CycleStats second;
  second.preemption_skips = {{"cq-b", 3}};
  second.recomputations = {{"cq-a", "deferred_fit"}};
  m.CountCyclePreemptions(second);
  // The gauge holds each queue's count from the last cycle that skipped something there.
  EXPECT_EQ(m.Value("kueue_admission_cycle_preemption_skips", {{"cluster_queue", "cq-a"}}), 2);
  EXPECT_EQ(m.Value("kueue_admission_cycle_preemption_skips", {{"cluster_queue", "cq-b"}}), 3);
  EXPECT_EQ(m.Value("kueue_preemption_target_recomputations_total",
                    {{"cluster_queue", "cq-a"}, {"result", "new_targets"}}),
            2);
  EXPECT_EQ(m.Value("kueue_preemption_target_recomputations_total",
                    {{"cluster_queue", "cq-a"}, {"result", "deferred_fit"}}),
            1);
  EXPECT_EQ(m.Value("kueue_preemption_target_recomputations_total",
                    {{"cluster_queue", "cq-b"}, {"result", "skipped"}}),
            1);
  EXPECT_THAT(m.Render(), HasSubstr("# TYPE kueue_admission_cycle_preemption_skips gauge\n"));
}

TEST(MetricsTest, CountsGatedAndUngatedPods) {
  auto pod = std::make_shared<v1::PodObservation>();
  pod->set_cluster("c1");
  engine::Change gated;
  gated.kind = v1::OBJECT_KIND_POD;
  gated.reason = "PodGated";
  gated.pod = pod;
  engine::Change ungated = gated;
  ungated.reason = "PodUngated";
  engine::Change other = gated;
  other.reason = "PodReported";
  Metrics m;
  m.CountChanges({gated, gated, ungated, other});
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", "c1"}}), 2);
  EXPECT_EQ(m.Value("admitd_pods_ungated_total", {{"cluster", "c1"}}), 1);
}

TEST(MetricsTest, RendersPrometheusText) {
  Metrics m;
  m.Add("b_total", "B things.", {{"q", "x\"y"}}, 2);
  m.Set("a_gauge", "A level.", {}, 1.5);
  EXPECT_EQ(m.Render(),
            "# HELP a_gauge A level.\n# TYPE a_gauge gauge\na_gauge 1.5\n"
            "# HELP b_total B things.\n# TYPE b_total counter\nb_total{q=\"x\\\"y\"} 2\n");
}

TEST(MetricsTest, ClusterLabelValuesAreCapped) {
  Metrics m;
  const auto report = [&m](const std::string& cluster) {
    m.Add("admitd_pods_gated_total", "Pods gated.", {{"cluster", cluster}});
  };
  for (int i = 0; i < Metrics::kMaxClusterLabelValues + 500; ++i) {
    report(absl::StrCat("cluster-", i));
  }
  report(std::string(4096, 'c'));       // longer than a DNS-1123 subdomain
  report("Not A Valid Name");           // not one at all
  report(Metrics::kOtherClusterLabel);  // cannot pose as the overflow value either
  report("cluster-0");                  // a cluster within the cap keeps its own series

  const std::string text = m.Render();
  int series = 0;
  for (size_t at = 0; (at = text.find("admitd_pods_gated_total{", at)) != std::string::npos; ++at) {
    ++series;
  }
  EXPECT_EQ(series, Metrics::kMaxClusterLabelValues + 1);
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", "cluster-0"}}), 2);
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", "cluster-999"}}), 1);
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", "cluster-1000"}}), 0);
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", Metrics::kOtherClusterLabel}}),
            500 + 3);
  EXPECT_THAT(text, Not(HasSubstr("cccccccc")));
  EXPECT_LT(text.size(), 100u << 10);
}

TEST(MetricsTest, PodChangesCountUnderBoundedClusterLabels) {
  auto pod = std::make_shared<v1::PodObservation>();
  pod->set_cluster(std::string(300, 'x'));
  engine::Change gated;
  gated.kind = v1::OBJECT_KIND_POD;
  gated.reason = "PodGated";
  gated.pod = pod;
  Metrics m;
  m.CountChanges({gated});
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", Metrics::kOtherClusterLabel}}), 1);
}

// A few series with long label values: a /metrics body far larger than the kernel's socket
// buffers, so a client that does not read leaves the server's write of it unfinished.
void AddLargeSeries(Metrics* m) {
  for (int i = 0; i < 32; ++i) {
    m->Add("admitd_test_padding_total", "Padding.",
           {{"q", absl::StrCat(i, std::string(512 << 10, 'p'))}});
  }
}

// A client that asks for /metrics and then never reads: it must hold nothing but its own
// connection. Returns once the request is sent.
std::unique_ptr<RawHttpClient> StuckMetricsReader(int port) {
  auto client = std::make_unique<RawHttpClient>(port, /*receive_buffer=*/4096);
  EXPECT_TRUE(client->connected());
  client->Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  return client;
}

// A client that sends half a request line and then nothing.
std::unique_ptr<RawHttpClient> SlowHeaderClient(int port) {
  auto client = std::make_unique<RawHttpClient>(port);
  EXPECT_TRUE(client->connected());
  client->Send("GET /hea");
  return client;
}

// Timeouts far longer than any test waits, so what a test sees is not a timeout expiring.
HttpEndpointOptions PatientOptions() {
  HttpEndpointOptions options;
  options.read_timeout = absl::Seconds(60);
  options.write_timeout = absl::Seconds(60);
  options.keep_alive_timeout = absl::Seconds(60);
  return options;
}

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.Add("kueue_admitted_workloads_total", "Workloads admitted.", {{"cluster_queue", "cq"}}, 3);
    auto endpoint = StartMetricsEndpoint(
        "127.0.0.1:0", &m_, [this] { return ready_ ? absl::OkStatus() : absl::UnavailableError("the disk is full"); }, PatientOptions());
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoint_ = *std::move(endpoint);
    port_ = endpoint_->port();
  }

  Metrics m_;
  std::atomic<bool> ready_{true};
  std::unique_ptr<HttpEndpoint> endpoint_;
  int port_ = 0;
};

TEST_F(MetricsEndpointTest, ServesMetricsAndHealth) {
  const std::string metrics = HttpRequest(port_, "GET", "/metrics");
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  EXPECT_THAT(metrics, HasSubstr("kueue_admitted_workloads_total{cluster_queue=\"cq\"} 3\n"));
  const std::string health = HttpRequest(port_, "GET", "/healthz");
  EXPECT_THAT(health, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(health, EndsWith("\r\n\r\nok\n"));
}

TEST_F(MetricsEndpointTest, ReadyzFollowsReadiness) {
  EXPECT_THAT(HttpRequest(port_, "GET", "/readyz"), StartsWith("HTTP/1.1 200 OK\r\n"));
  ready_ = false;
  const std::string not_ready = HttpRequest(port_, "GET", "/readyz");
  EXPECT_THAT(not_ready, StartsWith("HTTP/1.1 503 "));
  EXPECT_THAT(not_ready, EndsWith("the disk is full\n"));
  EXPECT_THAT(HttpRequest(port_, "GET", "/healthz"), StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(MetricsEndpointTest, OnlyExactPathsAnswer) {
  for (const char* path : {"/metricsXYZ", "/metrics/x", "/healthzz", "/readyz2", "/", "/nope"}) {
    EXPECT_THAT(HttpRequest(port_, "GET", path), StartsWith("HTTP/1.1 404 ")) << path;
  }
}

TEST_F(MetricsEndpointTest, OtherMethodsAreRefused) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    const std::string response = HttpRequest(port_, method, "/metrics");
    EXPECT_THAT(response, StartsWith("HTTP/1.1 405 ")) << method;
    EXPECT_THAT(response, HasSubstr("Allow: GET, HEAD\r\n")) << method;
  }
  const std::string head = HttpRequest(port_, "HEAD", "/healthz");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, EndsWith("\r\n\r\n"));  // no body
}

TEST_F(MetricsEndpointTest, ClientThatNeverReadsDoesNotBlockHealthz) {
  AddLargeSeries(&m_);
  auto stuck = StuckMetricsReader(port_);
  const absl::Time start = absl::Now();
  EXPECT_THAT(HttpRequest(port_, "GET", "/healthz", absl::Seconds(3)),
              StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(MetricsEndpointTest, SlowHeaderClientsDoNotDelayHealthz) {
  auto slow1 = SlowHeaderClient(port_);
  auto slow2 = SlowHeaderClient(port_);
  const absl::Time start = absl::Now();
  EXPECT_THAT(HttpRequest(port_, "GET", "/healthz", absl::Seconds(5)),
              StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(750));
}

TEST_F(MetricsEndpointTest, StopIsPromptWithStuckClients) {
  AddLargeSeries(&m_);
  auto stuck = StuckMetricsReader(port_);
  auto slow = SlowHeaderClient(port_);
  auto idle = std::make_unique<RawHttpClient>(port_);  // connects, sends nothing
  // Wait until the stuck reader's response is under way, so Stop() meets a blocked write.
  std::string first;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (first.find("\r\n\r\n") == std::string::npos && absl::Now() < deadline) {
    first += stuck->ReadResponse(absl::Milliseconds(50));
  }
  ASSERT_THAT(first, StartsWith("HTTP/1.1 200 OK\r\n"));

  absl::Notification stopped;
  std::thread stopper([this, &stopped] {
    endpoint_->Stop();
    stopped.Notify();
  });
  const bool in_time = stopped.WaitForNotificationWithTimeout(absl::Seconds(2));
  EXPECT_TRUE(in_time) << "Stop() is still waiting for stuck clients";
  if (in_time) {
    stopper.join();
    // The stuck reader's connection was closed: the rest of what it now reads ends.
    EXPECT_LT(stuck->ReadUntilClosed(absl::Seconds(5)).size(), 32u * (512u << 10));
  } else {
    stopper.detach();           // still blocked; let the process end with it
    (void)endpoint_.release();  // ...and the endpoint it uses
  }
}

TEST(MetricsEndpointStartTest, BadAddressIsAnError) {
  Metrics m;
  const auto ready = [] { return absl::OkStatus(); };
  EXPECT_EQ(StartMetricsEndpoint("no-port", &m, ready).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StartMetricsEndpoint("127.0.0.1:http", &m, ready).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace admitd
