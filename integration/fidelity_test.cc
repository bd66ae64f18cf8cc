// Kueue's observable behaviour through the public API: Kueue's events on the Watch stream and in
// the event log, where pending workloads wait, a LocalQueue created after its workloads, and a
// manual clock that starts at a given time.
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

using ::testing::Contains;
using ::testing::Pair;

const absl::Time kStart = absl::FromUnixSeconds(1767225600);  // 2026-01-01T00:00:00Z

class FidelityTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    config_.manual_scheduling = true;
    config_.manual_clock = true;
    config_.manual_clock_start = kStart;
    Start();
  }
  void Queues(const std::string& cpu = "2") {
    Apply(testing::Flavor("default"));
    Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", cpu}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
  void Submit(const v1::Workload& wl) {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    v1::SubmitResponse resp;
    grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  void Cycles(int n, int advance_seconds = 0) {
    grpc::ClientContext ctx;
    v1::RunSchedulingCyclesRequest req;
    req.set_count(n);
    req.set_advance_clock_seconds(advance_seconds);
    v1::RunSchedulingCyclesResponse resp;
    grpc::Status s = client_->queues->RunSchedulingCycles(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  v1::ClusterQueue ClusterQueueStatus() {
    grpc::ClientContext ctx;
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    req.set_name("cq");
    v1::QueueObject o;
    EXPECT_TRUE(client_->queues->Get(&ctx, req, &o).ok());
    return o.cluster_queue();
  }
  // Every event recorded so far, oldest first: (reason, "name: note").
  std::vector<std::pair<std::string, std::string>> Events(const std::string& ns = "ns") {
    grpc::ClientContext ctx;
    v1::WatchRequest req;
    req.add_kinds(v1::OBJECT_KIND_EVENT);
    req.set_from_oldest(true);
    req.set_namespace_(ns);
    auto reader = client_->admission->Watch(&ctx, req);
    std::vector<std::pair<std::string, std::string>> out;
    v1::WatchEvent event;
    while (reader->Read(&event)) {
      if (event.type() == v1::WatchEvent::SYNCED) break;
      EXPECT_EQ(event.kind(), v1::OBJECT_KIND_EVENT);
      out.emplace_back(event.event().reason(),
                       absl::StrCat(event.event().regarding().name(), ": ", event.event().note()));
    }
    ctx.TryCancel();
    reader->Finish();
    return out;
  }
};

TEST_F(FidelityTest, AdmissionEventsAreWatchedAndReplayedAfterARestart) {
  Queues();
  Submit(testing::Workload("ns", "a", "lq", 1, {{"cpu", "1"}}));
  Cycles(1, /*advance_seconds=*/5);
  Submit(testing::Workload("ns", "big", "lq", 1, {{"cpu", "3"}}));
  Cycles(1);
  const std::vector<std::pair<std::string, std::string>> events = Events();
  EXPECT_THAT(events,
              Contains(Pair("QuotaReserved",
                            "a: Quota reserved in ClusterQueue cq, wait time since queued was 5s")));
  EXPECT_THAT(events, Contains(Pair("Admitted",
                                    "a: Admitted by ClusterQueue cq, wait time since reservation "
                                    "was 0s")));
  const v1::Condition* pending = nullptr;
  const v1::Workload big = Get("big");
  for (const v1::Condition& c : big.status().conditions()) {
    if (c.type() == "QuotaReserved") pending = &c;
  }
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->reason(), "ExceedsMaxQuota");
  EXPECT_THAT(events, Contains(Pair("ExceedsMaxQuota", "big: " + pending->message())));
  // Another namespace's watch sees none of them.
  EXPECT_TRUE(Events("elsewhere").empty());

  Restart();
  EXPECT_EQ(Events(), events);
}

TEST_F(FidelityTest, AWatchWithoutTheEventKindGetsNoEvents) {
  Queues();
  grpc::ClientContext ctx;
  v1::WatchRequest req;  // every kind but directives and events
  auto reader = client_->admission->Watch(&ctx, req);
  v1::WatchEvent event;
  ASSERT_TRUE(reader->Read(&event));  // SYNCED at the current revision
  Submit(testing::Workload("ns", "a", "lq", 1, {{"cpu", "1"}}));
  Cycles(1);
  grpc::ClientContext other;
  auto last = client_->admission->Watch(&other, req);
  int seen = 0;
  while (reader->Read(&event)) {
    EXPECT_NE(event.kind(), v1::OBJECT_KIND_EVENT);
    if (event.has_workload() && event.reason() == "Admitted") break;
    ++seen;
  }
  ctx.TryCancel();
  reader->Finish();
  other.TryCancel();
  last->Finish();
  EXPECT_GE(seen, 1);  // the Submit
}

TEST_F(FidelityTest, FromOldestWantsNoRevision) {
  grpc::ClientContext ctx;
  v1::WatchRequest req;
  req.set_from_oldest(true);
  req.set_since_revision(3);
  auto reader = client_->admission->Watch(&ctx, req);
  v1::WatchEvent event;
  EXPECT_FALSE(reader->Read(&event));
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(s), Contains(::testing::StartsWith("since_revision")));
}

TEST_F(FidelityTest, PendingWorkloadsSayWhereTheyWait) {
  Queues("1");
  Submit(testing::Workload("ns", "a", "lq", 1, {{"cpu", "1"}}));
  Cycles(1);
  Submit(testing::Workload("ns", "b", "lq", 1, {{"cpu", "1"}}));
  Submit(testing::Workload("ns", "c", "lq", 1, {{"cpu", "1"}}, /*priority=*/3));
  v1::ClusterQueue cq = ClusterQueueStatus();
  EXPECT_EQ(cq.status().pending_active_workloads(), 2);
  EXPECT_EQ(cq.status().pending_inadmissible_workloads(), 0);
  EXPECT_EQ(Get("c").status().pending_position().position_in_cluster_queue(), 0);
  EXPECT_EQ(Get("b").status().pending_position().position_in_cluster_queue(), 1);
  Cycles(2);
  cq = ClusterQueueStatus();
  EXPECT_EQ(cq.status().pending_active_workloads(), 0);
  EXPECT_EQ(cq.status().pending_inadmissible_workloads(), 2);
  grpc::ClientContext ctx;
  v1::AdmitRequest req;
  req.set_namespace_("ns");
  req.set_name("b");
  req.set_dry_run(true);
  v1::AdmitResponse resp;
  ASSERT_TRUE(client_->admission->Admit(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.position().status(), "inadmissible");
  EXPECT_EQ(resp.position().position_in_cluster_queue(), 1);
  EXPECT_EQ(resp.position().position_in_local_queue(), 1);
}

TEST_F(FidelityTest, AWorkloadWaitsForItsLocalQueueAndTheClockStartsWhereAsked) {
  Apply(testing::Flavor("default"));
  Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "2"}}));
  Submit(testing::Workload("ns", "early", "later", 1, {{"cpu", "1"}}));
  v1::Workload wl = Get("early");
  EXPECT_EQ(wl.metadata().creation_timestamp().seconds(), absl::ToUnixSeconds(kStart));
  Cycles(1);
  wl = Get("early");
  const v1::Condition* c = nullptr;
  for (const v1::Condition& x : wl.status().conditions()) {
    if (x.type() == "QuotaReserved") c = &x;
  }
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status(), "False");
  EXPECT_EQ(c->reason(), "Misconfigured");
  EXPECT_EQ(c->message(), "LocalQueue later doesn't exist");
  Apply(testing::LocalQueue("ns", "later", "cq"));
  Cycles(1, /*advance_seconds=*/7);
  wl = Get("early");
  ASSERT_TRUE(wl.status().has_admission());
  EXPECT_EQ(wl.status().admission().cluster_queue(), "cq");
  EXPECT_THAT(Events(), Contains(Pair("QuotaReserved",
                                      "early: Quota reserved in ClusterQueue cq, wait time since "
                                      "queued was 7s")));
}

TEST_F(FidelityTest, NamespaceLabelsDecideSelectionAndSurviveARestart) {
  Apply(testing::Flavor("default"));
  v1::ApplyRequest cq = testing::ClusterQueue("cq", {"default"}, {{"cpu", "2"}});
  v1::LabelSelectorRequirement* req = cq.mutable_object()
                                          ->mutable_cluster_queue()
                                          ->mutable_spec()
                                          ->mutable_namespace_selector()
                                          ->add_match_expressions();
  req->set_key("team");
  req->set_operator_("In");
  req->add_values("a");
  Apply(cq);
  Apply(testing::LocalQueue("ns", "lq", "cq"));
  Submit(testing::Workload("ns", "w", "lq", 1, {{"cpu", "1"}}));
  Cycles(1);
  EXPECT_FALSE(Get("w").status().has_admission());

  v1::ApplyRequest ns;
  ns.mutable_object()->mutable_namespace_()->mutable_metadata()->set_name("ns");
  (*ns.mutable_object()->mutable_namespace_()->mutable_metadata()->mutable_labels())["team"] = "a";
  Apply(ns);
  Cycles(1);
  EXPECT_TRUE(Get("w").status().has_admission());

  Restart();
  grpc::ClientContext ctx;
  v1::ListObjectsRequest list;
  list.set_kind(v1::OBJECT_KIND_NAMESPACE);
  v1::ListObjectsResponse listed;
  ASSERT_TRUE(client_->queues->List(&ctx, list, &listed).ok());
  ASSERT_EQ(listed.objects_size(), 1);
  const auto& labels = listed.objects(0).namespace_().metadata().labels();
  EXPECT_EQ(labels.at("team"), "a");
  EXPECT_EQ(labels.at("kubernetes.io/metadata.name"), "ns");
  Submit(testing::Workload("ns", "w2", "lq", 1, {{"cpu", "1"}}));
  Cycles(1);
  EXPECT_TRUE(Get("w2").status().has_admission());
}

TEST_F(FidelityTest, AnImportKeepsTheStatusAndPodWorkloadsJoinTheirCluster) {
  Queues();
  v1::Workload wl = testing::Workload("ns", "group", "lq", 1, {{"cpu", "1"}});
  wl.mutable_metadata()->set_uid("group-uid");
  v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
  owner->set_api_version("v1");
  owner->set_kind("Pod");
  owner->set_name("group-0");
  v1::Admission* admission = wl.mutable_status()->mutable_admission();
  admission->set_cluster_queue("cq");
  v1::PodSetAssignment* psa = admission->add_pod_set_assignments();
  psa->set_name("main");
  psa->set_count(1);
  (*psa->mutable_flavors())["cpu"] = "default";
  (*psa->mutable_resource_usage())["cpu"] = "1";
  for (const auto& [type, reason] : std::vector<std::pair<std::string, std::string>>{
           {"QuotaReserved", "QuotaReserved"}, {"Admitted", "Admitted"},
           {"Requeued", "Preempted"}, {"WaitingForReplacementPods", "PodsReady"}}) {
    v1::Condition* c = wl.mutable_status()->add_conditions();
    c->set_type(type);
    c->set_status("True");
    c->set_reason(reason);
    c->set_message("from Kueue");
    c->mutable_last_transition_time()->set_seconds(1767225000);
  }
  v1::ImportRequest req;
  *req.add_workloads() = wl;
  req.set_cluster("east");
  grpc::ClientContext ctx;
  v1::ImportResponse resp;
  grpc::Status s = client_->queues->Import(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Workload got = Get("group");
  ASSERT_EQ(got.status().conditions_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got.status().conditions(i).SerializeAsString(),
              wl.status().conditions(i).SerializeAsString());
  }
  EXPECT_EQ(got.metadata().labels().at("admitd.io/pod-cluster"), "east");
  EXPECT_EQ(got.metadata().finalizers(0), "kueue.x-k8s.io/resource-in-use");
  EXPECT_EQ(ClusterQueueStatus().status().admitted_workloads(), 1);
}

}  // namespace
}  // namespace admitd
