// Elastic workloads through the engine's API (KEP-77, §13 of the semantics): Resize, workload
// slices, sticky flavors, delta accounting and replacement.
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_impl.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using testing_fixture::kT0;
constexpr char kJobUid[] = "78d1e61a-c399-4c09-800f-a0bbfb5fe71e";

TEST(GeneratedWorkloadNameTest, MatchesKueuesNames) {
  EXPECT_EQ(GeneratedWorkloadName("Job", "batch", "demo-slice", kJobUid, "1"),
            "job-demo-slice-e7080");
  EXPECT_EQ(GeneratedWorkloadName("Job", "batch", "demo-slice", kJobUid, "2"),
            "job-demo-slice-078e4");
}

class SlicesTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(EngineOptions()); }
  void Start(EngineOptions options) {
    engine_ = std::make_unique<Engine>(options);
    ASSERT_TRUE(engine_->FinishRestore(0).ok());
  }
  absl::Time Now() { return kT0 + absl::Seconds(++tick_); }
  void Apply(const v1::QueueObject& o) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    auto resp = engine_->Apply(req, Now());
    ASSERT_TRUE(resp.ok()) << resp.status();
  }
  // Flavors with the given cpu quota, in order, in ClusterQueue "cq" (LocalQueue ns/lq).
  void Queue(const std::vector<std::pair<std::string, std::string>>& flavors,
             const std::string& within = "Never") {
    for (const auto& [name, cpu] : flavors) {
      v1::QueueObject f;
      f.mutable_resource_flavor()->mutable_metadata()->set_name(name);
      Apply(f);
    }
    v1::QueueObject o;
    v1::ClusterQueue* cq = o.mutable_cluster_queue();
    cq->mutable_metadata()->set_name("cq");
    cq->mutable_spec()->mutable_namespace_selector();
    cq->mutable_spec()->mutable_preemption()->set_within_cluster_queue(within);
    v1::ResourceGroup* g = cq->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    for (const auto& [name, cpu] : flavors) {
      v1::FlavorQuotas* fq = g->add_flavors();
      fq->set_name(name);
      fq->add_resources()->set_name("cpu");
      fq->mutable_resources(0)->set_nominal_quota(cpu);
    }
    Apply(o);
    v1::QueueObject lq;
    lq.mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
    lq.mutable_local_queue()->mutable_metadata()->set_name("lq");
    lq.mutable_local_queue()->mutable_spec()->set_cluster_queue("cq");
    Apply(lq);
  }
  // A workload of job `job` (uid `job`-uid) with pod sets name -> count of 1 cpu each.
  v1::Workload Job(const std::string& name, const std::map<std::string, int>& pod_sets,
                   bool elastic = true, int priority = 0) {
    v1::Workload wl;
    wl.mutable_metadata()->set_namespace_("ns");
    wl.mutable_metadata()->set_name(name);
    if (elastic) (*wl.mutable_metadata()->mutable_annotations())[kElasticJobAnnotation] = "true";
    v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
    owner->set_api_version("batch/v1");
    owner->set_kind("Job");
    owner->set_name(name);
    owner->set_uid(name + "-uid");
    owner->set_controller(true);
    wl.mutable_spec()->set_queue_name("lq");
    wl.mutable_spec()->set_priority(priority);
    for (const auto& [ps_name, count] : pod_sets) {
      v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
      ps->set_name(ps_name);
      ps->set_count(count);
      (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
            ->mutable_requests())["cpu"] = "1";
    }
    return wl;
  }
  void Submit(const v1::Workload& wl) {
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    auto resp = engine_->Submit(req, Now());
    ASSERT_TRUE(resp.ok()) << resp.status();
  }
  absl::StatusOr<v1::ResizeResponse> Resize(const std::string& job,
                                            const std::map<std::string, int>& counts,
                                            int64_t generation) {
    v1::ResizeRequest req;
    req.set_namespace_("ns");
    req.mutable_job()->set_api_version("batch/v1");
    req.mutable_job()->set_kind("Job");
    req.mutable_job()->set_name(job);
    req.mutable_job()->set_uid(job + "-uid");
    req.set_generation(generation);
    for (const auto& [name, count] : counts) {
      v1::PodSetCount* c = req.add_pod_sets();
      c->set_name(name);
      c->set_count(count);
    }
    return engine_->Resize(req, Now());
  }
  void Drain() {
    while (engine_->RunCycle(Now()).more) {
    }
  }
  v1::Workload Get(const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    auto wl = engine_->GetWorkload(req);
    return wl.ok() ? *wl : v1::Workload();
  }
  v1::Condition Condition(const std::string& name, const char* type) {
    const v1::Workload wl = Get(name);
    const v1::Condition* c = FindCondition(wl, type);
    return c == nullptr ? v1::Condition() : *c;
  }
  v1::WorkloadState State(const std::string& name) { return StateOf(Get(name)); }
  // The ClusterQueue's cpu usage in `flavor`, as its status shows it.
  std::string Usage(const std::string& flavor = "default") {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    req.set_name("cq");
    const v1::ClusterQueue cq = engine_->Get(req)->cluster_queue();
    for (const v1::FlavorUsage& fu : cq.status().flavors_usage()) {
      if (fu.name() == flavor) return fu.resources(0).total();
    }
    return "";
  }
  int32_t AdmittedCount(const std::string& name, int pod_set = 0) {
    return Get(name).status().admission().pod_set_assignments(pod_set).count();
  }

  std::unique_ptr<Engine> engine_;
  int tick_ = 0;
};

TEST_F(SlicesTest, ScaleDownUpdatesInPlaceAndGivesQuotaBack) {
  Queue({{"default", "4"}});
  Submit(Job("a", {{"main", 4}}));
  Submit(Job("b", {{"main", 2}}));
  Drain();
  ASSERT_EQ(State("a"), v1::WORKLOAD_STATE_ADMITTED);
  ASSERT_EQ(State("b"), v1::WORKLOAD_STATE_PENDING);
  auto resp = Resize("a", {{"main", 2}}, 2);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_EQ(Get("a").spec().pod_sets(0).count(), 2);
  EXPECT_EQ(State("a"), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Usage(), "2");
  Drain();  // the freed quota lets the waiting workload in
  EXPECT_EQ(State("b"), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Usage(), "4");
}

TEST_F(SlicesTest, ScaleUpQueuesASliceThatReplacesTheOldOne) {
  Queue({{"default", "6"}});
  Submit(Job("a", {{"main", 3}}));
  // The first slice names the chain after itself.
  EXPECT_EQ(Get("a").metadata().annotations().at(kSliceNameAnnotation), "a");
  Drain();
  auto resp = Resize("a", {{"main", 5}}, 2);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->outcome(), v1::ResizeResponse::SLICE_CREATED);
  ASSERT_EQ(resp->workloads_size(), 2);
  const v1::Workload& slice = resp->workloads(1);
  const std::string name = GeneratedWorkloadName("Job", "batch", "a", "a-uid", "2");
  EXPECT_EQ(slice.metadata().name(), name);
  EXPECT_EQ(slice.metadata().annotations().at(kReplacementForAnnotation), "ns/a");
  EXPECT_EQ(slice.metadata().annotations().at(kSliceNameAnnotation), "a");
  EXPECT_EQ(slice.spec().pod_sets(0).count(), 5);
  engine_->TakeChanges();
  Drain();
  EXPECT_EQ(State(name), v1::WORKLOAD_STATE_ADMITTED);
  // Kueue's event on the old slice: Normal, reason WorkloadSliceReplaced, action Replaced.
  int replaced_events = 0;
  for (const Change& c : engine_->TakeChanges()) {
    if (c.kind != v1::OBJECT_KIND_EVENT || c.event->reason != "WorkloadSliceReplaced") continue;
    const v1::Event e = ToEvent(*c.event);
    ++replaced_events;
    EXPECT_EQ(e.type(), "Normal");
    EXPECT_EQ(e.action(), "Replaced");
    EXPECT_EQ(e.regarding().name(), "a");
    EXPECT_EQ(e.note(), "Replaced to accommodate a workload (UID: " +
                                   Get(name).metadata().uid() +
                                   ", JobUID: UNKNOWN) due to workload slice aggregation");
  }
  EXPECT_EQ(replaced_events, 1);
  EXPECT_EQ(AdmittedCount(name), 5);  // the full count, not the difference
  EXPECT_EQ(Get(name).status().admission().pod_set_assignments(0).resource_usage().at("cpu"), "5");
  const v1::Condition finished = Condition("a", kFinished);
  EXPECT_EQ(finished.status(), "True");
  EXPECT_EQ(finished.reason(), "WorkloadSliceReplaced");
  EXPECT_EQ(finished.message(),
            "Replaced to accommodate a workload (UID: " + Get(name).metadata().uid() +
                ", JobUID: UNKNOWN) due to workload slice aggregation");
  EXPECT_EQ(Usage(), "5");
  // The same resize again changes nothing.
  resp = Resize("a", {{"main", 5}}, 2);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->outcome(), v1::ResizeResponse::UNCHANGED);
}

TEST_F(SlicesTest, TheOldSlicesFlavorIsSticky) {
  // The job runs in "small"; "big" has room, but a slice may only grow where it runs.
  Queue({{"small", "3"}, {"big", "10"}});
  Submit(Job("a", {{"main", 3}}));
  Drain();
  ASSERT_EQ(Get("a").status().admission().pod_set_assignments(0).flavors().at("cpu"), "small");
  auto resp = Resize("a", {{"main", 5}}, 2);
  ASSERT_TRUE(resp.ok());
  Drain();
  const std::string name = GeneratedWorkloadName("Job", "batch", "a", "a-uid", "2");
  EXPECT_EQ(State(name), v1::WORKLOAD_STATE_PENDING);
  EXPECT_EQ(State("a"), v1::WORKLOAD_STATE_ADMITTED);
  const v1::Condition pending = Condition(name, kQuotaReserved);
  // "small" is short by the 2 added pods and nothing may be preempted; "big" is refused.
  EXPECT_EQ(pending.reason(), kReasonWaitingForQuota);
  EXPECT_EQ(pending.message(),
            "couldn't assign flavors to pod set main: could not assign big flavor since the "
            "original workload is assigned: small, insufficient unused quota for cpu in flavor "
            "small, 2 more needed");
  EXPECT_EQ(Usage("small"), "3");
  EXPECT_EQ(Usage("big"), "0");
}

TEST_F(SlicesTest, ScalingUpTwiceUpdatesThePendingSlice) {
  Queue({{"default", "4"}});
  Submit(Job("a", {{"main", 3}}));
  Drain();
  ASSERT_TRUE(Resize("a", {{"main", 6}}, 2).ok());
  Drain();  // 3 more do not fit: the slice waits
  auto resp = Resize("a", {{"main", 4}}, 3);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_EQ(resp->workloads_size(), 2);  // never three live slices
  const std::string slice = GeneratedWorkloadName("Job", "batch", "a", "a-uid", "2");
  EXPECT_EQ(Get(slice).spec().pod_sets(0).count(), 4);
  Drain();
  EXPECT_EQ(State(slice), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(State("a"), v1::WORKLOAD_STATE_FINISHED);
  EXPECT_EQ(Usage(), "4");
}

TEST_F(SlicesTest, ScaleUpPreemptsALowerPriorityWorkloadForTheDifference) {
  Queue({{"default", "4"}}, "LowerPriority");
  Submit(Job("high", {{"main", 2}}, true, 10));
  Submit(Job("low", {{"main", 2}}, true, 0));
  Drain();
  ASSERT_TRUE(Resize("high", {{"main", 4}}, 2).ok());
  Drain();
  const std::string slice = GeneratedWorkloadName("Job", "batch", "high", "high-uid", "2");
  EXPECT_EQ(Condition("low", kPreempted).reason(), "InClusterQueue");
  EXPECT_EQ(Condition(slice, kQuotaReserved).reason(), kReasonWaitingForPreemptedWorkloads);
  EXPECT_EQ(State("high"), v1::WORKLOAD_STATE_ADMITTED);  // keeps running meanwhile
  v1::ReleaseQuotaRequest stop;
  stop.set_namespace_("ns");
  stop.set_name("low");
  stop.mutable_stopped();
  ASSERT_TRUE(engine_->ReleaseQuota(stop, Now()).ok());
  Drain();
  EXPECT_EQ(State(slice), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(State("high"), v1::WORKLOAD_STATE_FINISHED);
  EXPECT_EQ(Usage(), "4");
}

TEST_F(SlicesTest, AnEvictedSliceWithAWaitingReplacementIsFinishedOnRelease) {
  // §13.3's example: CQ 5, job at 3 scaled to 6; a higher-priority job preempts the old slice.
  Queue({{"default", "5"}}, "LowerPriority");
  Submit(Job("a", {{"main", 3}}, true, 0));
  Drain();
  ASSERT_TRUE(Resize("a", {{"main", 6}}, 2).ok());
  Drain();
  const std::string slice = GeneratedWorkloadName("Job", "batch", "a", "a-uid", "2");
  EXPECT_EQ(Condition(slice, kQuotaReserved).message(),
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
            "flavor default, 1 more needed");
  Submit(Job("urgent", {{"main", 3}}, false, 100));
  Drain();
  ASSERT_EQ(Condition("a", kEvicted).reason(), "Preempted");
  v1::ReleaseQuotaRequest stop;
  stop.set_namespace_("ns");
  stop.set_name("a");
  stop.mutable_stopped();
  ASSERT_TRUE(engine_->ReleaseQuota(stop, Now()).ok());
  EXPECT_EQ(Condition("a", kFinished).reason(), "WorkloadSliceReplaced");
  EXPECT_EQ(Condition("a", kFinished).message(), "Replaced to accommodate a new workload slice");
  Drain();
  EXPECT_EQ(State("urgent"), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(State(slice), v1::WORKLOAD_STATE_PENDING);  // 6 in full do not fit beside 3
}

TEST_F(SlicesTest, RayClusterShapedPodSetsScaleIndependently) {
  Queue({{"default", "10"}});
  Submit(Job("ray", {{"head", 1}, {"workers", 2}}));
  Drain();
  EXPECT_EQ(Usage(), "3");
  auto down = Resize("ray", {{"head", 1}, {"workers", 1}}, 2);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_EQ(Usage(), "2");
  auto up = Resize("ray", {{"head", 1}, {"workers", 2}}, 3);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->outcome(), v1::ResizeResponse::SLICE_CREATED);
  Drain();
  EXPECT_EQ(Usage(), "3");
  const std::string slice = GeneratedWorkloadName("Job", "batch", "ray", "ray-uid", "3");
  EXPECT_EQ(State(slice), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(AdmittedCount(slice, 0), 1);
  EXPECT_EQ(AdmittedCount(slice, 1), 2);
}

TEST_F(SlicesTest, WithoutTheAnnotationTheWorkloadIsReplacedAndRequeued) {
  Queue({{"default", "4"}});
  Submit(Job("a", {{"main", 2}}, /*elastic=*/false));
  Drain();
  const std::string uid = Get("a").metadata().uid();
  auto resp = Resize("a", {{"main", 3}}, 2);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->outcome(), v1::ResizeResponse::REPLACED);
  EXPECT_EQ(State("a"), v1::WORKLOAD_STATE_PENDING);
  EXPECT_NE(Get("a").metadata().uid(), uid);
  EXPECT_EQ(Usage(), "0");
  Drain();
  EXPECT_EQ(AdmittedCount("a"), 3);
}

TEST_F(SlicesTest, WithTheGateOffElasticWorkloadsAreReplacedToo) {
  EngineOptions options;
  options.elastic_jobs = false;
  Start(options);
  Queue({{"default", "4"}});
  Submit(Job("a", {{"main", 2}}));
  Drain();
  auto resp = Resize("a", {{"main", 3}}, 2);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->outcome(), v1::ResizeResponse::REPLACED);
}

TEST_F(SlicesTest, PartialAdmissionAndElasticAreRefused) {
  Queue({{"default", "4"}});
  v1::Workload wl = Job("a", {{"main", 2}});
  wl.mutable_spec()->mutable_pod_sets(0)->set_min_count(1);
  v1::SubmitRequest req;
  *req.mutable_workload() = wl;
  auto resp = engine_->Submit(req, Now());
  ASSERT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument);
  const auto violations = FieldViolationsOf(resp.status());
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "spec.podSets");
  EXPECT_EQ(violations[0].description,
            "Invalid value: 1: partial admission and elastic job cannot be used together");
}

TEST_F(SlicesTest, BadResizesChangeNothing) {
  Queue({{"default", "4"}});
  Submit(Job("a", {{"main", 2}}));
  Drain();
  EXPECT_EQ(Resize("nobody", {{"main", 1}}, 2).status().code(), absl::StatusCode::kNotFound);
  auto wrong = Resize("a", {{"workers", 1}}, 2);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Resize("a", {{"main", -1}}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Resize("a", {{"main", 3}}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Get("a").spec().pod_sets(0).count(), 2);
  EXPECT_EQ(Usage(), "2");
}

TEST_F(SlicesTest, DeletingASliceDeletesTheChainAndHistoryIsBounded) {
  EngineOptions options;
  options.slice_history_limit = 1;
  Start(options);
  Queue({{"default", "10"}});
  Submit(Job("a", {{"main", 1}}));
  Drain();
  for (int gen = 2; gen <= 4; ++gen) {
    ASSERT_TRUE(Resize("a", {{"main", gen}}, gen).ok());
    Drain();
  }
  // Three replaced slices, of which only the newest is kept (Get answers a deleted one empty).
  EXPECT_EQ(Get("a").metadata().name(), "");
  EXPECT_EQ(Get(GeneratedWorkloadName("Job", "batch", "a", "a-uid", "2")).metadata().name(), "");
  EXPECT_EQ(State(GeneratedWorkloadName("Job", "batch", "a", "a-uid", "3")),
            v1::WORKLOAD_STATE_FINISHED);
  const std::string live = GeneratedWorkloadName("Job", "batch", "a", "a-uid", "4");
  EXPECT_EQ(State(live), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Usage(), "4");
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name(live);
  ASSERT_TRUE(engine_->DeleteWorkload(del, Now()).ok());
  EXPECT_EQ(Get(GeneratedWorkloadName("Job", "batch", "a", "a-uid", "3")).metadata().name(), "");
  EXPECT_EQ(Usage(), "0");
}

TEST_F(SlicesTest, AResizeThatCannotBeRepresentedIsRefusedAndChangesNothing) {
  Queue({{"default", "4"}});
  v1::Workload wl = Job("a", {{"main", 1}});
  // 9P cores: 9e18 millicores, a quantity; two such pods are not.
  (*wl.mutable_spec()->mutable_pod_sets(0)->mutable_template_()->mutable_spec()
        ->mutable_containers(0)->mutable_resources()->mutable_requests())["cpu"] = "9P";
  Submit(wl);
  auto two = Resize("a", {{"main", 2}}, 2);
  ASSERT_EQ(two.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(two.status().message()), ::testing::HasSubstr("pod_sets[0].count"));
  auto negative = Resize("a", {{"main", 1}}, -1);
  ASSERT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(negative.status().message()), ::testing::HasSubstr("generation"));
  EXPECT_EQ(Get("a").spec().pod_sets(0).count(), 1);
}

// ---- The elastic-job gate (§13.5): the server decides which reported pods start ------------

// A pod of job `job` in pod set `pod_set`, gated or not, as a shim reports it.
v1::PodObservation JobPod(const std::string& job, const std::string& name, bool gated,
                          const std::string& pod_set = "main") {
  v1::PodObservation pod;
  pod.set_namespace_("ns");
  pod.set_name(name);
  pod.set_uid(name + "-uid");
  pod.set_resource_version(1);
  pod.set_phase(v1::POD_PHASE_PENDING);
  (*pod.mutable_labels())["kueue.x-k8s.io/podset"] = pod_set;
  (*pod.mutable_annotations())[kSliceNameAnnotation] = job;
  if (gated) pod.add_scheduling_gates()->set_name("kueue.x-k8s.io/elastic-job");
  v1::OwnerReference* owner = pod.add_owner_references();
  owner->set_api_version("batch/v1");
  owner->set_kind("Job");
  owner->set_name(job);
  owner->set_uid(job + "-uid");
  owner->set_controller(true);
  return pod;
}

std::vector<std::string> Ungated(const std::vector<v1::PodDirective>& directives) {
  std::vector<std::string> out;
  for (const v1::PodDirective& d : directives) {
    EXPECT_EQ(d.action(), v1::PodDirective::UNGATE);
    EXPECT_EQ(d.scheduling_gate(), "kueue.x-k8s.io/elastic-job");
    out.push_back(d.pod().name());
  }
  return out;
}

TEST_F(SlicesTest, TheServerUngatesAnElasticJobsPodsUpToTheAdmittedCount) {
  Queue({{"default", "4"}});
  Submit(Job("a", {{"main", 2}}));
  Drain();
  ASSERT_EQ(State("a"), v1::WORKLOAD_STATE_ADMITTED);
  v1::ReportPodsRequest report;
  report.set_cluster("east");
  for (const char* name : {"a-c", "a-a", "a-b"}) *report.add_pods() = JobPod("a", name, true);
  absl::StatusOr<v1::ReportPodsResponse> resp = engine_->ReportPods(report, Now());
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->accepted(), 3);
  EXPECT_EQ(resp->errors_size(), 0);
  // Two granted: the lowest names; the third pod stays gated. No Workload is made of them.
  engine_->AddDirectivesFor(report, Now(), &*resp);
  EXPECT_EQ(Ungated({resp->directives().begin(), resp->directives().end()}),
            (std::vector<std::string>{"a-a", "a-b"}));
  v1::ListWorkloadsRequest all;
  EXPECT_EQ(engine_->ListWorkloads(all)->workloads_size(), 1);

  // The shim ungated them; a scale-up to 4 is admitted as a new slice, which releases the rest.
  v1::ReportPodsRequest done;
  done.set_cluster("east");
  for (const char* name : {"a-a", "a-b"}) {
    v1::PodObservation p = JobPod("a", name, false);
    p.set_resource_version(2);
    *done.add_pods() = p;
  }
  *done.add_pods() = JobPod("a", "a-d", true);
  ASSERT_TRUE(engine_->ReportPods(done, Now()).ok());
  v1::ListDirectivesRequest list;
  list.set_cluster("east");
  EXPECT_TRUE(engine_->ListDirectives(list, Now()).directives().empty());
  ASSERT_TRUE(Resize("a", {{"main", 4}}, 2).ok());
  engine_->TakeDirectiveUpdates(Now());
  Drain();
  EXPECT_EQ(Ungated(engine_->TakeDirectiveUpdates(Now())), (std::vector<std::string>{"a-c", "a-d"}));
  const v1::ListDirectivesResponse listed = engine_->ListDirectives(list, Now());
  EXPECT_EQ(Ungated({listed.directives().begin(), listed.directives().end()}),
            (std::vector<std::string>{"a-c", "a-d"}));
}

TEST_F(SlicesTest, AnEvictedOrPendingSliceUngatesNothing) {
  Queue({{"default", "1"}});
  Submit(Job("a", {{"main", 2}}));  // does not fit
  Drain();
  v1::ReportPodsRequest report;
  report.set_cluster("east");
  *report.add_pods() = JobPod("a", "a-a", true);
  absl::StatusOr<v1::ReportPodsResponse> resp = engine_->ReportPods(report, Now());
  ASSERT_TRUE(resp.ok());
  engine_->AddDirectivesFor(report, Now(), &*resp);
  EXPECT_TRUE(resp->directives().empty());
}

}  // namespace
}  // namespace admitd::engine
