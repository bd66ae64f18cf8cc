// The pod rules once a group has a Workload: matching, finishing, replacement, reclaimable
// pods, IsActive and directives.
#include "server/pods/pod_group.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/pods/pod_test_util.h"

namespace admitd::pods {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// ---- Matching an existing Workload ------------------------------------------------------------

v1::Workload GroupWorkload(std::vector<std::pair<std::string, int>> sets) {
  v1::Workload wl;
  wl.mutable_metadata()->set_name("test-group");
  wl.mutable_metadata()->set_namespace_("ns");
  (*wl.mutable_metadata()->mutable_annotations())[kIsGroupWorkloadAnnotation] = "true";
  for (const auto& [name, count] : sets) {
    v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
    ps->set_name(name);
    ps->set_count(count);
  }
  return wl;
}

TEST(MatchGroupTest, ExcessAfterAdmission) {
  v1::Workload wl = GroupWorkload({{"dc85db45", 2}});
  std::vector<v1::PodObservation> pods = {
      Member("a").Created(kT0), Member("b").Created(kT0 + absl::Seconds(1)),
      Member("c").Created(kT0 + absl::Seconds(2))};
  absl::StatusOr<GroupMatch> m = MatchGroupWorkload(pods, wl, false, kT0, PodOptions{});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->equivalent);
  EXPECT_THAT(m->delete_excess, ElementsAre("c"));
  EXPECT_THAT(m->kept, ElementsAre("a", "b"));
  EXPECT_EQ(m->absent_pods, 0);
  EXPECT_THAT(m->owners_to_add, ElementsAre("a", "b"));
  EXPECT_THAT(m->events,
              ElementsAre(PodEvent{"Normal", "OwnerReferencesAdded", "Added 2 owner reference(s)", "test-group", true},
                          PodEvent{"Normal", "ExcessPodDeleted", "Excess pod deleted", "c"}));
}

TEST(MatchGroupTest, FailedPodReplaced) {
  v1::Workload wl = GroupWorkload({{"dc85db45", 2}});
  std::vector<v1::PodObservation> pods = {
      Member("a").Phase(v1::POD_PHASE_RUNNING),
      Member("b").FailedAt(kT0 + absl::Seconds(10)),
      Member("c").FailedAt(kT0 + absl::Seconds(5)),
  };
  // Before a replacement exists: one pod absent, the most recently failed pod kept.
  absl::StatusOr<GroupMatch> before = MatchGroupWorkload(pods, wl, false, kT0 + absl::Minutes(1), PodOptions{});
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->equivalent);
  EXPECT_EQ(before->absent_pods, 1);
  EXPECT_THAT(before->finalize, ElementsAre("c"));
  EXPECT_THAT(before->kept, ElementsAre("a", "b"));
  // The replacement arrives: both failed pods are now replaced.
  pods.push_back(Member("d"));
  absl::StatusOr<GroupMatch> after = MatchGroupWorkload(pods, wl, false, kT0 + absl::Minutes(1), PodOptions{});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->absent_pods, 0);
  EXPECT_THAT(after->finalize, ElementsAre("b", "c"));
  EXPECT_THAT(after->kept, ElementsAre("a", "d"));
}

TEST(MatchGroupTest, NotEquivalent) {
  struct Case {
    const char* name;
    v1::Workload wl;
    bool finished;
    bool want;
  } cases[] = {
      {"role missing", GroupWorkload({{"4ebdd4a6", 2}}), false, false},
      {"same role", GroupWorkload({{"dc85db45", 2}}), false, true},
      {"extra workload role", GroupWorkload({{"0aaaaaaa", 1}, {"dc85db45", 2}}), false, true},
  };
  std::vector<v1::PodObservation> pods = {Member("a"), Member("b")};
  for (const auto& c : cases) {
    absl::StatusOr<GroupMatch> m = MatchGroupWorkload(pods, c.wl, c.finished, kT0, PodOptions{});
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->equivalent, c.want) << c.name;
  }
  // A pod whose role the Workload lacks is not kept, as in Kueue: the Workload stays
  // equivalent and that pod is neither a member nor ungated.
  pods.push_back(Member("c").Request("memory", "1Gi"));
  absl::StatusOr<GroupMatch> extra = MatchGroupWorkload(pods, GroupWorkload({{"dc85db45", 2}}), false, kT0, PodOptions{});
  EXPECT_TRUE(extra->equivalent);
  EXPECT_THAT(extra->kept, ElementsAre("a", "b"));
  // Failed pods not yet replaced are kept, so the Workload stays equivalent.
  EXPECT_TRUE(MatchGroupWorkload({Member("a").FailedAt(kT0), Member("b").FailedAt(kT0)},
                                 GroupWorkload({{"dc85db45", 2}}), false, kT0, PodOptions{})
                  ->equivalent);
  // No pod of any of its roles: nothing kept, so the Workload is stale.
  EXPECT_FALSE(MatchGroupWorkload({Member("a").Request("memory", "1Gi")},
                                  GroupWorkload({{"dc85db45", 2}}), false, kT0, PodOptions{})
                   ->equivalent);
}

TEST(MatchGroupTest, ForeignWorkloadIsNotAdopted) {
  v1::Workload wl = GroupWorkload({{"dc85db45", 2}});
  wl.mutable_metadata()->mutable_annotations()->clear();
  absl::StatusOr<GroupMatch> m =
      MatchGroupWorkload({Member("a"), Member("b").Deleted(kT0)}, wl, false, kT0, PodOptions{});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->name_conflict);
  EXPECT_FALSE(m->equivalent);
  EXPECT_THAT(m->finalize, ElementsAre("b"));
  EXPECT_THAT(m->events, ElementsAre(PodEvent{
                             "Warning", "WorkloadNameConflict",
                             "A Workload named \"test-group\" already exists but is not a pod group "
                             "workload; this pod group cannot be admitted",
                             "a"}));
}

TEST(MatchGroupTest, FastAdmissionAbsentPods) {
  v1::Workload wl = GroupWorkload({{"dc85db45", 4}});
  absl::StatusOr<GroupMatch> m = MatchGroupWorkload(
      {Member("driver", "4").Annotation(kGroupFastAdmissionAnnotation, "true")}, wl, false, kT0, PodOptions{});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->absent_pods, 0);
}

// ---- Finished, conditions, reclaimable --------------------------------------------------------

TEST(GroupFinishedTest, Cases) {
  const auto s = [](const std::string& n, const std::string& total = "2") {
    return Member(n, total).Phase(v1::POD_PHASE_SUCCEEDED);
  };
  struct Case {
    const char* name;
    std::vector<v1::PodObservation> pods;
    bool finished;
    std::string message;
  } cases[] = {
      {"all succeeded", {s("a").Obj(), s("b").Obj()}, true, "Pods succeeded: 2/2."},
      {"one running", {s("a").Obj(), Member("b").Phase(v1::POD_PHASE_RUNNING)}, false, ""},
      {"one failed, retriable", {s("a").Obj(), Member("b").Phase(v1::POD_PHASE_FAILED)}, false, ""},
      {"unretriable, all ended",
       {s("a", "3").Obj(), Member("b", "3").Phase(v1::POD_PHASE_FAILED),
        Member("c", "3").Phase(v1::POD_PHASE_FAILED).Annotation(kRetriableInGroupAnnotation, "false")},
       true, "Pods succeeded: 1/3."},
      {"unretriable, one running",
       {s("a", "3").Obj(), Member("b", "3").Phase(v1::POD_PHASE_RUNNING),
        Member("c", "3").Phase(v1::POD_PHASE_FAILED).Annotation(kRetriableInGroupAnnotation, "false")},
       false, ""},
      {"serving never finishes",
       {s("a").Annotation(kGroupServingAnnotation, "true").Obj(), s("b").Annotation(kGroupServingAnnotation, "true").Obj()},
       false, ""},
  };
  for (const auto& c : cases) {
    FinishedState f = GroupFinished(c.pods, PodOptions{});
    EXPECT_EQ(f.finished, c.finished) << c.name;
    EXPECT_EQ(f.message, c.message) << c.name;
    if (c.finished) {
      EXPECT_TRUE(f.success) << c.name;
      EXPECT_EQ(f.reason, "Succeeded") << c.name;
    }
  }
}

TEST(WaitingForReplacementTest, Cases) {
  const absl::Time now = kT0 + absl::Minutes(5);
  v1::Workload wl = GroupWorkload({{"dc85db45", 2}});
  wl.mutable_metadata()->set_generation(3);
  // Nothing absent, no condition: nothing to do.
  ConditionUpdate none = WaitingForReplacementPodsCondition(wl, 0, now);
  EXPECT_FALSE(none.condition.has_value());
  EXPECT_FALSE(none.updated);
  // Absent pods: True / PodsFailed.
  ConditionUpdate failed = WaitingForReplacementPodsCondition(wl, 1, now);
  ASSERT_TRUE(failed.condition.has_value());
  EXPECT_TRUE(failed.updated);
  EXPECT_EQ(failed.condition->type(), "WaitingForReplacementPods");
  EXPECT_EQ(failed.condition->status(), "True");
  EXPECT_EQ(failed.condition->reason(), "PodsFailed");
  EXPECT_EQ(failed.condition->message(), "Some Failed pods need replacement");
  EXPECT_EQ(failed.condition->observed_generation(), 3);
  EXPECT_EQ(failed.condition->last_transition_time().seconds(), absl::ToUnixSeconds(now));
  // Already True: unchanged.
  *wl.mutable_status()->add_conditions() = *failed.condition;
  EXPECT_FALSE(WaitingForReplacementPodsCondition(wl, 1, now).updated);
  // Evicted: takes the eviction's reason and message.
  v1::Condition* ev = wl.mutable_status()->add_conditions();
  ev->set_type("Evicted");
  ev->set_status("True");
  ev->set_reason("Preempted");
  ev->set_message("Preempted to accommodate a workload");
  ConditionUpdate evicted = WaitingForReplacementPodsCondition(wl, 1, now);
  EXPECT_TRUE(evicted.updated);
  EXPECT_EQ(evicted.condition->reason(), "Preempted");
  EXPECT_EQ(evicted.condition->message(), "Preempted to accommodate a workload");
  // All pods back: False / PodsReady.
  ConditionUpdate ready = WaitingForReplacementPodsCondition(wl, 0, now);
  EXPECT_TRUE(ready.updated);
  EXPECT_EQ(ready.condition->status(), "False");
  EXPECT_EQ(ready.condition->reason(), "PodsReady");
  EXPECT_EQ(ready.condition->message(), "No pods need replacement");
}

TEST(ReclaimablePodsTest, SucceededPodsPerRole) {
  std::vector<v1::PodObservation> pods = {
      Member("a", "3").Request("memory", "1Gi").Phase(v1::POD_PHASE_SUCCEEDED),
      Member("b", "3").Phase(v1::POD_PHASE_RUNNING),
      Member("c", "3").Phase(v1::POD_PHASE_SUCCEEDED),
  };
  absl::StatusOr<std::vector<v1::ReclaimablePod>> r = ReclaimablePods(pods, PodOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name(), "4ebdd4a6");
  EXPECT_EQ((*r)[0].count(), 1);
  EXPECT_EQ((*r)[1].name(), "dc85db45");
  EXPECT_EQ((*r)[1].count(), 1);
  for (auto& p : pods) (*p.mutable_annotations())[kGroupServingAnnotation] = "true";
  EXPECT_THAT(*ReclaimablePods(pods, PodOptions{}), IsEmpty());
  EXPECT_THAT(*ReclaimablePods({PodBuilder("single").Phase(v1::POD_PHASE_SUCCEEDED)}, PodOptions{}), IsEmpty());
}

// ---- Quota release ----------------------------------------------------------------------------

TEST(IsActiveTest, LegacyAndFastRelease) {
  const absl::Time now = kT0 + absl::Seconds(100);
  struct Case {
    const char* name;
    v1::PodObservation pod;
    bool legacy;
    bool fast;
  } cases[] = {
      {"running", PodBuilder("p").Phase(v1::POD_PHASE_RUNNING), true, true},
      {"pending", PodBuilder("p"), false, false},
      {"gated", PodBuilder("p").Gated(), false, false},
      {"succeeded", PodBuilder("p").Phase(v1::POD_PHASE_SUCCEEDED), false, false},
      {"failed", PodBuilder("p").Phase(v1::POD_PHASE_FAILED), false, false},
      {"running, terminating within grace",
       PodBuilder("p").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0 + absl::Seconds(90)).Grace(30), true, false},
      {"running, terminating at the deadline",
       PodBuilder("p").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0 + absl::Seconds(70)).Grace(30), true, false},
      {"running, stuck past grace",
       PodBuilder("p").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0 + absl::Seconds(60)).Grace(30), false, false},
      {"running, deleted without grace field",
       PodBuilder("p").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0), true, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(PodKeepsGroupActive(c.pod, now, false), c.legacy) << c.name;
    EXPECT_EQ(PodKeepsGroupActive(c.pod, now, true), c.fast) << c.name;
  }
}

TEST(IsActiveTest, Groups) {
  const absl::Time now = kT0 + absl::Seconds(10);
  std::vector<v1::PodObservation> terminating = {
      PodBuilder("a").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0).Grace(30),
      PodBuilder("b").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0).Grace(30)};
  EXPECT_TRUE(GroupIsActive(terminating, now, false));
  EXPECT_FALSE(GroupIsActive(terminating, now, true));
  EXPECT_FALSE(GroupIsActive(terminating, kT0 + absl::Seconds(31), false));
  std::vector<v1::PodObservation> mixed = terminating;
  mixed.push_back(PodBuilder("c").Phase(v1::POD_PHASE_RUNNING));
  EXPECT_TRUE(GroupIsActive(mixed, now, true));
  EXPECT_FALSE(GroupIsActive({}, now, false));
  // A single pod is never active, whatever its phase.
  EXPECT_FALSE(WorkloadIsActive(false, {PodBuilder("p").Phase(v1::POD_PHASE_RUNNING)}, now, false));
  EXPECT_TRUE(WorkloadIsActive(true, mixed, now, true));
}

// ---- Directives -------------------------------------------------------------------------------

TEST(DirectivesTest, Ungate) {
  UngateInfo info{"dc85db45", {{"pool", "spot"}}, "user-queue", "cq", "test-group"};
  v1::PodDirective d = UngateDirective(Member("a"), info, 7);
  EXPECT_EQ(d.action(), v1::PodDirective::UNGATE);
  EXPECT_EQ(d.pod().cluster(), "c1");
  EXPECT_EQ(d.pod().name(), "a");
  EXPECT_EQ(d.pod().uid(), "a-uid");
  EXPECT_EQ(d.node_selector().at("pool"), "spot");
  EXPECT_EQ(d.labels().at(kPodSetLabel), "dc85db45");
  EXPECT_EQ(d.labels().at(kLocalQueueNameLabel), "user-queue");
  EXPECT_EQ(d.labels().at(kClusterQueueNameLabel), "cq");
  EXPECT_EQ(d.annotations().at(kWorkloadAnnotation), "test-group");
  EXPECT_EQ(d.revision(), 7);
}

TEST(DirectivesTest, PodsToUngate) {
  v1::Workload wl = GroupWorkload({{"4ebdd4a6", 1}, {"dc85db45", 1}});
  v1::PodObservation running = Member("c");
  running.clear_scheduling_gates();
  auto got = PodsToUngate({Member("b").Request("memory", "1Gi"), Member("a"), running}, wl, true);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre(std::make_pair(std::string("a"), std::string("dc85db45")),
                                std::make_pair(std::string("b"), std::string("4ebdd4a6"))));
  auto missing = PodsToUngate({Member("x").Request("cpu", "2")}, wl, true);
  EXPECT_EQ(missing.status().message(), "invalid podset infos: podSetInfo with the name '21a4619c' is not found");
  v1::Workload single;
  single.mutable_spec()->add_pod_sets()->set_name("main");
  auto one = PodsToUngate({PodBuilder("p").Gated()}, single, false);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(*one, ElementsAre(std::make_pair(std::string("p"), std::string("main"))));
}

TEST(DirectivesTest, EventMessagesAreCutAsKueueCutsThem) {
  EXPECT_EQ(TruncateEventMessage("short"), "short");
  const std::string exact(1024, 'x');
  EXPECT_EQ(TruncateEventMessage(exact), exact);
  const std::string cut = TruncateEventMessage(std::string(1025, 'y'));
  EXPECT_EQ(cut.size(), 1024u);
  EXPECT_EQ(cut, std::string(1020, 'y') + " ...");
  // In place: the same cut, and nothing done to a message short enough.
  for (const std::string& message : {std::string("short"), exact, std::string(1025, 'y'),
                                     std::string(5000, 'z')}) {
    std::string in_place = message;
    TruncateEventMessageInPlace(&in_place);
    EXPECT_EQ(in_place, TruncateEventMessage(message)) << message.size();
  }
}

TEST(DirectivesTest, StopEvictedGroup) {
  std::vector<v1::PodObservation> pods = {
      Member("a").Phase(v1::POD_PHASE_RUNNING),
      Member("b").Phase(v1::POD_PHASE_RUNNING).Deleted(kT0).Node("n"),
      Member("c"),  // still gated
      Member("d").Phase(v1::POD_PHASE_SUCCEEDED),
  };
  pods[0].clear_scheduling_gates();
  pods[1].clear_scheduling_gates();
  pods[3].clear_scheduling_gates();
  EXPECT_EQ(EvictionStopReason("Preempted"), "WorkloadEvictedDueToPreempted");
  std::vector<v1::PodDirective> evicted =
      StopDirectives(pods, EvictionStopReason("Preempted"), "Preempted to accommodate a workload", false, true, 9);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].action(), v1::PodDirective::DELETE);
  EXPECT_EQ(evicted[0].pod().name(), "a");
  EXPECT_EQ(evicted[0].termination_reason(), "WorkloadEvictedDueToPreempted");
  EXPECT_EQ(evicted[0].termination_message(), "Preempted to accommodate a workload");
  EXPECT_EQ(evicted[0].revision(), 9);

  std::vector<v1::PodDirective> deleted = StopDirectives(pods, "WorkloadDeleted", "", true, true, 10);
  std::vector<std::string> summary;
  for (const auto& d : deleted) {
    summary.push_back(absl::StrCat(v1::PodDirective::Action_Name(d.action()), ":", d.pod().name()));
  }
  EXPECT_THAT(summary, ElementsAre("DELETE:a", "DELETE:c", "DELETE:d", "REMOVE_FINALIZER:a",
                                   "REMOVE_FINALIZER:b", "REMOVE_FINALIZER:c", "REMOVE_FINALIZER:d"));
}

}  // namespace
}  // namespace admitd::pods
