// The public API end to end, in process: a real AdmitdServer on port 0 with its RocksDB store in
// a temporary directory, called through generated gRPC stubs.
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"
#include "common/raw_http_client.h"

namespace admitd {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class ApiTest : public testing::InProcessTest {
 protected:
  void StartServer(bool manual = false, uint64_t retention = 100000) {
    config_.manual_scheduling = manual;
    config_.event_retention = retention;
    Start();
  }
  void SetUpQueues(const std::string& cpu = "10") {
    Apply(testing::Flavor("default"));
    Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", cpu}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
  grpc::Status Submit(const v1::Workload& wl, v1::SubmitResponse* resp) {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    return client_->admission->Submit(&ctx, req, resp);
  }
  v1::AdmitResponse Admit(const std::string& name, bool wait = false,
                          absl::Duration timeout = absl::Seconds(10)) {
    grpc::ClientContext ctx;
    v1::AdmitRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.set_wait(wait);
    req.mutable_timeout()->set_seconds(absl::ToInt64Seconds(timeout));
    v1::AdmitResponse resp;
    grpc::Status s = client_->admission->Admit(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  v1::ListWorkloadsResponse ListAll() {
    grpc::ClientContext ctx;
    v1::ListWorkloadsRequest req;
    v1::ListWorkloadsResponse resp;
    grpc::Status s = client_->admission->List(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  v1::ClusterQueue GetCq(const std::string& name) {
    grpc::ClientContext ctx;
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    req.set_name(name);
    v1::QueueObject obj;
    grpc::Status s = client_->queues->Get(&ctx, req, &obj);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return obj.cluster_queue();
  }
  // The CPU the ClusterQueue has reserved, as reported in its status.
  std::string ReservedCpu(const std::string& cq) {
    const v1::ClusterQueue object = GetCq(cq);
    for (const auto& fu : object.status().flavors_reservation()) {
      for (const auto& r : fu.resources()) {
        if (r.name() == "cpu") return r.total();
      }
    }
    return "";
  }
};

TEST_F(ApiTest, SubmitIsAdmittedInTheSameCommitAndReleaseGivesQuotaBack) {
  StartServer();
  SetUpQueues();
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "job-a", "lq", 3, {{"cpu", "1"}}), &resp).ok());
  EXPECT_TRUE(resp.created());
  const v1::Workload& wl = resp.workload();
  EXPECT_FALSE(wl.metadata().uid().empty());
  EXPECT_GT(wl.metadata().resource_version(), 0u);
  ASSERT_EQ(wl.status().admission().cluster_queue(), "cq");
  ASSERT_EQ(wl.status().admission().pod_set_assignments_size(), 1);
  EXPECT_EQ(wl.status().admission().pod_set_assignments(0).flavors().at("cpu"), "default");
  EXPECT_EQ(wl.status().admission().pod_set_assignments(0).resource_usage().at("cpu"), "3");
  EXPECT_EQ(wl.status().admission().pod_set_assignments(0).count(), 3);
  EXPECT_EQ(ReservedCpu("cq"), "3");

  v1::AdmitResponse admit = Admit("job-a");
  EXPECT_TRUE(admit.admitted());
  EXPECT_EQ(admit.state(), v1::WORKLOAD_STATE_ADMITTED);

  grpc::ClientContext ctx;
  v1::ReleaseQuotaRequest release;
  release.set_namespace_("ns");
  release.set_name("job-a");
  release.mutable_finished()->set_succeeded(true);
  v1::ReleaseQuotaResponse released;
  grpc::Status s = client_->admission->ReleaseQuota(&ctx, release, &released);
  ASSERT_TRUE(s.ok()) << s.error_message();
  bool finished = false;
  for (const auto& c : released.workload().status().conditions()) {
    if (c.type() == "Finished") {
      finished = c.status() == "True" && c.reason() == "Succeeded";
    }
  }
  EXPECT_TRUE(finished);
  EXPECT_EQ(ReservedCpu("cq"), "0");
}

TEST_F(ApiTest, SubmitIsIdempotentForTheSameUid) {
  StartServer();
  SetUpQueues();
  v1::Workload wl = testing::Workload("ns", "job-a", "lq", 1, {{"cpu", "1"}});
  wl.mutable_metadata()->set_uid("uid-1");
  v1::SubmitResponse first, second, third;
  ASSERT_TRUE(Submit(wl, &first).ok());
  ASSERT_TRUE(Submit(wl, &second).ok());
  EXPECT_TRUE(first.created());
  EXPECT_FALSE(second.created());
  EXPECT_EQ(second.workload().metadata().resource_version(),
            first.workload().metadata().resource_version());
  wl.mutable_metadata()->set_uid("uid-2");
  grpc::Status s = Submit(wl, &third);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(ListAll().workloads_size(), 1);
}

TEST_F(ApiTest, PendingWorkloadSaysWhyAndAdmitWaitReturnsWhenQuotaFrees) {
  StartServer();
  SetUpQueues("4");
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "big-1", "lq", 3, {{"cpu", "1"}}), &resp).ok());
  ASSERT_TRUE(Submit(testing::Workload("ns", "big-2", "lq", 3, {{"cpu", "1"}}), &resp).ok());
  v1::AdmitResponse pending = Admit("big-2");
  EXPECT_FALSE(pending.admitted());
  EXPECT_EQ(pending.state(), v1::WORKLOAD_STATE_PENDING);
  EXPECT_FALSE(pending.pending_reason().empty());
  EXPECT_THAT(pending.pending_message(), HasSubstr("cpu"));

  v1::AdmitResponse waited;
  std::thread waiter([&] { waited = Admit("big-2", /*wait=*/true, absl::Seconds(20)); });
  // Release big-1 while the waiter blocks; big-2 then fits.
  grpc::ClientContext ctx;
  v1::ReleaseQuotaRequest release;
  release.set_namespace_("ns");
  release.set_name("big-1");
  release.mutable_finished()->set_succeeded(false);
  v1::ReleaseQuotaResponse released;
  ASSERT_TRUE(client_->admission->ReleaseQuota(&ctx, release, &released).ok());
  waiter.join();
  EXPECT_TRUE(waited.admitted());
  EXPECT_EQ(waited.workload().status().admission().cluster_queue(), "cq");
  EXPECT_EQ(ReservedCpu("cq"), "3");
}

TEST_F(ApiTest, AdmitWaitTimesOutWithThePendingState) {
  StartServer();
  SetUpQueues("1");
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "too-big", "lq", 2, {{"cpu", "1"}}), &resp).ok());
  v1::AdmitResponse waited = Admit("too-big", /*wait=*/true, absl::Seconds(1));
  EXPECT_FALSE(waited.admitted());
  EXPECT_EQ(waited.state(), v1::WORKLOAD_STATE_PENDING);
}

TEST_F(ApiTest, ManualSchedulingAdmitsOnlyWhenCyclesRun) {
  StartServer(/*manual=*/true);
  SetUpQueues();
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "job-a", "lq", 1, {{"cpu", "1"}}), &resp).ok());
  EXPECT_FALSE(resp.workload().status().has_admission());
  EXPECT_FALSE(Admit("job-a").admitted());
  grpc::ClientContext ctx;
  v1::RunSchedulingCyclesRequest req;
  req.set_count(1);
  v1::RunSchedulingCyclesResponse cycles;
  ASSERT_TRUE(client_->queues->RunSchedulingCycles(&ctx, req, &cycles).ok());
  EXPECT_EQ(cycles.cycles_run(), 1);
  EXPECT_EQ(cycles.admitted(), 1);
  EXPECT_TRUE(Admit("job-a").admitted());
}

struct BadSubmit {
  std::string name;
  std::function<void(v1::Workload*)> mutate;
  grpc::StatusCode code;
  std::string field;  // a violation must name this field
};

TEST_F(ApiTest, BadSubmitsAreRefusedWithTheFieldAndChangeNothing) {
  StartServer();
  SetUpQueues();
  const std::vector<BadSubmit> cases = {
      {"invalid quantity",
       [](v1::Workload* w) {
         (*w->mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec()
               ->mutable_containers(0)->mutable_resources()->mutable_requests())["cpu"] = "lots";
       },
       grpc::StatusCode::INVALID_ARGUMENT, "spec.podSets[0]"},
      {"negative count", [](v1::Workload* w) { w->mutable_spec()->mutable_pod_sets(0)->set_count(-1); },
       grpc::StatusCode::INVALID_ARGUMENT, "spec.podSets[0].count"},
      {"name too long",
       [](v1::Workload* w) { w->mutable_metadata()->set_name(std::string(254, 'a')); },
       grpc::StatusCode::INVALID_ARGUMENT, "metadata.name"},
      {"too many pod sets",
       [](v1::Workload* w) {
         for (int i = 1; i < 19; ++i) {
           v1::PodSet* ps = w->mutable_spec()->add_pod_sets();
           *ps = w->spec().pod_sets(0);
           ps->set_name(absl::StrCat("ps-", i));
         }
       },
       grpc::StatusCode::INVALID_ARGUMENT, "spec.podSets"},
      {"duplicate pod set names",
       [](v1::Workload* w) { *w->mutable_spec()->add_pod_sets() = w->spec().pod_sets(0); },
       grpc::StatusCode::INVALID_ARGUMENT, "spec.podSets[1].name"},
  };
  const uint64_t revision_before = ListAll().revision();
  for (const BadSubmit& c : cases) {
    SCOPED_TRACE(c.name);
    v1::Workload wl = testing::Workload("ns", "bad", "lq", 1, {{"cpu", "1"}});
    c.mutate(&wl);
    v1::SubmitResponse resp;
    grpc::Status s = Submit(wl, &resp);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    bool named = false;
    for (const std::string& v : testing::FieldViolations(s)) named = named || v.find(c.field) == 0;
    EXPECT_TRUE(named) << "violations do not name " << c.field << ": " << s.error_message();
  }
  v1::ListWorkloadsResponse after = ListAll();
  EXPECT_EQ(after.workloads_size(), 0);
  EXPECT_EQ(after.revision(), revision_before);
}

TEST_F(ApiTest, BadQueueObjectsAreRefusedWithTheField) {
  StartServer();
  v1::ApplyRequest cq = testing::ClusterQueue("cq", {"default"}, {{"cpu", "-1"}});
  grpc::ClientContext ctx;
  v1::ApplyResponse resp;
  grpc::Status s = client_->queues->Apply(&ctx, cq, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(s),
              Contains(HasSubstr("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota")));
  grpc::ClientContext ctx2;
  v1::ApplyRequest empty;
  s = client_->queues->Apply(&ctx2, empty, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(s), Contains(HasSubstr("object")));
}

TEST_F(ApiTest, StateSurvivesARestart) {
  StartServer();
  SetUpQueues("4");
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "a", "lq", 3, {{"cpu", "1"}}), &resp).ok());
  ASSERT_TRUE(Submit(testing::Workload("ns", "b", "lq", 3, {{"cpu", "1"}}), &resp).ok());
  v1::ListWorkloadsResponse before = ListAll();
  Restart();
  v1::ListWorkloadsResponse after = ListAll();
  ASSERT_EQ(after.workloads_size(), before.workloads_size());
  for (int i = 0; i < after.workloads_size(); ++i) {
    EXPECT_EQ(after.workloads(i).SerializeAsString(), before.workloads(i).SerializeAsString());
  }
  EXPECT_EQ(after.revision(), before.revision());
  EXPECT_EQ(ReservedCpu("cq"), "3");
  EXPECT_TRUE(Admit("a").admitted());
  EXPECT_FALSE(Admit("b").admitted());
}

TEST_F(ApiTest, WatchReplaysThenStreamsLive) {
  StartServer();
  SetUpQueues();
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "a", "lq", 1, {{"cpu", "1"}}), &resp).ok());
  const uint64_t after_a = resp.workload().metadata().resource_version();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::WatchRequest req;
  req.set_since_revision(1);  // replay everything after the flavor
  req.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  auto reader = client_->admission->Watch(&ctx, req);
  // Replay: a's events (submitted, admitted), then SYNCED.
  std::vector<v1::WatchEvent> replay;
  v1::WatchEvent event;
  while (reader->Read(&event) && event.type() != v1::WatchEvent::SYNCED) replay.push_back(event);
  ASSERT_EQ(event.type(), v1::WatchEvent::SYNCED);
  ASSERT_FALSE(replay.empty());
  EXPECT_EQ(replay.front().type(), v1::WatchEvent::ADDED);
  EXPECT_EQ(replay.front().workload().metadata().name(), "a");
  EXPECT_GE(event.revision(), after_a);
  for (size_t i = 1; i < replay.size(); ++i) {
    EXPECT_GT(replay[i].revision(), replay[i - 1].revision());
  }
  // Live: b is submitted and admitted.
  ASSERT_TRUE(Submit(testing::Workload("ns", "b", "lq", 1, {{"cpu", "1"}}), &resp).ok());
  bool admitted = false;
  while (!admitted && reader->Read(&event)) {
    EXPECT_EQ(event.workload().metadata().name(), "b");
    admitted = event.workload().status().has_admission();
  }
  EXPECT_TRUE(admitted);
  ctx.TryCancel();
  reader->Finish();
}

TEST_F(ApiTest, WatchFromACompactedRevisionIsOutOfRange) {
  StartServer(/*manual=*/false, /*retention=*/10);
  SetUpQueues("1000");
  v1::SubmitResponse resp;
  for (int i = 0; i < 150; ++i) {
    ASSERT_TRUE(Submit(testing::Workload("ns", absl::StrCat("w", i), "lq", 1, {{"cpu", "1"}}),
                       &resp).ok());
  }
  grpc::ClientContext ctx;
  v1::WatchRequest req;
  req.set_since_revision(1);
  auto reader = client_->admission->Watch(&ctx, req);
  v1::WatchEvent event;
  while (reader->Read(&event)) {
  }
  grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::OUT_OF_RANGE) << s.error_message();
}

TEST_F(ApiTest, HealthIsServing) {
  StartServer();
  auto health = grpc::health::v1::Health::NewStub(client_->channel);
  for (const char* service : {"", "admitd.v1.AdmissionService", "admitd.v1.QueueService"}) {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    ASSERT_TRUE(health->Check(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(ApiTest, MetricsEndpointCountsAndStopsPromptlyOnShutdown) {
  config_.metrics_listen = "127.0.0.1:0";
  StartServer();
  SetUpQueues();
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "job-a", "lq", 1, {{"cpu", "1"}}), &resp).ok());
  const int port = server_->metrics_port();
  ASSERT_GT(port, 0);
  EXPECT_THAT(HttpRequest(port, "GET", "/metrics"),
              HasSubstr("kueue_admitted_workloads_total{cluster_queue=\"cq\"} 1\n"));
  // A workload larger than the queue is tried and set aside: Kueue's pending gauge says so.
  ASSERT_TRUE(Submit(testing::Workload("ns", "job-big", "lq", 1, {{"cpu", "20"}}), &resp).ok());
  const std::string metrics = HttpRequest(port, "GET", "/metrics");
  EXPECT_THAT(metrics, HasSubstr("kueue_pending_workloads{cluster_queue=\"cq\",status=\"active\"} 0\n"));
  EXPECT_THAT(metrics,
              HasSubstr("kueue_pending_workloads{cluster_queue=\"cq\",status=\"inadmissible\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("kueue_reserving_active_workloads{cluster_queue=\"cq\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("kueue_admission_attempts_total{result=\"success\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("admitd_store_commit_seconds_count "));
  EXPECT_THAT(HttpRequest(port, "GET", "/healthz"), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(HttpRequest(port, "GET", "/readyz"), StartsWith("HTTP/1.1 200 OK\r\n"));

  // A client stuck halfway through its request line does not hold up SIGTERM's shutdown.
  RawHttpClient stuck(port);
  ASSERT_TRUE(stuck.Send("GET /metr"));
  const absl::Time start = absl::Now();
  server_->Shutdown(absl::Seconds(2));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(stuck.ReadUntilClosed(absl::Seconds(2)), "");
  EXPECT_EQ(HttpRequest(port, "GET", "/readyz"), "");  // no longer listening
}

TEST_F(ApiTest, CyclesRunOnRequestAreCountedAsAdmissionAttempts) {
  config_.metrics_listen = "127.0.0.1:0";
  StartServer(/*manual=*/true);
  SetUpQueues();
  v1::SubmitResponse resp;
  ASSERT_TRUE(Submit(testing::Workload("ns", "job-a", "lq", 1, {{"cpu", "1"}}), &resp).ok());
  const int port = server_->metrics_port();
  EXPECT_THAT(HttpRequest(port, "GET", "/metrics"),
              Not(HasSubstr("kueue_admission_attempts_total{")));  // nothing ran yet
  auto run_cycles = [&](int count) {
    grpc::ClientContext ctx;
    v1::RunSchedulingCyclesRequest req;
    req.set_count(count);
    v1::RunSchedulingCyclesResponse cycles;
    ASSERT_TRUE(client_->queues->RunSchedulingCycles(&ctx, req, &cycles).ok());
  };
  run_cycles(1);
  // A second request finds nothing to try: a cycle without heads is no attempt.
  run_cycles(3);
  const std::string metrics = HttpRequest(port, "GET", "/metrics");
  EXPECT_THAT(metrics, HasSubstr("kueue_admission_attempts_total{result=\"success\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("kueue_admitted_workloads_total{cluster_queue=\"cq\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("kueue_admission_attempt_duration_seconds_count{"
                                 "result=\"success\"} 1\n"));
}

}  // namespace
}  // namespace admitd
