// Plain pods and pod groups through the engine's API (KEP-976, §14), with fast quota release
// (KEP-6143, §15): reports in, Workloads and directives out.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_pods_test_fixture.h"
#include "server/engine/engine_test_fixture.h"
#include "server/pods/pod_group.h"

namespace admitd::engine {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

using testing_fixture::kT0;
using pod_testing::EnginePodsTest;
using pod_testing::Member;
using pod_testing::Pod;
using pod_testing::Running;
using pod_testing::Ts;

TEST_F(EnginePodsTest, ASinglePodIsQueuedAdmittedUngatedAndFinished) {
  const std::string wl = pods::SinglePodWorkloadName("p", "p-uid");
  v1::ReportPodsResponse resp = Report({Pod("p")});
  EXPECT_EQ(resp.accepted(), 1);
  EXPECT_EQ(State(wl), v1::WORKLOAD_STATE_ADMITTED);
  ASSERT_EQ(resp.directives_size(), 1);
  const v1::PodDirective& ungate = resp.directives(0);
  EXPECT_EQ(ungate.action(), v1::PodDirective::UNGATE);
  EXPECT_EQ(ungate.node_selector().at("pool"), "a");
  EXPECT_EQ(ungate.labels().at(kClusterQueueNameLabel), "cq");
  EXPECT_EQ(ungate.annotations().at(kWorkloadAnnotation), wl);
  // The shim applied it: nothing is outstanding any more.
  v1::PodObservation running = Running(Pod("p"));
  Report({running});
  EXPECT_TRUE(Directives().empty());
  // A replay of the older observation changes nothing.
  EXPECT_EQ(Report({Pod("p")}).stale(), 1);
  v1::PodObservation done = running;
  done.set_phase(v1::POD_PHASE_SUCCEEDED);
  done.set_resource_version(done.resource_version() + 1);
  Report({done});
  EXPECT_EQ(State(wl), v1::WORKLOAD_STATE_FINISHED);
  EXPECT_EQ(FindCondition(Get(wl), kFinished)->reason(), "Succeeded");
  EXPECT_THAT(Actions(Directives()), UnorderedElementsAre("REMOVE_FINALIZER p"));
}

TEST_F(EnginePodsTest, AGroupWaitsForItsTotalThenIsAdmittedWhole) {
  Report({Member("a", "g", "2")});
  EXPECT_EQ(Get("g").metadata().name(), "");  // one of two: no Workload yet
  v1::ReportPodsResponse resp = Report({Member("b", "g", "2")});
  EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 2);
  // The answer carries what is outstanding for the whole group, not just the reported pod.
  EXPECT_THAT(Actions({resp.directives().begin(), resp.directives().end()}),
              UnorderedElementsAre("UNGATE a", "UNGATE b"));
  EXPECT_THAT(Actions(Directives()), UnorderedElementsAre("UNGATE a", "UNGATE b"));
}

TEST_F(EnginePodsTest, BadGroupMetadataIsReportedAndMakesNoWorkload) {
  v1::ReportPodsResponse resp = Report({Member("a", "g", "two")});
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_THAT(resp.errors(0).message(), ::testing::HasSubstr("pod-group-total-count"));
  EXPECT_EQ(Get("g").metadata().name(), "");
}

// A preempted group: its pods get DELETE with TerminationTarget; with fast release its quota
// comes back as soon as every pod has a deletion timestamp, so the preemptor is admitted while
// they still terminate.
class FastReleaseTest : public EnginePodsTest,
                        public ::testing::WithParamInterface<bool> {};

TEST_P(FastReleaseTest, APreemptedGroupReleasesItsQuota) {
  const bool fast = GetParam();
  EngineOptions options;
  options.pod_fast_quota_release = fast;
  Start(options);
  Report({Member("a", "g", "2"), Member("b", "g", "2")});
  ASSERT_EQ(State("g"), v1::WORKLOAD_STATE_ADMITTED);
  Report({Running(Member("a", "g", "2")), Running(Member("b", "g", "2"))});
  // A higher-priority single pod needs the whole queue.
  v1::PodObservation urgent = Pod("urgent", "2");
  urgent.mutable_spec()->set_priority(100);
  Report({urgent});
  EXPECT_EQ(FindCondition(Get("g"), kEvicted)->reason(), "Preempted");
  const std::vector<v1::PodDirective> stop = Directives();
  EXPECT_THAT(Actions(stop), UnorderedElementsAre("DELETE a", "DELETE b"));
  EXPECT_EQ(stop[0].termination_reason(), "WorkloadEvictedDueToPreempted");
  // The shim deletes them: both Running with a deletion timestamp and a 30 s grace period.
  std::vector<v1::PodObservation> terminating;
  for (const char* n : {"a", "b"}) {
    v1::PodObservation p = Running(Running(Member(n, "g", "2")));
    *p.mutable_deletion_timestamp() = Ts(kT0 + absl::Seconds(tick_));
    p.set_deletion_grace_period_seconds(30);
    terminating.push_back(p);
  }
  Report(terminating);
  const std::string urgent_wl = pods::SinglePodWorkloadName("urgent", "urgent-uid");
  if (fast) {
    EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_PENDING);
    EXPECT_EQ(State(urgent_wl), v1::WORKLOAD_STATE_ADMITTED);
  } else {
    EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_EVICTED);  // held until the grace period passes
    EXPECT_EQ(State(urgent_wl), v1::WORKLOAD_STATE_PENDING);
    engine_->Tick(engine_->NextDeadline());
    while (engine_->RunCycle(Now() + absl::Seconds(60)).more) {
    }
    EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_PENDING);
    EXPECT_EQ(State(urgent_wl), v1::WORKLOAD_STATE_ADMITTED);
  }
}

INSTANTIATE_TEST_SUITE_P(Gate, FastReleaseTest, ::testing::Bool());

TEST_F(EnginePodsTest, AMixedGroupWithARunningPodHoldsItsQuota) {
  EngineOptions options;
  options.pod_fast_quota_release = true;
  Start(options);
  Report({Member("a", "g", "2"), Member("b", "g", "2")});
  Report({Running(Member("a", "g", "2")), Running(Member("b", "g", "2"))});
  v1::PodObservation urgent = Pod("urgent", "2");
  urgent.mutable_spec()->set_priority(100);
  Report({urgent});
  v1::PodObservation a = Running(Running(Member("a", "g", "2")));
  *a.mutable_deletion_timestamp() = Ts(kT0 + absl::Seconds(tick_));
  Report({a});  // b still runs without a deletion timestamp
  EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_EVICTED);
}

TEST_F(EnginePodsTest, PodsOfUnmanagedNamespacesAreNotQueued) {
  v1::PodObservation p = Pod("sys");
  p.set_namespace_("kube-system");
  Report({p});
  v1::GetWorkloadRequest req;
  req.set_namespace_("kube-system");
  req.set_name(pods::SinglePodWorkloadName("sys", "sys-uid"));
  EXPECT_FALSE(engine_->GetWorkload(req).ok());
  EXPECT_TRUE(Directives().empty());
}

// ---- Events ------------------------------------------------------------------------------------

TEST_F(EnginePodsTest, ReportsAnswerWithTheEventsKueueRecords) {
  v1::ReportPodsResponse waiting = Report({Member("a", "g", "2")});
  EXPECT_THAT(Events(waiting),
              ElementsAre("WARNING ErrWorkloadCompose a: 'g' group has fewer runnable pods than "
                          "expected"));
  EXPECT_EQ(waiting.events(0).namespace_(), "ns");
  EXPECT_EQ(waiting.events(0).workload_name(), "g");
  EXPECT_EQ(waiting.events(0).pod().uid(), "a-uid");
  EXPECT_EQ(waiting.events(0).pod().cluster(), "c1");
  v1::ReportPodsResponse created = Report({Member("b", "g", "2")});
  EXPECT_THAT(Events(created), ElementsAre("NORMAL CreatedWorkload a: Created Workload: ns/g"));
  // Each UNGATE carries the Started event the shim records once it has ungated the pod.
  ASSERT_EQ(created.directives_size(), 2);
  for (const v1::PodDirective& d : created.directives()) {
    EXPECT_EQ(d.event().type(), v1::PodEvent::NORMAL);
    EXPECT_EQ(d.event().reason(), "Started");
    EXPECT_EQ(d.event().message(), "Admitted by clusterQueue cq");
    EXPECT_EQ(d.event().pod().name(), d.pod().name());
  }
  // Nothing happened with this report: no events (they are not stored or replayed).
  EXPECT_THAT(Events(Report({Running(Member("a", "g", "2"))})), IsEmpty());
}

TEST_F(EnginePodsTest, ExcessPodsAreAnnouncedWithTheirDeletion) {
  v1::PodObservation c = Member("c", "g", "2");
  *c.mutable_creation_timestamp() = Ts(kT0 + absl::Seconds(5));  // the youngest
  v1::ReportPodsResponse resp = Report({Member("a", "g", "2"), Member("b", "g", "2"), c});
  EXPECT_THAT(Events(resp), ElementsAre("NORMAL ExcessPodDeleted c: Excess pod deleted",
                                        "NORMAL CreatedWorkload a: Created Workload: ns/g"));
  EXPECT_THAT(Actions({resp.directives().begin(), resp.directives().end()}),
              UnorderedElementsAre("UNGATE a", "UNGATE b", "REMOVE_FINALIZER c", "DELETE c"));
  // Kueue finalizes and deletes an excess pod in the same reconcile: both come at once, the
  // finalizer first, and a pod already being deleted still loses its finalizer.
  std::vector<std::string> for_c;
  for (const v1::PodDirective& d : resp.directives()) {
    if (d.pod().name() == "c") for_c.push_back(v1::PodDirective::Action_Name(d.action()));
  }
  EXPECT_THAT(for_c, ElementsAre("REMOVE_FINALIZER", "DELETE"));
  c.set_resource_version(2);
  *c.mutable_deletion_timestamp() = Ts(kT0 + absl::Seconds(6));
  resp = Report({c});
  for_c.clear();
  for (const v1::PodDirective& d : resp.directives()) {
    if (d.pod().name() == "c") for_c.push_back(v1::PodDirective::Action_Name(d.action()));
  }
  EXPECT_THAT(for_c, ElementsAre("REMOVE_FINALIZER"));
}

TEST_F(EnginePodsTest, AnImportedGroupWorkloadIsAdoptedByItsPods) {
  // What a running Kueue holds: the group's Workload, admitted, and its pods running.
  Report({Member("a", "g", "2"), Member("b", "g", "2")});
  v1::Workload kueues = Get("g");
  ASSERT_TRUE(kueues.status().has_admission());
  kueues.mutable_metadata()->mutable_labels()->erase("admitd.io/pod-cluster");
  for (const char* name : {"a", "b"}) {
    v1::OwnerReference* o = kueues.mutable_metadata()->add_owner_references();
    o->set_api_version("v1");
    o->set_kind("Pod");
    o->set_name(name);
  }
  // A fresh admitd takes it over, then the shim of cluster c1 reports the running pods.
  Start(EngineOptions());
  v1::ImportRequest import;
  *import.add_workloads() = kueues;
  import.set_cluster("c1");
  ASSERT_TRUE(engine_->Import(import, Now()).ok());
  v1::ReportPodsResponse resp =
      Report({Running(Member("a", "g", "2")), Running(Member("b", "g", "2"))});
  EXPECT_THAT(resp.errors(), IsEmpty());
  EXPECT_THAT(Events(resp), IsEmpty());  // no Workload created, no name conflict
  EXPECT_THAT(resp.directives(), IsEmpty());  // nothing to ungate, stop or delete
  const v1::Workload adopted = Get("g");
  EXPECT_EQ(adopted.metadata().uid(), kueues.metadata().uid());
  EXPECT_EQ(StateOf(adopted), v1::WORKLOAD_STATE_ADMITTED);
}

// Kueue's pod controller case "pod is stopped when workload is evicted": the pod's Workload is
// found by its owner reference, whatever its name, and its eviction stops the running pod.
TEST_F(EnginePodsTest, PodIsStoppedWhenWorkloadIsEvicted) {
  // What a running Kueue holds: Workload "job", owned by the pod, admitted and then evicted.
  Report({Pod("pod")});
  v1::Workload kueues = Get(pods::SinglePodWorkloadName("pod", "pod-uid"));
  ASSERT_TRUE(kueues.status().has_admission());
  kueues.mutable_metadata()->set_name("job");
  kueues.mutable_metadata()->mutable_labels()->erase("admitd.io/pod-cluster");
  SetCondition(&kueues, kEvicted, true, "Preempted",
               "Preempted to accommodate a higher priority Workload", kT0);
  // A fresh admitd takes it over, then the shim reports the running pod.
  Start(EngineOptions());
  v1::ImportRequest import;
  *import.add_workloads() = kueues;
  import.set_cluster("c1");
  ASSERT_TRUE(engine_->Import(import, Now()).ok());
  // The pod's report, answered before any scheduling cycle (Kueue's case has no scheduler: its
  // quota would be free for the Workload again at once).
  v1::ReportPodsRequest req;
  req.set_cluster("c1");
  *req.add_pods() = Running(Pod("pod"));
  absl::StatusOr<v1::ReportPodsResponse> reported = engine_->ReportPods(req, Now());
  ASSERT_TRUE(reported.ok()) << reported.status();
  v1::ReportPodsResponse resp = *reported;
  engine_->AddDirectivesFor(req, Now(), &resp);
  EXPECT_THAT(resp.errors(), IsEmpty());
  // No second Workload for the pod.
  v1::ListWorkloadsRequest list;
  list.set_namespace_("ns");
  absl::StatusOr<v1::ListWorkloadsResponse> all = engine_->ListWorkloads(list);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->workloads_size(), 1);
  EXPECT_EQ(all->workloads(0).metadata().name(), "job");
  // The pod is stopped: TerminationTarget with Kueue's reason and message, then deleted, with a
  // Stopped event.
  ASSERT_THAT(Actions({resp.directives().begin(), resp.directives().end()}),
              ElementsAre("DELETE pod"));
  const v1::PodDirective& stop = resp.directives(0);
  EXPECT_EQ(stop.termination_reason(), "WorkloadEvictedDueToPreempted");
  EXPECT_EQ(stop.termination_message(), "Preempted to accommodate a higher priority Workload");
  EXPECT_EQ(stop.event().reason(), "Stopped");
  EXPECT_EQ(stop.event().type(), v1::PodEvent::NORMAL);
  EXPECT_EQ(stop.event().message(), "Preempted to accommodate a higher priority Workload");
  EXPECT_EQ(stop.event().workload_name(), "job");
}

// The pod's Workload of another name goes away: the pod goes on with a Workload of its own name.
TEST_F(EnginePodsTest, APodWhoseOwnedWorkloadIsDeletedGetsOneOfItsOwnName) {
  Report({Pod("pod")});
  const std::string generated = pods::SinglePodWorkloadName("pod", "pod-uid");
  v1::Workload kueues = Get(generated);
  kueues.mutable_metadata()->set_name("job");
  kueues.mutable_metadata()->mutable_labels()->erase("admitd.io/pod-cluster");
  Start(EngineOptions());
  v1::ImportRequest import;
  *import.add_workloads() = kueues;
  import.set_cluster("c1");
  ASSERT_TRUE(engine_->Import(import, Now()).ok());
  Report({Running(Pod("pod"))});
  EXPECT_EQ(State("job"), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Get(generated).metadata().name(), "");
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name("job");
  ASSERT_TRUE(engine_->DeleteWorkload(del, Now()).ok());
  v1::PodObservation again = Running(Running(Pod("pod")));
  Report({again});
  EXPECT_EQ(Get(generated).metadata().name(), generated);
}

TEST_F(EnginePodsTest, AReplacementPodBecomesAnOwnerOfTheWorkload) {
  Report({Member("a", "g", "2"), Member("b", "g", "2")});
  v1::PodObservation b = Running(Member("b", "g", "2"));
  b.set_phase(v1::POD_PHASE_FAILED);
  Report({Running(Member("a", "g", "2")), b});
  engine_->TakeChanges();
  v1::ReportPodsResponse resp = Report({Member("b2", "g", "2")});
  EXPECT_THAT(Events(resp), ElementsAre("NORMAL OwnerReferencesAdded workload:g: Added 1 owner "
                                        "reference(s)"));
  // The Workload's event is also on the watch stream.
  std::vector<std::string> recorded;
  for (const Change& c : engine_->TakeChanges()) {
    if (c.kind == v1::OBJECT_KIND_EVENT) {
      const v1::Event e = ToEvent(*c.event);
      recorded.push_back(
          absl::StrCat(e.type(), " ", e.reason(), " ", e.regarding().name(), ": ", e.note()));
    }
  }
  EXPECT_THAT(recorded, Contains("Normal OwnerReferencesAdded g: Added 1 owner reference(s)"));
  const v1::Workload wl = Get("g");
  ASSERT_EQ(wl.metadata().owner_references_size(), 3);
  EXPECT_EQ(wl.metadata().owner_references(2).name(), "b2");
  EXPECT_EQ(wl.metadata().owner_references(2).uid(), "b2-uid");
}

// ---- Another controller's Workload --------------------------------------------------------------

TEST_F(EnginePodsTest, AGroupNeverAdoptsAWorkloadItDidNotMake) {
  v1::SubmitRequest submit;
  v1::Workload* other = submit.mutable_workload();
  other->mutable_metadata()->set_namespace_("ns");
  other->mutable_metadata()->set_name("g");
  other->mutable_spec()->set_queue_name("lq");
  v1::PodSet* ps = other->mutable_spec()->add_pod_sets();
  ps->set_count(1);
  v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "1";
  ASSERT_TRUE(engine_->Submit(submit, Now()).ok());
  v1::ReportPodsResponse resp = Report({Member("a", "g", "2"), Member("b", "g", "2")});
  const std::string conflict =
      "WARNING WorkloadNameConflict a: A Workload named \"g\" already exists but is not a pod "
      "group workload; this pod group cannot be admitted";
  EXPECT_THAT(Events(resp), ElementsAre(conflict));
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).message(),
            "workload \"ns/g\" exists and is not a pod workload: the pods stay gated");
  EXPECT_THAT(Actions({resp.directives().begin(), resp.directives().end()}), IsEmpty());
  // The other Workload is untouched: same pod set, no pod owners.
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 1);
  EXPECT_EQ(Get("g").metadata().owner_references_size(), 0);
  // A pod that fails (or is deleted) while gated loses its finalizer; the others stay gated.
  v1::PodObservation b = Member("b", "g", "2");
  b.set_phase(v1::POD_PHASE_FAILED);
  b.set_resource_version(2);
  resp = Report({b});
  EXPECT_THAT(Events(resp), ElementsAre(conflict));
  EXPECT_THAT(Actions({resp.directives().begin(), resp.directives().end()}),
              ElementsAre("REMOVE_FINALIZER b"));
  EXPECT_THAT(Actions(Directives()), ElementsAre("REMOVE_FINALIZER b"));
}

TEST_F(EnginePodsTest, AGroupOfAnotherClusterDoesNotJoinAWorkloadOfTheSameName) {
  Report({Member("a", "g", "2"), Member("b", "g", "2")});
  ASSERT_EQ(State("g"), v1::WORKLOAD_STATE_ADMITTED);
  // Cluster c2 has a group of the same name in the same namespace, with the same pod names.
  v1::ReportPodsRequest other;
  other.set_cluster("c2");
  *other.add_pods() = Member("a", "g", "2");
  *other.add_pods() = Member("b", "g", "2");
  absl::StatusOr<v1::ReportPodsResponse> resp = engine_->ReportPods(other, Now());
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_THAT(Events(*resp),
              ElementsAre("WARNING WorkloadNameConflict a: A Workload named \"g\" already exists "
                          "but is not a pod group workload; this pod group cannot be admitted"));
  EXPECT_EQ(resp->events(0).pod().cluster(), "c2");
  ASSERT_EQ(resp->errors_size(), 1);
  EXPECT_EQ(resp->errors(0).message(),
            "workload \"ns/g\" is made of the pods of cluster \"c1\": the pods of cluster \"c2\" "
            "stay gated");
  EXPECT_EQ(Get("g").metadata().owner_references_size(), 2);
  v1::ListDirectivesRequest list;
  list.set_cluster("c2");
  EXPECT_THAT(engine_->ListDirectives(list, Now()).directives(), IsEmpty());
  // c1's pods are gone: its Workload goes, and c2's group makes its own.
  v1::ReportPodsRequest gone;
  gone.set_cluster("c1");
  for (const char* n : {"a", "b"}) {
    v1::PodDeletion* d = gone.add_deleted();
    d->set_namespace_("ns");
    d->set_name(n);
  }
  ASSERT_TRUE(engine_->ReportPods(gone, Now()).ok());
  while (engine_->RunCycle(Now()).more) {
  }
  EXPECT_EQ(Get("g").metadata().labels().at("admitd.io/pod-cluster"), "c2");
  EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_ADMITTED);
  std::vector<std::string> ungated;
  const v1::ListDirectivesResponse listed = engine_->ListDirectives(list, Now());
  for (const v1::PodDirective& d : listed.directives()) {
    ungated.push_back(absl::StrCat(v1::PodDirective::Action_Name(d.action()), " ",
                                   d.pod().cluster(), "/", d.pod().name()));
  }
  EXPECT_THAT(ungated, UnorderedElementsAre("UNGATE c2/a", "UNGATE c2/b"));
}

// ---- Queue-name changes -------------------------------------------------------------------------

TEST_F(EnginePodsTest, APendingPodFollowsItsQueueLabel) {
  AddQueues("cq2", "lq2", "4");
  const std::string wl = pods::SinglePodWorkloadName("big", "big-uid");
  v1::PodObservation big = Pod("big", "3");  // more than cq's 2 CPUs
  Report({big});
  ASSERT_EQ(State(wl), v1::WORKLOAD_STATE_PENDING);
  const int64_t generation = Get(wl).metadata().generation();
  (*big.mutable_labels())[kQueueNameLabel] = "lq2";
  big.set_resource_version(2);
  v1::ReportPodsResponse resp = Report({big});
  EXPECT_THAT(resp.errors(), IsEmpty());
  EXPECT_EQ(Get(wl).spec().queue_name(), "lq2");
  EXPECT_EQ(Get(wl).metadata().generation(), generation + 1);
  EXPECT_EQ(State(wl), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Get(wl).status().admission().cluster_queue(), "cq2");
  ASSERT_EQ(resp.directives_size(), 1);
  EXPECT_EQ(resp.directives(0).labels().at(kLocalQueueNameLabel), "lq2");
  EXPECT_EQ(resp.directives(0).event().message(), "Admitted by clusterQueue cq2");
}

TEST_F(EnginePodsTest, APodMovesOnlyToALocalQueueThatExists) {
  const std::string wl = pods::SinglePodWorkloadName("big", "big-uid");
  v1::PodObservation big = Pod("big", "3");
  Report({big});
  (*big.mutable_labels())[kQueueNameLabel] = "lq2";  // not created yet
  big.set_resource_version(2);
  v1::ReportPodsResponse resp = Report({big});
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).message(),
            "LocalQueue lq2 doesn't exist: workload \"ns/" + wl + "\" stays in LocalQueue lq");
  EXPECT_EQ(Get(wl).spec().queue_name(), "lq");
  // Once it exists, the next report moves the Workload there.
  AddQueues("cq2", "lq2", "4");
  big.set_resource_version(3);
  resp = Report({big});
  EXPECT_THAT(resp.errors(), IsEmpty());
  EXPECT_EQ(Get(wl).spec().queue_name(), "lq2");
  EXPECT_EQ(State(wl), v1::WORKLOAD_STATE_ADMITTED);
}

TEST_F(EnginePodsTest, AServingGroupKeepsItsQueue) {
  AddQueues("cq2", "lq2", "4");
  std::vector<v1::PodObservation> group;
  for (const char* n : {"a", "b", "c"}) {
    v1::PodObservation p = Member(n, "g", "3");
    (*p.mutable_annotations())[kGroupServingAnnotation] = "true";
    group.push_back(p);
  }
  Report(group);  // 3 CPUs: does not fit cq
  ASSERT_EQ(State("g"), v1::WORKLOAD_STATE_PENDING);
  for (v1::PodObservation& p : group) {
    (*p.mutable_labels())[kQueueNameLabel] = "lq2";
    p.set_resource_version(2);
  }
  v1::ReportPodsResponse resp = Report(group);
  EXPECT_EQ(resp.accepted(), 3);
  EXPECT_EQ(Get("g").spec().queue_name(), "lq");
  EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_PENDING);
}

TEST_F(EnginePodsTest, AnUngatedPodsQueueLabelIsImmutable) {
  Report({Pod("p")});
  v1::PodObservation running = Running(Pod("p"));
  Report({running});
  v1::PodObservation moved = running;
  (*moved.mutable_labels())[kQueueNameLabel] = "lq2";
  moved.set_resource_version(running.resource_version() + 1);
  v1::ReportPodsResponse resp = Report({moved});
  EXPECT_EQ(resp.accepted(), 0);
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).name(), "p");
  EXPECT_EQ(resp.errors(0).message(),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"lq2\": field is "
            "immutable");
  EXPECT_EQ(Get(pods::SinglePodWorkloadName("p", "p-uid")).spec().queue_name(), "lq");
}

TEST_F(EnginePodsTest, AQueueLabelIsNotRemovedWhereADefaultQueueExists) {
  AddQueues("cq2", "default", "4");
  v1::PodObservation p = Pod("p", "3");
  Report({p});
  p.mutable_labels()->erase(kQueueNameLabel);
  p.set_resource_version(2);
  v1::ReportPodsResponse resp = Report({p});
  ASSERT_EQ(resp.errors_size(), 1);
  EXPECT_EQ(resp.errors(0).message(),
            "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": queue-name must "
            "not be empty in namespace with default queue");
}

// ---- What a report may hold ---------------------------------------------------------------------

TEST_F(EnginePodsTest, ACrookedClusterNameIsRefusedAndSelectsNothing) {
  Report({Pod("a")});
  const std::string wl = pods::SinglePodWorkloadName("a", "a-uid");
  ASSERT_EQ(State(wl), v1::WORKLOAD_STATE_ADMITTED);
  for (const std::string& cluster :
       {std::string("c1/team"), std::string("c1\0x", 4), std::string(".."),
        std::string(100000, 'c'), std::string("C1"), std::string("")}) {
    v1::ReportPodsRequest snapshot;
    snapshot.set_cluster(cluster);
    snapshot.set_full_snapshot(true);
    absl::StatusOr<v1::ReportPodsResponse> resp = engine_->ReportPods(snapshot, Now());
    EXPECT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument) << cluster.substr(0, 20);
  }
  // c1's pod and its Workload are untouched.
  EXPECT_EQ(State(wl), v1::WORKLOAD_STATE_ADMITTED);
  // A valid cluster whose name starts like c1's takes only its own pods as deleted.
  v1::ReportPodsRequest other;
  other.set_cluster("c1-team");
  other.set_full_snapshot(true);
  ASSERT_TRUE(engine_->ReportPods(other, Now()).ok());
  EXPECT_EQ(State(wl), v1::WORKLOAD_STATE_ADMITTED);
}

TEST_F(EnginePodsTest, APodKubernetesCouldNotHoldIsRefusedAndNotRecorded) {
  v1::PodObservation phase = Pod("phase");
  phase.set_phase(static_cast<v1::PodPhase>(77));
  v1::PodObservation label = Pod("label");
  (*label.mutable_labels())["bad key!"] = "x";
  v1::PodObservation value = Pod("value");
  (*value.mutable_labels())["app"] = std::string(64, 'v');
  v1::PodObservation annotation = Pod("annotation");
  (*annotation.mutable_annotations())["big"] = std::string(300 * 1024, 'a');
  v1::PodObservation ns = Pod("ns-slash");
  ns.set_namespace_("ns/other");
  v1::ReportPodsResponse resp = Report({phase, label, value, annotation, ns});
  std::vector<std::string> refused;
  for (const v1::PodReportError& e : resp.errors()) refused.push_back(e.name());
  EXPECT_THAT(refused, UnorderedElementsAre("phase", "label", "value", "annotation", "ns-slash"));
  EXPECT_EQ(resp.accepted(), 0);
  EXPECT_THAT(Directives(), IsEmpty());
}

TEST_F(EnginePodsTest, APodGroupThatDisagreesIsRecordedAndWaits) {
  // Two members that disagree on the group's size: no Workload, an error, the pods kept.
  v1::ReportPodsResponse resp = Report({Member("a", "g", "2"), Member("b", "g", "3")});
  EXPECT_EQ(resp.accepted(), 2);
  ASSERT_GE(resp.errors_size(), 1);
  EXPECT_EQ(Get("g").metadata().name(), "");
  // b is recreated with the group's size: a is still there, and the two make the Workload.
  v1::PodObservation b = Member("b", "g", "2");
  b.set_uid("b-uid-2");
  b.set_resource_version(2);
  Report({b});
  EXPECT_EQ(State("g"), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Get("g").spec().pod_sets(0).count(), 2);
}

}  // namespace
}  // namespace admitd::engine
