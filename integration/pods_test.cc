// Plain pods and pod groups through the public API (KEP-976's test plan, KEP-6143's): a real
// AdmitdServer with --manual-scheduling, a "shim" that reports pods with PodService.ReportPods
// and applies the directives it gets back.
#include "absl/strings/str_cat.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"
#include "server/pods/pod_group.h"

namespace admitd {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

google::protobuf::Timestamp Ts(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

class PodsTest : public testing::InProcessTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    config_.manual_scheduling = true;
    Start();
    Apply(testing::Flavor("default"));
    v1::ApplyRequest cq = testing::ClusterQueue("cq", {"default"}, {{"cpu", "2"}});
    cq.mutable_object()->mutable_cluster_queue()->mutable_spec()->mutable_preemption()
        ->set_within_cluster_queue("LowerPriority");
    Apply(cq);
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
  void TearDown() override {
    pods_stub_.reset();
    InProcessTest::TearDown();
  }
  void Start() {
    pods_stub_.reset();
    InProcessTest::Start();
    pods_stub_ = v1::PodService::NewStub(client_->channel);
  }
  void Restart() { Start(); }
  void Cycles() {
    grpc::ClientContext ctx;
    v1::RunSchedulingCyclesRequest req;
    req.set_count(10);
    v1::RunSchedulingCyclesResponse resp;
    ASSERT_TRUE(client_->queues->RunSchedulingCycles(&ctx, req, &resp).ok());
  }

  // ---- the shim -------------------------------------------------------------------------------
  v1::PodObservation& NewPod(const std::string& name, const std::string& cpu = "1") {
    v1::PodObservation& p = pods_[name];
    p.set_namespace_("ns");
    p.set_name(name);
    p.set_uid(name + "-uid");
    p.set_resource_version(++rv_);
    p.set_phase(v1::POD_PHASE_PENDING);
    *p.mutable_creation_timestamp() = Ts(absl::FromUnixSeconds(1700000000) + absl::Seconds(rv_));
    (*p.mutable_labels())[kQueueNameLabel] = "lq";
    (*p.mutable_labels())[kManagedLabel] = "true";
    p.add_finalizers(kManagedFinalizer);
    p.add_scheduling_gates()->set_name(kAdmissionGate);
    v1::Container* c = p.mutable_spec()->add_containers();
    c->set_name("c");
    (*c->mutable_resources()->mutable_requests())["cpu"] = cpu;
    return p;
  }
  v1::PodObservation& NewMember(const std::string& name, const std::string& group, int total) {
    v1::PodObservation& p = NewPod(name);
    (*p.mutable_labels())[kGroupNameLabel] = group;
    (*p.mutable_annotations())[kGroupTotalCountAnnotation] = absl::StrCat(total);
    return p;
  }
  // Reports the named pods as they stand; returns the answer.
  v1::ReportPodsResponse Report(const std::vector<std::string>& names) {
    v1::ReportPodsRequest req;
    req.set_cluster("c1");
    for (const std::string& n : names) *req.add_pods() = pods_.at(n);
    grpc::ClientContext ctx;
    v1::ReportPodsResponse resp;
    grpc::Status s = pods_stub_->ReportPods(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  std::vector<v1::PodDirective> Directives() {
    grpc::ClientContext ctx;
    v1::ListDirectivesRequest req;
    req.set_cluster("c1");
    v1::ListDirectivesResponse resp;
    EXPECT_TRUE(pods_stub_->ListDirectives(&ctx, req, &resp).ok());
    return {resp.directives().begin(), resp.directives().end()};
  }
  // Applies every outstanding directive the way a shim does, and reports the pods it touched:
  // an ungated pod starts running; a deleted one gets its deletion timestamp (it keeps running
  // through its grace period); a finalizer removed goes away.
  std::vector<std::string> ApplyDirectives() {
    std::vector<std::string> done;
    std::vector<std::string> touched;
    for (const v1::PodDirective& d : Directives()) {
      v1::PodObservation& p = pods_.at(d.pod().name());
      switch (d.action()) {
        case v1::PodDirective::UNGATE:
          p.clear_scheduling_gates();
          p.set_phase(v1::POD_PHASE_RUNNING);
          p.set_node_name("node-1");
          for (const auto& [k, v] : d.labels()) (*p.mutable_labels())[k] = v;
          done.push_back("UNGATE " + p.name());
          break;
        case v1::PodDirective::DELETE:
          *p.mutable_deletion_timestamp() = Ts(absl::Now());
          p.set_deletion_grace_period_seconds(30);
          done.push_back("DELETE " + p.name() + " " + d.termination_reason());
          break;
        case v1::PodDirective::REMOVE_FINALIZER:
          p.clear_finalizers();
          done.push_back("REMOVE_FINALIZER " + p.name());
          break;
        default: break;
      }
      p.set_resource_version(++rv_);
      touched.push_back(p.name());
    }
    if (!touched.empty()) Report(touched);
    return done;
  }
  // The Workload, or an empty one when there is none (tests check that none was made).
  v1::Workload Get(const std::string& name) {
    grpc::ClientContext ctx;
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    v1::Workload wl;
    (void)client_->admission->Get(&ctx, req, &wl);
    return wl;
  }
  // "<reason> <pod>: <message>" per event of a ReportPods answer.
  static std::vector<std::string> Events(const v1::ReportPodsResponse& resp) {
    std::vector<std::string> out;
    for (const v1::PodEvent& e : resp.events()) {
      out.push_back(absl::StrCat(e.reason(), " ", e.pod().name(), ": ", e.message()));
    }
    return out;
  }
  // Group "g" of pods a and b (1 CPU each, the whole ClusterQueue), admitted and running.
  void RunGroup() {
    NewMember("a", "g", 2);
    NewMember("b", "g", 2);
    Report({"a", "b"});
    Cycles();
    ApplyDirectives();
  }
  // A single pod "urgent" that needs the whole ClusterQueue at a higher priority, reported and
  // scheduled (it preempts what runs).
  void ReportUrgentPod() {
    v1::PodObservation& urgent = NewPod("urgent", "2");
    urgent.mutable_spec()->set_priority(100);
    Report({"urgent"});
    Cycles();
  }
  std::string Condition(const std::string& wl, const std::string& type) {
    const v1::Workload workload = Get(wl);
    for (const v1::Condition& c : workload.status().conditions()) {
      if (c.type() == type) return c.status() + "/" + c.reason();
    }
    return "";
  }

  std::unique_ptr<v1::PodService::Stub> pods_stub_;
  std::map<std::string, v1::PodObservation> pods_;
  int64_t rv_ = 0;
};

TEST_F(PodsTest, ASinglePodIsQueuedAdmittedAndFinished) {
  NewPod("p");
  EXPECT_EQ(Report({"p"}).accepted(), 1);
  const std::string wl = pods::SinglePodWorkloadName("p", "p-uid");
  EXPECT_EQ(Condition(wl, "QuotaReserved"), "");  // queued, not yet scheduled
  Cycles();
  EXPECT_EQ(Condition(wl, "Admitted"), "True/Admitted");
  EXPECT_THAT(ApplyDirectives(), UnorderedElementsAre("UNGATE p"));
  EXPECT_TRUE(Directives().empty());
  pods_.at("p").set_phase(v1::POD_PHASE_SUCCEEDED);
  pods_.at("p").set_resource_version(++rv_);
  Report({"p"});
  EXPECT_EQ(Condition(wl, "Finished"), "True/Succeeded");
  EXPECT_THAT(ApplyDirectives(), UnorderedElementsAre("REMOVE_FINALIZER p"));
}

TEST_F(PodsTest, DirectivesStreamToTheShimOfTheirCluster) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::WatchRequest req;
  req.add_kinds(v1::OBJECT_KIND_POD_DIRECTIVE);
  req.set_cluster("c1");
  auto reader = client_->admission->Watch(&ctx, req);
  v1::WatchEvent event;
  ASSERT_TRUE(reader->Read(&event));
  ASSERT_EQ(event.type(), v1::WatchEvent::SYNCED);
  NewPod("p");
  Report({"p"});
  Cycles();
  // The commit that admitted the pod's Workload sends its UNGATE; nothing else reaches this
  // stream (no workload events: it asked for directives of c1 only).
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::OBJECT_KIND_POD_DIRECTIVE);
  EXPECT_EQ(event.directive().action(), v1::PodDirective::UNGATE);
  EXPECT_EQ(event.directive().pod().name(), "p");
  EXPECT_EQ(event.directive().pod().cluster(), "c1");
  ctx.TryCancel();
}

TEST_F(PodsTest, AGroupCreatedBeforehandIsAdmittedWholeAndSurvivesARestart) {
  NewMember("a", "g", 2);
  NewMember("b", "g", 2);
  Report({"a"});
  Cycles();
  EXPECT_EQ(Get("g").metadata().name(), "");  // waiting for its second pod
  Restart();                                   // the reported pod is durable
  Report({"b"});
  Cycles();
  EXPECT_EQ(Condition("g", "Admitted"), "True/Admitted");
  EXPECT_THAT(ApplyDirectives(), UnorderedElementsAre("UNGATE a", "UNGATE b"));
  for (const char* n : {"a", "b"}) {
    pods_.at(n).set_phase(v1::POD_PHASE_SUCCEEDED);
    pods_.at(n).set_resource_version(++rv_);
  }
  Report({"a", "b"});
  EXPECT_EQ(Condition("g", "Finished"), "True/Succeeded");
}

TEST_P(PodsTest, APreemptedGroupGivesItsQuotaBack) {
  const bool fast = GetParam();
  if (fast) {
    config_.feature_gates["PodIntegrationFastQuotaRelease"] = true;
    Restart();
  }
  RunGroup();
  ReportUrgentPod();
  EXPECT_EQ(Condition("g", "Evicted"), "True/Preempted");
  // Each stopped pod gets Kueue's Stopped event with the eviction's message.
  std::string evicted_message;
  const v1::Workload g = Get("g");
  for (const v1::Condition& c : g.status().conditions()) {
    if (c.type() == "Evicted") evicted_message = c.message();
  }
  for (const v1::PodDirective& d : Directives()) {
    EXPECT_EQ(d.event().reason(), "Stopped") << d.pod().name();
    EXPECT_EQ(d.event().message(), evicted_message) << d.pod().name();
  }
  EXPECT_THAT(ApplyDirectives(),
              UnorderedElementsAre("DELETE a WorkloadEvictedDueToPreempted",
                                   "DELETE b WorkloadEvictedDueToPreempted"));
  Cycles();
  const std::string urgent_wl = pods::SinglePodWorkloadName("urgent", "urgent-uid");
  if (fast) {
    // Both pods are only terminating: the quota is back (the group queues again and now waits
    // for quota) and the preemptor is in.
    EXPECT_EQ(Condition("g", "Requeued"), "True/Preempted");
    EXPECT_EQ(Condition("g", "QuotaReserved"), "False/WaitingForQuota");
    EXPECT_EQ(Condition(urgent_wl, "Admitted"), "True/Admitted");
  } else {
    // Legacy rule: the Running pods hold the quota until they end or their grace passes.
    EXPECT_EQ(Condition("g", "QuotaReserved"), "True/QuotaReserved");
    EXPECT_NE(Condition(urgent_wl, "Admitted"), "True/Admitted");
    for (const char* n : {"a", "b"}) {
      pods_.at(n).set_phase(v1::POD_PHASE_FAILED);
      pods_.at(n).set_resource_version(++rv_);
    }
    Report({"a", "b"});
    Cycles();
    EXPECT_EQ(Condition(urgent_wl, "Admitted"), "True/Admitted");
  }
}

TEST_F(PodsTest, ExcessPodsBeforeAdmissionAreDeletedYoungestFirst) {
  NewMember("a", "g", 2);
  NewMember("b", "g", 2);
  NewMember("c", "g", 2);  // created last: the youngest
  Report({"a", "b", "c"});
  EXPECT_THAT(ApplyDirectives(), ::testing::Contains("DELETE c "));
  Cycles();
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 2);
}

TEST_F(PodsTest, AFailedPodIsReplacedWithinTheSameQuota) {
  RunGroup();
  pods_.at("b").set_phase(v1::POD_PHASE_FAILED);
  pods_.at("b").set_resource_version(++rv_);
  Report({"b"});
  EXPECT_EQ(Condition("g", "WaitingForReplacementPods"), "True/PodsFailed");
  NewMember("b2", "g", 2);  // the user's controller sends a replacement
  Report({"b2"});
  Cycles();
  EXPECT_EQ(Condition("g", "Admitted"), "True/Admitted");
  const std::vector<std::string> done = ApplyDirectives();
  EXPECT_THAT(done, ::testing::Contains("UNGATE b2"));
  EXPECT_THAT(done, ::testing::Contains("REMOVE_FINALIZER b"));
  EXPECT_EQ(Condition("g", "WaitingForReplacementPods"), "False/PodsReady");
}

TEST_F(PodsTest, AnUnretriableGroupFinishesWhenItsPodsStop) {
  NewMember("a", "g", 2);
  NewMember("b", "g", 2);
  for (const char* n : {"a", "b"}) {
    (*pods_.at(n).mutable_annotations())[kRetriableInGroupAnnotation] = "false";
  }
  Report({"a", "b"});
  Cycles();
  ApplyDirectives();
  pods_.at("a").set_phase(v1::POD_PHASE_SUCCEEDED);
  pods_.at("b").set_phase(v1::POD_PHASE_FAILED);
  for (const char* n : {"a", "b"}) pods_.at(n).set_resource_version(++rv_);
  Report({"a", "b"});
  EXPECT_EQ(Condition("g", "Finished"), "True/Succeeded");
  const v1::Workload g = Get("g");
  for (const v1::Condition& c : g.status().conditions()) {
    if (c.type() == "Finished") {
      EXPECT_EQ(c.message(), "Pods succeeded: 1/2.");
    }
  }
}

TEST_F(PodsTest, APreemptedGroupResumesWithReplacementPods) {
  RunGroup();
  ReportUrgentPod();
  ApplyDirectives();  // DELETE a, b
  // The pods are gone from the cluster; the urgent pod runs and ends.
  v1::ReportPodsRequest gone;
  gone.set_cluster("c1");
  for (const char* n : {"a", "b"}) {
    v1::PodDeletion* d = gone.add_deleted();
    d->set_namespace_("ns");
    d->set_name(n);
  }
  grpc::ClientContext ctx;
  v1::ReportPodsResponse out;
  ASSERT_TRUE(pods_stub_->ReportPods(&ctx, gone, &out).ok());
  EXPECT_EQ(Get("g").metadata().name(), "");  // no pod left: no Workload
  pods_.at("urgent").set_phase(v1::POD_PHASE_SUCCEEDED);
  pods_.at("urgent").set_resource_version(++rv_);
  Report({"urgent"});
  // The user's controller sends the group again: it is admitted and its pods ungated.
  pods_.erase("a");
  pods_.erase("b");
  NewMember("a2", "g", 2);
  NewMember("b2", "g", 2);
  Report({"a2", "b2"});
  Cycles();
  EXPECT_EQ(Condition("g", "Admitted"), "True/Admitted");
  EXPECT_THAT(ApplyDirectives(), ::testing::IsSupersetOf({"UNGATE a2", "UNGATE b2"}));
}

TEST_F(PodsTest, AFastAdmissionGroupIsAdmittedFromItsFirstPod) {
  // kueue.x-k8s.io/pod-group-fast-admission: the Workload is built from the first runnable pod
  // with the group's total count, without waiting for the other pods.
  NewMember("driver", "g", 2);
  (*pods_.at("driver").mutable_annotations())[kGroupFastAdmissionAnnotation] = "true";
  Report({"driver"});
  Cycles();
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 2);
  EXPECT_EQ(Condition("g", "Admitted"), "True/Admitted");
  EXPECT_THAT(ApplyDirectives(), UnorderedElementsAre("UNGATE driver"));
  // A worker created later joins the admitted group and is ungated at once.
  NewMember("w1", "g", 2);
  (*pods_.at("w1").mutable_annotations())[kGroupFastAdmissionAnnotation] = "true";
  Report({"w1"});
  EXPECT_THAT(ApplyDirectives(), UnorderedElementsAre("UNGATE w1"));
}

TEST_F(PodsTest, AnExcessPodAfterAdmissionIsDeleted) {
  RunGroup();
  NewMember("c", "g", 2);  // one pod too many for the admitted group
  Report({"c"});
  EXPECT_THAT(ApplyDirectives(), ::testing::Contains("DELETE c "));
  EXPECT_EQ(Condition("g", "Admitted"), "True/Admitted");
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 2);
}

TEST_F(PodsTest, ADriverIsAdmittedWithTheWorkersItWillCreate) {
  // KEP-976's driver-generates-workers shape: the driver declares every pod set; the Workload is
  // made from the declaration at once and admitted for all of them, the driver is ungated, and
  // the workers it creates later join their set and are ungated as they come.
  const std::string sets =
      R"([{"name": "driver", "count": 1},
          {"name": "workers", "count": 2,
           "template": {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "500m"}}}]}}}])";
  v1::PodObservation& driver = NewPod("driver", "500m");
  (*driver.mutable_labels())[kGroupNameLabel] = "spark";
  (*driver.mutable_annotations())[kGroupSetsAnnotation] = sets;
  EXPECT_THAT(Report({"driver"}).errors(), ::testing::IsEmpty());
  Cycles();
  const v1::Workload wl = Get("spark");
  ASSERT_EQ(wl.spec().pod_sets_size(), 2);
  EXPECT_EQ(wl.spec().pod_sets(1).name(), "workers");
  EXPECT_EQ(wl.spec().pod_sets(1).count(), 2);
  EXPECT_EQ(Condition("spark", "Admitted"), "True/Admitted");
  EXPECT_EQ(wl.status().admission().pod_set_assignments(1).resource_usage().at("cpu"), "1");
  EXPECT_THAT(ApplyDirectives(), UnorderedElementsAre("UNGATE driver"));
  EXPECT_EQ(pods_.at("driver").labels().at(kPodSetLabel), "driver");
  Restart();  // the declaration is read back from the stored Workload

  // The running driver creates its workers, one too many.
  for (const char* n : {"w0", "w1", "w2"}) {
    v1::PodObservation& w = NewPod(n, "500m");
    (*w.mutable_labels())[kGroupNameLabel] = "spark";
    (*w.mutable_labels())[kGroupRoleLabel] = "workers";
  }
  Report({"w0", "w1", "w2"});
  EXPECT_THAT(ApplyDirectives(), ::testing::IsSupersetOf({"UNGATE w0", "UNGATE w1", "DELETE w2 "}));
  EXPECT_EQ(pods_.at("w0").labels().at(kPodSetLabel), "workers");

  // The driver ends and stops its workers: the group is finished and lets go of its pods.
  pods_.at("driver").set_phase(v1::POD_PHASE_SUCCEEDED);
  for (const char* n : {"w0", "w1", "w2"}) pods_.at(n).set_phase(v1::POD_PHASE_FAILED);
  for (const char* n : {"driver", "w0", "w1", "w2"}) pods_.at(n).set_resource_version(++rv_);
  EXPECT_THAT(Events(Report({"driver", "w0", "w1", "w2"})),
              ::testing::IsSupersetOf({"FinishedWorkload driver: Workload 'ns/spark' is declared finished",
                                       "FinishedWorkload w0: Workload 'ns/spark' is declared finished"}));
  EXPECT_EQ(Condition("spark", "Finished"), "True/Succeeded");
  const v1::Workload finished = Get("spark");
  for (const v1::Condition& c : finished.status().conditions()) {
    if (c.type() == "Finished") {
      EXPECT_EQ(c.message(), "Pods succeeded: 1/3.");
    }
  }
  EXPECT_THAT(ApplyDirectives(), ::testing::IsSupersetOf({"REMOVE_FINALIZER driver", "REMOVE_FINALIZER w0",
                                                          "REMOVE_FINALIZER w1"}));
}

TEST_F(PodsTest, ADriverWhoseWorkersWouldNotFitIsNotStarted) {
  // A running pod holds 1 of the ClusterQueue's 2 CPUs; the driver (500m) fits, but not with the
  // two workers of 500m it declares.
  NewPod("busy", "1");
  Report({"busy"});
  Cycles();
  ApplyDirectives();
  v1::PodObservation& driver = NewPod("driver", "500m");
  (*driver.mutable_labels())[kGroupNameLabel] = "spark";
  (*driver.mutable_annotations())[kGroupSetsAnnotation] =
      R"([{"name": "driver"}, {"name": "workers", "count": 2,
          "template": {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "500m"}}}]}}}])";
  Report({"driver"});
  Cycles();
  EXPECT_EQ(Condition("spark", "QuotaReserved"), "False/WaitingForQuota");
  EXPECT_THAT(ApplyDirectives(), ::testing::IsEmpty());
  EXPECT_EQ(pods_.at("driver").scheduling_gates_size(), 1);
  // A declaration the webhook would refuse is answered on the pod and makes nothing.
  v1::PodObservation& bad = NewPod("bad-driver");
  (*bad.mutable_labels())[kGroupNameLabel] = "other";
  (*bad.mutable_annotations())[kGroupSetsAnnotation] = R"([{"name": "driver", "count": 0}])";
  v1::ReportPodsResponse resp = Report({"bad-driver"});
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).name(), "bad-driver");
  EXPECT_EQ(resp.errors(0).message(),
            "metadata.annotations[kueue.x-k8s.io/pod-group-sets]: Invalid value: [0].count: Invalid value: 0: "
            "must be greater than or equal to 1");
  EXPECT_EQ(Get("other").metadata().name(), "");
}

INSTANTIATE_TEST_SUITE_P(FastQuotaRelease, PodsTest, ::testing::Bool());

TEST_F(PodsTest, BadReportsAreAnsweredPerPodAndChangeNothing) {
  NewMember("a", "g", 2);
  (*pods_.at("a").mutable_annotations())[kGroupTotalCountAnnotation] = "many";
  v1::ReportPodsResponse resp = Report({"a"});
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_THAT(resp.errors(0).message(), ::testing::HasSubstr("many"));
  Cycles();
  EXPECT_EQ(Get("g").metadata().name(), "");
  // No cluster: the whole call is refused with the field.
  grpc::ClientContext ctx;
  v1::ReportPodsRequest req;
  v1::ReportPodsResponse out;
  grpc::Status s = pods_stub_->ReportPods(&ctx, req, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(s), UnorderedElementsAre(::testing::HasSubstr("cluster")));
}

TEST_F(PodsTest, ReportsAnswerWithKueuesEvents) {
  NewMember("a", "g", 2);
  NewMember("b", "g", 2);
  NewMember("c", "g", 2);  // the youngest: one too many
  v1::ReportPodsResponse first = Report({"a"});
  EXPECT_THAT(Events(first),
              ElementsAre("ErrWorkloadCompose a: 'g' group has fewer runnable pods than expected"));
  EXPECT_EQ(first.events(0).type(), v1::PodEvent::WARNING);
  v1::ReportPodsResponse rest = Report({"b", "c"});
  EXPECT_THAT(Events(rest), ElementsAre("ExcessPodDeleted c: Excess pod deleted",
                                        "CreatedWorkload a: Created Workload: ns/g"));
  EXPECT_EQ(rest.events(0).type(), v1::PodEvent::NORMAL);
  EXPECT_EQ(rest.events(0).pod().uid(), "c-uid");
  EXPECT_EQ(rest.events(1).workload_name(), "g");
  // Admission happens in the scheduling cycles; each UNGATE carries the pod's Started event.
  Cycles();
  int started = 0;
  for (const v1::PodDirective& d : Directives()) {
    if (d.action() != v1::PodDirective::UNGATE) continue;
    EXPECT_EQ(d.event().reason(), "Started");
    EXPECT_EQ(d.event().message(), "Admitted by clusterQueue cq");
    ++started;
  }
  EXPECT_EQ(started, 2);
}

TEST_F(PodsTest, AGroupNamedLikeAnotherWorkloadStaysGated) {
  grpc::ClientContext ctx;
  v1::SubmitRequest submit;
  *submit.mutable_workload() = testing::Workload("ns", "g", "lq", 1, {{"cpu", "1"}});
  v1::SubmitResponse submitted;
  ASSERT_TRUE(client_->admission->Submit(&ctx, submit, &submitted).ok());
  NewMember("a", "g", 2);
  NewMember("b", "g", 2);
  v1::ReportPodsResponse resp = Report({"a", "b"});
  EXPECT_THAT(Events(resp),
              ElementsAre("WorkloadNameConflict a: A Workload named \"g\" already exists but is "
                          "not a pod group workload; this pod group cannot be admitted"));
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).message(),
            "workload \"ns/g\" exists and is not a pod workload: the pods stay gated");
  Cycles();
  EXPECT_EQ(Condition("g", "Admitted"), "True/Admitted");  // the other Workload, as it was
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 1);
  EXPECT_TRUE(Directives().empty());  // no UNGATE for the pods
  pods_.at("b").set_phase(v1::POD_PHASE_FAILED);
  pods_.at("b").set_resource_version(++rv_);
  resp = Report({"b"});
  EXPECT_THAT(Events(resp), ElementsAre(::testing::StartsWith("WorkloadNameConflict a: ")));
  EXPECT_THAT(ApplyDirectives(), ElementsAre("REMOVE_FINALIZER b"));
  EXPECT_TRUE(Directives().empty());
  EXPECT_FALSE(pods_.at("a").scheduling_gates().empty());
}

TEST_F(PodsTest, APendingPodMovesWithItsQueueLabel) {
  Apply(testing::ClusterQueue("cq2", {"default"}, {{"cpu", "4"}}));
  Apply(testing::LocalQueue("ns", "lq2", "cq2"));
  NewPod("big", "3");  // does not fit cq's 2 CPUs
  Report({"big"});
  Cycles();
  const std::string wl = pods::SinglePodWorkloadName("big", "big-uid");
  EXPECT_THAT(Condition(wl, "QuotaReserved"), ::testing::StartsWith("False/"));
  EXPECT_TRUE(Directives().empty());
  (*pods_.at("big").mutable_labels())[kQueueNameLabel] = "lq2";
  pods_.at("big").set_resource_version(++rv_);
  EXPECT_EQ(Report({"big"}).accepted(), 1);
  EXPECT_EQ(Get(wl).spec().queue_name(), "lq2");
  Cycles();
  EXPECT_EQ(Condition(wl, "Admitted"), "True/Admitted");
  EXPECT_EQ(Get(wl).status().admission().cluster_queue(), "cq2");
  EXPECT_THAT(ApplyDirectives(), ElementsAre("UNGATE big"));
  EXPECT_EQ(pods_.at("big").labels().at(kLocalQueueNameLabel), "lq2");
}

TEST_F(PodsTest, AServingGroupIgnoresQueueLabelChanges) {
  Apply(testing::ClusterQueue("cq2", {"default"}, {{"cpu", "4"}}));
  Apply(testing::LocalQueue("ns", "lq2", "cq2"));
  for (const char* n : {"a", "b", "c"}) {  // 3 CPUs: does not fit cq
    (*NewMember(n, "g", 3).mutable_annotations())[kGroupServingAnnotation] = "true";
  }
  Report({"a", "b", "c"});
  Cycles();
  ASSERT_EQ(Get("g").spec().queue_name(), "lq");
  for (const char* n : {"a", "b", "c"}) {
    (*pods_.at(n).mutable_labels())[kQueueNameLabel] = "lq2";
    pods_.at(n).set_resource_version(++rv_);
  }
  v1::ReportPodsResponse resp = Report({"a", "b", "c"});
  EXPECT_EQ(resp.accepted(), 3);
  EXPECT_THAT(resp.errors(), ::testing::IsEmpty());
  Cycles();
  EXPECT_EQ(Get("g").spec().queue_name(), "lq");
  EXPECT_NE(Condition("g", "Admitted"), "True/Admitted");
  EXPECT_TRUE(Directives().empty());
}

TEST_F(PodsTest, AnUngatedPodCannotChangeQueue) {
  Apply(testing::LocalQueue("ns", "lq2", "cq"));
  NewPod("p");
  Report({"p"});
  Cycles();
  EXPECT_THAT(ApplyDirectives(), ElementsAre("UNGATE p"));
  (*pods_.at("p").mutable_labels())[kQueueNameLabel] = "lq2";
  pods_.at("p").set_resource_version(++rv_);
  v1::ReportPodsResponse resp = Report({"p"});
  EXPECT_EQ(resp.accepted(), 0);
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).name(), "p");
  EXPECT_EQ(resp.errors(0).message(),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"lq2\": field is "
            "immutable");
  EXPECT_EQ(Get(pods::SinglePodWorkloadName("p", "p-uid")).spec().queue_name(), "lq");
}

}  // namespace
}  // namespace admitd
