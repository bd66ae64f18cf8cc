// Elastic workloads (KEP-77, §13 of the semantics) through the public API: Resize, workload
// slices, sticky flavors, replacement in one change set, and the classic path with the gate off.
// A real AdmitdServer with --manual-scheduling, stepped with RunSchedulingCycles.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr char kJobUid[] = "78d1e61a-c399-4c09-800f-a0bbfb5fe71e";
// Kueue's names for the workloads of Job ns/demo-slice (uid kJobUid) at generations 1 to 3.
constexpr char kGen1[] = "job-demo-slice-e7080";
constexpr char kGen2[] = "job-demo-slice-078e4";
constexpr char kReplacementFor[] = "kueue.x-k8s.io/workload-slice-replacement-for";
constexpr char kSliceName[] = "kueue.x-k8s.io/workload-slice-name";

std::string Cond(const v1::Workload& wl, const std::string& type) {
  for (const auto& c : wl.status().conditions()) {
    if (c.type() == type) return absl::StrCat(c.status(), "/", c.reason(), "/", c.message());
  }
  return "";
}
constexpr auto& IsTrue = testing::IsConditionTrue;
using testing::HoldsQuota;
std::string State(const v1::Workload& wl) {
  if (IsTrue(wl, "Finished")) return "Finished";
  if (HoldsQuota(wl) && IsTrue(wl, "Evicted")) return "Evicted";
  if (HoldsQuota(wl) && IsTrue(wl, "Admitted")) return "Admitted";
  if (HoldsQuota(wl)) return "QuotaReserved";
  return "Pending";
}

struct JobSpec {
  std::string name;
  std::string uid;
  std::map<std::string, int> pod_sets;  // name -> count, 1 cpu per pod
  bool elastic = true;
  int priority = 0;
  std::string kind = "Job";
  std::string api_version = "batch/v1";
};

class ElasticTest : public testing::InProcessTest {
 protected:
  void SetUp() override { Start({}); }
  // (Re)starts the server with these feature gates, on a fresh data dir unless `same_data_dir`.
  void Start(const std::map<std::string, bool>& gates, bool same_data_dir = false,
             bool manual_scheduling = true) {
    Stop();
    if (!same_data_dir) FreshDataDir();
    config_.manual_scheduling = manual_scheduling;
    config_.feature_gates = gates;
    InProcessTest::Start();
  }
  // ClusterQueue "cq" over cpu with flavors (name, nominal) in order; LocalQueue ns/lq.
  void Queue(const std::vector<std::pair<std::string, std::string>>& flavors,
             const std::string& within = "Never") {
    for (const auto& f : flavors) Apply(testing::Flavor(f.first));
    v1::ApplyRequest req = testing::ClusterQueue("cq", {}, {});
    v1::ClusterQueueSpec* spec = req.mutable_object()->mutable_cluster_queue()->mutable_spec();
    spec->mutable_preemption()->set_within_cluster_queue(within);
    spec->clear_resource_groups();
    v1::ResourceGroup* g = spec->add_resource_groups();
    g->add_covered_resources("cpu");
    for (const auto& [name, cpu] : flavors) {
      v1::FlavorQuotas* fq = g->add_flavors();
      fq->set_name(name);
      fq->add_resources()->set_name("cpu");
      fq->mutable_resources(0)->set_nominal_quota(cpu);
    }
    Apply(req);
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
  // The workload Kueue creates for a job: named from the job, owned by it, labelled with its uid.
  static v1::Workload JobWorkload(const JobSpec& job, const std::string& name = "") {
    v1::Workload wl;
    wl.mutable_metadata()->set_namespace_("ns");
    wl.mutable_metadata()->set_name(name.empty() ? job.name : name);
    if (job.elastic) {
      (*wl.mutable_metadata()->mutable_annotations())["kueue.x-k8s.io/elastic-job"] = "true";
    }
    (*wl.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = job.uid;
    v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
    owner->set_api_version(job.api_version);
    owner->set_kind(job.kind);
    owner->set_name(job.name);
    owner->set_uid(job.uid);
    owner->set_controller(true);
    wl.mutable_spec()->set_queue_name("lq");
    if (job.priority != 0) wl.mutable_spec()->set_priority(job.priority);
    for (const auto& [ps_name, count] : job.pod_sets) {
      v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
      ps->set_name(ps_name);
      ps->set_count(count);
      v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
      c->set_name("c");
      (*c->mutable_resources()->mutable_requests())["cpu"] = "1";
    }
    return wl;
  }
  void Submit(const v1::Workload& wl) {
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // Runs scheduling cycles; returns the committed revision after them.
  uint64_t Cycles(int n = 1) {
    grpc::ClientContext ctx;
    v1::RunSchedulingCyclesRequest req;
    req.set_count(n);
    v1::RunSchedulingCyclesResponse resp;
    EXPECT_TRUE(client_->queues->RunSchedulingCycles(&ctx, req, &resp).ok());
    return resp.revision();
  }
  grpc::Status Resize(const v1::ResizeRequest& req, v1::ResizeResponse* resp) {
    grpc::ClientContext ctx;
    return client_->admission->Resize(&ctx, req, resp);
  }
  static v1::ResizeRequest ResizeOf(const JobSpec& job, const std::map<std::string, int>& counts,
                                    int64_t generation) {
    v1::ResizeRequest req;
    req.set_namespace_("ns");
    req.mutable_job()->set_api_version(job.api_version);
    req.mutable_job()->set_kind(job.kind);
    req.mutable_job()->set_name(job.name);
    req.mutable_job()->set_uid(job.uid);
    req.set_generation(generation);
    for (const auto& [name, count] : counts) {
      v1::PodSetCount* c = req.add_pod_sets();
      c->set_name(name);
      c->set_count(count);
    }
    return req;
  }
  v1::ResizeResponse MustResize(const JobSpec& job, const std::map<std::string, int>& counts,
                                int64_t generation) {
    v1::ResizeResponse resp;
    grpc::Status s = Resize(ResizeOf(job, counts, generation), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  std::vector<v1::Workload> List() {
    grpc::ClientContext ctx;
    v1::ListWorkloadsRequest req;
    req.set_namespace_("ns");
    req.set_page_size(1000);
    v1::ListWorkloadsResponse resp;
    EXPECT_TRUE(client_->admission->List(&ctx, req, &resp).ok());
    return {resp.workloads().begin(), resp.workloads().end()};
  }
  // The ClusterQueue's status, read through QueueService.Get.
  v1::ClusterQueueStatus CqStatus() {
    grpc::ClientContext ctx;
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    req.set_name("cq");
    v1::QueueObject obj;
    EXPECT_TRUE(client_->queues->Get(&ctx, req, &obj).ok());
    return obj.cluster_queue().status();
  }
  // cpu usage of admitted workloads in `flavor` ("0" when none).
  std::string Usage(const std::string& flavor = "default") {
    const v1::ClusterQueueStatus status = CqStatus();
    for (const v1::FlavorUsage& fu : status.flavors_usage()) {
      if (fu.name() != flavor) continue;
      for (const auto& r : fu.resources()) {
        if (r.name() == "cpu") return r.total();
      }
    }
    return "0";
  }
  std::string Reserved(const std::string& flavor = "default") {
    const v1::ClusterQueueStatus status = CqStatus();
    for (const v1::FlavorUsage& fu : status.flavors_reservation()) {
      if (fu.name() != flavor) continue;
      for (const auto& r : fu.resources()) {
        if (r.name() == "cpu") return r.total();
      }
    }
    return "0";
  }
  void ReleaseStopped(const std::string& name) {
    grpc::ClientContext ctx;
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.mutable_stopped();
    v1::ReleaseQuotaResponse resp;
    grpc::Status s = client_->admission->ReleaseQuota(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  static std::vector<std::string> Names(const v1::ResizeResponse& resp) {
    std::vector<std::string> out;
    for (const v1::Workload& wl : resp.workloads()) out.push_back(wl.metadata().name());
    return out;
  }
};

const JobSpec kDemo{"demo-slice", kJobUid, {{"main", 3}}};

TEST_F(ElasticTest, ScaleDownUpdatesInPlaceAndTheClusterQueueUsageDrops) {
  Queue({{"default", "4"}});
  JobSpec demo = kDemo;
  demo.pod_sets = {{"main", 4}};
  Submit(JobWorkload(demo, kGen1));
  Submit(JobWorkload({"other", "other-uid", {{"main", 2}}}));
  Cycles(2);
  ASSERT_EQ(State(Get(kGen1)), "Admitted");
  ASSERT_EQ(Usage(), "4");
  const v1::ResizeResponse resp = MustResize(demo, {{"main", 2}}, 2);
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_THAT(Names(resp), ElementsAre(kGen1));
  const v1::Workload wl = Get(kGen1);
  EXPECT_EQ(wl.spec().pod_sets(0).count(), 2);
  EXPECT_EQ(State(wl), "Admitted");
  // The admission is not rewritten (§13.2); usage is min(admitted count, spec count) (§2.4).
  EXPECT_EQ(wl.status().admission().pod_set_assignments(0).count(), 4);
  EXPECT_EQ(Usage(), "2");
  EXPECT_EQ(Reserved(), "2");
  Cycles();  // the freed quota lets the other job in
  EXPECT_EQ(State(Get("other")), "Admitted");
  EXPECT_EQ(Usage(), "4");
}

TEST_F(ElasticTest, ScaleUpAdmitsANewSliceAndFinishesTheOldOneInTheSameCommit) {
  Queue({{"default", "6"}});
  Submit(JobWorkload(kDemo, kGen1));
  const uint64_t admitted_at = Cycles();
  const v1::Workload old_at_start = Get(kGen1);
  ASSERT_EQ(State(old_at_start), "Admitted");

  // Watch every workload event from here on.
  grpc::ClientContext watch_ctx;
  v1::WatchRequest watch;
  watch.set_since_revision(admitted_at);
  watch.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  auto reader = client_->admission->Watch(&watch_ctx, watch);

  const v1::ResizeResponse resp = MustResize(kDemo, {{"main", 5}}, 2);
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::SLICE_CREATED);
  ASSERT_THAT(Names(resp), ElementsAre(kGen1, kGen2));
  EXPECT_EQ(resp.workloads(1).metadata().annotations().at(kReplacementFor),
            absl::StrCat("ns/", kGen1));
  EXPECT_EQ(resp.workloads(1).metadata().annotations().at(kSliceName), kGen1);
  EXPECT_EQ(State(resp.workloads(1)), "Pending");
  EXPECT_EQ(Usage(), "3");
  const uint64_t replaced_at = Cycles();

  const v1::Workload slice = Get(kGen2);
  EXPECT_EQ(State(slice), "Admitted");
  EXPECT_EQ(slice.status().admission().pod_set_assignments(0).count(), 5);
  EXPECT_EQ(slice.status().admission().pod_set_assignments(0).resource_usage().at("cpu"), "5");
  EXPECT_EQ(Cond(Get(kGen1), "Finished"),
            absl::StrCat("True/WorkloadSliceReplaced/Replaced to accommodate a workload (UID: ",
                         slice.metadata().uid(), ", JobUID: ", kJobUid,
                         ") due to workload slice aggregation"));
  EXPECT_EQ(Usage(), "5");
  EXPECT_EQ(Reserved(), "5");
  EXPECT_EQ(CqStatus().admitted_workloads(), 1);

  // Replay the stream up to the cycle's revision: after every committed batch (the Resize, then
  // the cycle) at most one slice of the job holds quota, and the old slice's Finished event
  // directly follows the new slice's admission.
  std::map<std::string, v1::Workload> seen;
  std::vector<std::pair<uint64_t, std::string>> order;  // commit revision, "name state"
  v1::WatchEvent event;
  auto holders = [&] {
    int n = 0;
    for (const auto& [name, wl] : seen) n += HoldsQuota(wl) ? 1 : 0;
    return n;
  };
  seen[kGen1] = old_at_start;
  ASSERT_EQ(holders(), 1);
  while (reader->Read(&event)) {
    if (event.type() == v1::WatchEvent::SYNCED) continue;
    ASSERT_TRUE(event.has_workload());
    seen[event.workload().metadata().name()] = event.workload();
    order.emplace_back(event.commit_revision(),
                       absl::StrCat(event.workload().metadata().name(), " ",
                                    State(event.workload())));
    if (event.revision() == replaced_at) break;
    // Every committed batch before the cycle's ends with at most one slice holding quota.
    if (event.revision() == event.commit_revision()) {
      EXPECT_LE(holders(), 1) << event.DebugString();
    }
  }
  EXPECT_EQ(holders(), 1);
  EXPECT_TRUE(HoldsQuota(seen[kGen2]));
  EXPECT_FALSE(HoldsQuota(seen[kGen1]));
  ASSERT_GE(order.size(), 3u);
  EXPECT_EQ(order[0].second, absl::StrCat(kGen2, " Pending"));  // the Resize's batch
  EXPECT_EQ(order[order.size() - 2].second, absl::StrCat(kGen2, " Admitted"));
  EXPECT_EQ(order.back().second, absl::StrCat(kGen1, " Finished"));
  // The admission and the old slice's finish are one commit.
  EXPECT_EQ(order.back().first, order[order.size() - 2].first);
  watch_ctx.TryCancel();
  reader->Finish();

  // The same resize again changes nothing.
  EXPECT_EQ(MustResize(kDemo, {{"main", 5}}, 2).outcome(), v1::ResizeResponse::UNCHANGED);
}

TEST_F(ElasticTest, TheServerUngatesTheJobsReportedPodsUpToTheGrantedCount) {
  Queue({{"default", "4"}});
  JobSpec demo = kDemo;
  demo.pod_sets = {{"main", 2}};
  Submit(JobWorkload(demo, kGen1));
  Cycles();
  ASSERT_EQ(State(Get(kGen1)), "Admitted");
  // Kueue's job controller made three gated pods (one more than granted).
  v1::ReportPodsRequest report;
  report.set_cluster("east");
  for (const char* name : {"demo-z", "demo-b", "demo-a"}) {
    v1::PodObservation* pod = report.add_pods();
    pod->set_namespace_("ns");
    pod->set_name(name);
    pod->set_uid(std::string(name) + "-uid");
    pod->set_resource_version(1);
    pod->set_phase(v1::POD_PHASE_PENDING);
    (*pod->mutable_labels())["kueue.x-k8s.io/podset"] = "main";
    (*pod->mutable_annotations())["kueue.x-k8s.io/workload-slice-name"] = kGen1;
    pod->add_scheduling_gates()->set_name("kueue.x-k8s.io/elastic-job");
    v1::OwnerReference* owner = pod->add_owner_references();
    owner->set_api_version(demo.api_version);
    owner->set_kind(demo.kind);
    owner->set_name(demo.name);
    owner->set_uid(demo.uid);
    owner->set_controller(true);
  }
  auto pods = v1::PodService::NewStub(client_->channel);
  grpc::ClientContext ctx;
  v1::ReportPodsResponse resp;
  grpc::Status s = pods->ReportPods(&ctx, report, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::vector<std::string> ungated;
  for (const v1::PodDirective& d : resp.directives()) {
    EXPECT_EQ(d.action(), v1::PodDirective::UNGATE);
    EXPECT_EQ(d.scheduling_gate(), "kueue.x-k8s.io/elastic-job");
    ungated.push_back(d.pod().name());
  }
  EXPECT_THAT(ungated, ElementsAre("demo-a", "demo-b"));
}

TEST_F(ElasticTest, AScaleUpStaysInTheFlavorTheJobRunsIn) {
  Queue({{"small", "3"}, {"big", "10"}});
  Submit(JobWorkload(kDemo, kGen1));
  Cycles();
  ASSERT_EQ(Get(kGen1).status().admission().pod_set_assignments(0).flavors().at("cpu"), "small");
  EXPECT_EQ(MustResize(kDemo, {{"main", 5}}, 2).outcome(), v1::ResizeResponse::SLICE_CREATED);
  Cycles(2);
  EXPECT_EQ(State(Get(kGen1)), "Admitted");
  EXPECT_EQ(Cond(Get(kGen2), "QuotaReserved"),
            "False/WaitingForQuota/couldn't assign flavors to pod set main: could not assign big "
            "flavor since the original workload is assigned: small, insufficient unused quota for "
            "cpu in flavor small, 2 more needed");
  EXPECT_EQ(Usage("small"), "3");
  EXPECT_EQ(Usage("big"), "0");
}

TEST_F(ElasticTest, AScaleUpPreemptsALowerPriorityWorkloadForTheAddedPods) {
  Queue({{"default", "4"}}, "LowerPriority");
  JobSpec high{"high", "high-uid", {{"main", 2}}, true, 10};
  Submit(JobWorkload(high));
  Submit(JobWorkload({"low", "low-uid", {{"main", 2}}, true, 0}));
  Cycles(2);
  ASSERT_EQ(Usage(), "4");
  const v1::ResizeResponse resp = MustResize(high, {{"main", 4}}, 2);
  ASSERT_EQ(resp.outcome(), v1::ResizeResponse::SLICE_CREATED);
  const std::string slice = resp.workloads(1).metadata().name();
  Cycles();
  EXPECT_THAT(Cond(Get("low"), "Preempted"), ::testing::StartsWith("True/InClusterQueue/"));
  EXPECT_THAT(Cond(Get(slice), "QuotaReserved"),
              ::testing::StartsWith("False/WaitingForPreemptedWorkloads/"));
  EXPECT_EQ(State(Get("high")), "Admitted");  // keeps running meanwhile
  ReleaseStopped("low");
  Cycles();
  EXPECT_EQ(State(Get(slice)), "Admitted");
  EXPECT_EQ(State(Get("high")), "Finished");
  EXPECT_EQ(State(Get("low")), "Pending");
  EXPECT_EQ(Usage(), "4");
}

TEST_F(ElasticTest, ScalingUpTwiceQuicklyUpdatesThePendingSliceInPlace) {
  Queue({{"default", "4"}});
  Submit(JobWorkload(kDemo, kGen1));
  Cycles();
  v1::ResizeResponse first = MustResize(kDemo, {{"main", 6}}, 2);
  ASSERT_EQ(first.outcome(), v1::ResizeResponse::SLICE_CREATED);
  Cycles();  // 6 does not fit
  v1::ResizeResponse second = MustResize(kDemo, {{"main", 4}}, 3);
  EXPECT_EQ(second.outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_THAT(Names(second), ElementsAre(kGen1, kGen2));  // never a third live workload
  EXPECT_EQ(second.workloads(1).spec().pod_sets(0).count(), 4);
  int live = 0;
  for (const v1::Workload& wl : List()) live += State(wl) != "Finished" ? 1 : 0;
  EXPECT_EQ(live, 2);
  Cycles();
  EXPECT_EQ(State(Get(kGen2)), "Admitted");
  EXPECT_EQ(Get(kGen2).status().admission().pod_set_assignments(0).count(), 4);
  EXPECT_EQ(State(Get(kGen1)), "Finished");
  EXPECT_EQ(Usage(), "4");
}

TEST_F(ElasticTest, ASlicedJobIsPreemptedAsAWhole) {
  Queue({{"default", "6"}}, "LowerPriority");
  Submit(JobWorkload(kDemo, kGen1));
  Cycles();
  ASSERT_EQ(MustResize(kDemo, {{"main", 5}}, 2).outcome(), v1::ResizeResponse::SLICE_CREATED);
  Cycles();
  ASSERT_EQ(State(Get(kGen2)), "Admitted");
  ASSERT_EQ(Usage(), "5");
  Submit(JobWorkload({"urgent", "urgent-uid", {{"main", 4}}, false, 100}));
  Cycles();
  // The admitted slice is evicted with its full count, not only the pods it added.
  EXPECT_THAT(Cond(Get(kGen2), "Evicted"), ::testing::StartsWith("True/Preempted/"));
  EXPECT_EQ(State(Get(kGen1)), "Finished");  // the replaced slice stays finished
  ReleaseStopped(kGen2);
  EXPECT_EQ(Usage(), "0");
  Cycles();
  EXPECT_EQ(State(Get("urgent")), "Admitted");
  EXPECT_EQ(Usage(), "4");
  const v1::Workload requeued = Get(kGen2);
  EXPECT_EQ(State(requeued), "Pending");
  EXPECT_EQ(requeued.spec().pod_sets(0).count(), 5);  // queues again for all of its pods
  // Once the urgent job is done, the job comes back at its full size, in one slice.
  grpc::ClientContext ctx;
  v1::ReleaseQuotaRequest done;
  done.set_namespace_("ns");
  done.set_name("urgent");
  done.mutable_finished()->set_succeeded(true);
  v1::ReleaseQuotaResponse done_resp;
  ASSERT_TRUE(client_->admission->ReleaseQuota(&ctx, done, &done_resp).ok());
  Cycles();
  EXPECT_EQ(State(Get(kGen2)), "Admitted");
  EXPECT_EQ(Usage(), "5");
}

TEST_F(ElasticTest, RayClusterHeadAndWorkersScaleDownAndUp) {
  Queue({{"default", "10"}});
  JobSpec ray{"raycluster", "ray-uid",  {{"head", 1}, {"workers", 2}}, true, 0,
              "RayCluster", "ray.io/v1"};
  Submit(JobWorkload(ray, "raycluster-raycluster-abcde"));
  Cycles();
  EXPECT_EQ(Usage(), "3");
  v1::ResizeResponse down = MustResize(ray, {{"head", 1}, {"workers", 1}}, 2);
  EXPECT_EQ(down.outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_EQ(Usage(), "2");
  v1::ResizeResponse up = MustResize(ray, {{"head", 1}, {"workers", 2}}, 3);
  ASSERT_EQ(up.outcome(), v1::ResizeResponse::SLICE_CREATED);
  ASSERT_EQ(up.workloads_size(), 2);
  const std::string slice = up.workloads(1).metadata().name();
  EXPECT_THAT(slice, ::testing::StartsWith("raycluster-raycluster-"));
  EXPECT_EQ(Usage(), "2");
  Cycles();
  const v1::Workload admitted = Get(slice);
  EXPECT_EQ(State(admitted), "Admitted");
  ASSERT_EQ(admitted.status().admission().pod_set_assignments_size(), 2);
  EXPECT_EQ(admitted.status().admission().pod_set_assignments(0).count(), 1);
  EXPECT_EQ(admitted.status().admission().pod_set_assignments(1).count(), 2);
  EXPECT_EQ(State(Get("raycluster-raycluster-abcde")), "Finished");
  EXPECT_EQ(Usage(), "3");
}

TEST_F(ElasticTest, WithTheGateOffAResizeReplacesTheWorkload) {
  Start({{"ElasticJobsViaWorkloadSlices", false}});
  Queue({{"default", "4"}});
  Submit(JobWorkload(kDemo, kGen1));
  Cycles();
  const std::string uid = Get(kGen1).metadata().uid();
  ASSERT_EQ(Usage(), "3");
  const v1::ResizeResponse resp = MustResize(kDemo, {{"main", 4}}, 2);
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::REPLACED);
  EXPECT_THAT(Names(resp), ElementsAre(kGen1));  // the same name, a new UID
  const v1::Workload wl = Get(kGen1);
  EXPECT_NE(wl.metadata().uid(), uid);
  EXPECT_EQ(State(wl), "Pending");
  EXPECT_EQ(Usage(), "0");
  EXPECT_EQ(List().size(), 1u);
  Cycles();
  EXPECT_EQ(Get(kGen1).status().admission().pod_set_assignments(0).count(), 4);
  EXPECT_EQ(Usage(), "4");
}

TEST_F(ElasticTest, ASliceChainSurvivesARestart) {
  Queue({{"default", "4"}});
  Submit(JobWorkload(kDemo, kGen1));
  Cycles();
  ASSERT_EQ(MustResize(kDemo, {{"main", 6}}, 2).outcome(), v1::ResizeResponse::SLICE_CREATED);
  Cycles();  // 6 does not fit
  Start({}, /*same_data_dir=*/true);
  EXPECT_EQ(Usage(), "3");
  // The restarted server finds the job's two slices and updates the pending one.
  const v1::ResizeResponse resp = MustResize(kDemo, {{"main", 4}}, 3);
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_THAT(Names(resp), ElementsAre(kGen1, kGen2));
  Cycles();
  EXPECT_EQ(State(Get(kGen2)), "Admitted");
  EXPECT_EQ(State(Get(kGen1)), "Finished");
  EXPECT_EQ(Usage(), "4");
}

TEST_F(ElasticTest, AScaleDownWhileASliceWaitsShrinksThePendingSlice) {
  Queue({{"default", "5"}});
  JobSpec demo = kDemo;
  demo.pod_sets = {{"main", 4}};
  Submit(JobWorkload(demo, kGen1));
  Cycles();
  ASSERT_EQ(MustResize(demo, {{"main", 6}}, 2).outcome(), v1::ResizeResponse::SLICE_CREATED);
  Cycles();  // 2 more do not fit beside 4 in 5
  ASSERT_EQ(State(Get(kGen2)), "Pending");
  const v1::ResizeResponse resp = MustResize(demo, {{"main", 2}}, 3);
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_THAT(Names(resp), ElementsAre(kGen1, kGen2));
  Cycles();
  // The smaller slice replaces the old one; usage is the new size.
  EXPECT_EQ(State(Get(kGen2)), "Admitted");
  EXPECT_EQ(State(Get(kGen1)), "Finished");
  EXPECT_EQ(Usage(), "2");
  EXPECT_EQ(Reserved(), "2");
}

TEST_F(ElasticTest, WithSchedulingOnAScaleUpThatFitsIsAnsweredAdmitted) {
  // The slice is created, admitted and replaces the old one in the Resize's own commit; the
  // answer lists the live workloads only.
  Start({}, /*same_data_dir=*/false, /*manual_scheduling=*/false);
  Queue({{"default", "6"}});
  Submit(JobWorkload(kDemo, kGen1));
  ASSERT_EQ(State(Get(kGen1)), "Admitted");
  const v1::ResizeResponse resp = MustResize(kDemo, {{"main", 5}}, 2);
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::SLICE_CREATED);
  ASSERT_THAT(Names(resp), ElementsAre(kGen2));
  EXPECT_EQ(State(resp.workloads(0)), "Admitted");
  EXPECT_EQ(State(Get(kGen1)), "Finished");
  EXPECT_EQ(Usage(), "5");
}

TEST_F(ElasticTest, BadResizesAreRefusedAndChangeNothing) {
  Queue({{"default", "4"}});
  Submit(JobWorkload(kDemo, kGen1));
  Cycles();
  const std::vector<v1::Workload> before = List();
  const std::string usage_before = Usage();

  struct Case {
    std::string what;
    v1::ResizeRequest req;
    grpc::StatusCode code;
    std::vector<std::string> violations;  // prefixes of "field: description"
  };
  std::vector<Case> cases;
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 2);
    r.clear_namespace_();
    cases.push_back({"no namespace", r, grpc::StatusCode::INVALID_ARGUMENT, {"namespace: "}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 2);
    r.set_name(kGen1);
    cases.push_back({"job and name", r, grpc::StatusCode::INVALID_ARGUMENT, {"job.uid: "}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 2);
    r.clear_job();
    cases.push_back({"neither job nor name", r, grpc::StatusCode::INVALID_ARGUMENT, {"job.uid: "}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", -1}}, 2);
    cases.push_back({"negative count",
                     r,
                     grpc::StatusCode::INVALID_ARGUMENT,
                     {"pod_sets[0].count: Invalid value: -1"}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 2);
    *r.add_pod_sets() = r.pod_sets(0);
    cases.push_back({"duplicate pod set",
                     r,
                     grpc::StatusCode::INVALID_ARGUMENT,
                     {"pod_sets[1].name: Duplicate value"}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"workers", 4}}, 2);
    cases.push_back({"unknown pod set",
                     r,
                     grpc::StatusCode::INVALID_ARGUMENT,
                     {"pod_sets: Invalid value: the workload's pod sets are [main]"}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {}, 2);
    cases.push_back({"no pod sets", r, grpc::StatusCode::INVALID_ARGUMENT, {"pod_sets: "}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 0);
    cases.push_back({"scale-up without a generation",
                     r,
                     grpc::StatusCode::INVALID_ARGUMENT,
                     {"generation: Required value"}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 2);
    r.mutable_job()->set_uid("no-such-uid");
    cases.push_back({"unknown job", r, grpc::StatusCode::NOT_FOUND, {"job.uid: "}});
  }
  {
    v1::ResizeRequest r = ResizeOf(kDemo, {{"main", 4}}, 2);
    r.clear_job();
    r.set_name("no-such-workload");
    cases.push_back({"unknown workload", r, grpc::StatusCode::NOT_FOUND, {"name: "}});
  }
  for (const Case& c : cases) {
    v1::ResizeResponse resp;
    grpc::Status s = Resize(c.req, &resp);
    EXPECT_EQ(s.error_code(), c.code) << c.what << ": " << s.error_message();
    const std::vector<std::string> got = testing::FieldViolations(s);
    ASSERT_EQ(got.size(), c.violations.size()) << c.what << ": " << s.error_message();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_THAT(got[i], ::testing::StartsWith(c.violations[i])) << c.what;
    }
  }
  const std::vector<v1::Workload> after = List();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    // Compared as messages: two serializations of equal maps may order their entries apart.
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(after[i], before[i]))
        << after[i].DebugString() << "\nwas\n" << before[i].DebugString();
  }
  EXPECT_EQ(Usage(), usage_before);
}

TEST_F(ElasticTest, ResizeByWorkloadNameFindsTheChain) {
  // A workload without an owner reference is resized by name; its slices are named from it.
  Queue({{"default", "6"}});
  v1::Workload wl = JobWorkload(kDemo, "plain");
  wl.mutable_metadata()->clear_owner_references();
  Submit(wl);
  Cycles();
  v1::ResizeRequest req = ResizeOf(kDemo, {{"main", 5}}, 2);
  req.clear_job();
  req.set_name("plain");
  v1::ResizeResponse resp;
  ASSERT_TRUE(Resize(req, &resp).ok());
  ASSERT_EQ(resp.outcome(), v1::ResizeResponse::SLICE_CREATED);
  const std::string slice = resp.workloads(1).metadata().name();
  EXPECT_THAT(slice, ::testing::StartsWith("workload-plain-"));
  Cycles();
  EXPECT_EQ(State(Get(slice)), "Admitted");
  // The chain is found again through the new slice's name.
  req.set_name(slice);
  req.mutable_pod_sets(0)->set_count(2);
  ASSERT_TRUE(Resize(req, &resp).ok());
  EXPECT_EQ(resp.outcome(), v1::ResizeResponse::UPDATED_IN_PLACE);
  EXPECT_THAT(Names(resp), ElementsAre(slice));
  EXPECT_EQ(Usage(), "2");
}

}  // namespace
}  // namespace admitd
