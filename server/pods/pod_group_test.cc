#include "server/pods/pod_group.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::pods {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

google::protobuf::Timestamp Ts(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

// A pod builder in the spirit of Kueue's testingpod.MakePod.
class PodBuilder {
 public:
  PodBuilder(const std::string& name, const std::string& ns = "ns") {
    pod_.set_cluster("c1");
    pod_.set_namespace_(ns);
    pod_.set_name(name);
    pod_.set_uid(name + "-uid");
    *pod_.mutable_creation_timestamp() = Ts(kT0);
    pod_.set_phase(v1::POD_PHASE_PENDING);
    Request("cpu", "1");
  }
  PodBuilder& Request(const std::string& r, const std::string& q) {
    if (pod_.spec().containers_size() == 0) pod_.mutable_spec()->add_containers()->set_name("c");
    (*pod_.mutable_spec()->mutable_containers(0)->mutable_resources()->mutable_requests())[r] = q;
    return *this;
  }
  PodBuilder& Label(const std::string& k, const std::string& v) {
    (*pod_.mutable_labels())[k] = v;
    return *this;
  }
  PodBuilder& Annotation(const std::string& k, const std::string& v) {
    (*pod_.mutable_annotations())[k] = v;
    return *this;
  }
  PodBuilder& Queue(const std::string& q) { return Label(kQueueNameLabel, q); }
  PodBuilder& Group(const std::string& g, const std::string& total) {
    Label(kGroupNameLabel, g);
    return Annotation(kGroupTotalCountAnnotation, total);
  }
  PodBuilder& Managed() {
    Label(kManagedLabel, "true");
    pod_.add_finalizers(kManagedFinalizer);
    return *this;
  }
  PodBuilder& Gated() {
    pod_.add_scheduling_gates()->set_name(kAdmissionGate);
    return *this;
  }
  PodBuilder& Phase(v1::PodPhase p) {
    pod_.set_phase(p);
    return *this;
  }
  PodBuilder& Created(absl::Time t) {
    *pod_.mutable_creation_timestamp() = Ts(t);
    return *this;
  }
  PodBuilder& Deleted(absl::Time t) {
    *pod_.mutable_deletion_timestamp() = Ts(t);
    return *this;
  }
  PodBuilder& Grace(int64_t s) {
    pod_.set_deletion_grace_period_seconds(s);
    return *this;
  }
  PodBuilder& Node(const std::string& n) {
    pod_.set_node_name(n);
    return *this;
  }
  PodBuilder& Message(const std::string& m) {
    pod_.set_status_message(m);
    return *this;
  }
  PodBuilder& FailedAt(absl::Time t) {
    v1::Condition* c = pod_.add_conditions();
    c->set_type("ContainersReady");
    c->set_status("False");
    c->set_reason("Failed");
    *c->mutable_last_transition_time() = Ts(t);
    return Phase(v1::POD_PHASE_FAILED);
  }
  v1::PodObservation Obj() const { return pod_; }
  operator v1::PodObservation() const { return pod_; }

 private:
  v1::PodObservation pod_;
};

// A group member as the webhook leaves it.
PodBuilder Member(const std::string& name, const std::string& total = "2") {
  PodBuilder b(name);
  b.Queue("user-queue").Group("test-group", total).Managed().Gated();
  return b;
}

// ---- Helpers ----------------------------------------------------------------------------------

TEST(PodHelpersTest, GoAtoi) {
  EXPECT_EQ(*GoAtoi("3"), 3);
  EXPECT_EQ(*GoAtoi("+3"), 3);
  EXPECT_EQ(*GoAtoi("-1"), -1);
  EXPECT_EQ(*GoAtoi("007"), 7);
  EXPECT_EQ(GoAtoi("abc").status().message(), "strconv.Atoi: parsing \"abc\": invalid syntax");
  EXPECT_EQ(GoAtoi("").status().message(), "strconv.Atoi: parsing \"\": invalid syntax");
  EXPECT_EQ(GoAtoi(" 3").status().message(), "strconv.Atoi: parsing \" 3\": invalid syntax");
  EXPECT_EQ(GoAtoi("99999999999999999999").status().message(),
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range");
}

TEST(PodHelpersTest, GroupTotalCountErrors) {
  PodOptions opts;
  struct Case {
    v1::PodObservation pod;
    std::string want;  // "" = ok
    int64_t total;
  } cases[] = {
      {PodBuilder("p").Group("g", "3"), "", 3},
      {PodBuilder("p").Annotation(kGroupTotalCountAnnotation, "3"),
       "pod doesn't have a 'kueue.x-k8s.io/pod-group-name' label", 0},
      {PodBuilder("p").Label(kGroupNameLabel, "g"),
       "failed to extract 'kueue.x-k8s.io/pod-group-total-count' annotation", 0},
      {PodBuilder("p").Group("g", "x"), "strconv.Atoi: parsing \"x\": invalid syntax", 0},
      {PodBuilder("p").Group("g", "0"),
       "incorrect annotation value 'kueue.x-k8s.io/pod-group-total-count=0': group total count "
       "should be greater than zero",
       0},
  };
  for (const auto& c : cases) {
    absl::StatusOr<int64_t> got = GroupTotalCount(c.pod, opts);
    if (c.want.empty()) {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, c.total);
    } else {
      EXPECT_EQ(got.status().message(), c.want);
    }
  }
}

TEST(PodHelpersTest, GroupNameAnnotationWinsWithWorkloadIdentifierAnnotations) {
  v1::PodObservation pod = PodBuilder("p").Label(kGroupNameLabel, "label").Annotation(kGroupNameAnnotation, "anno");
  EXPECT_EQ(GroupName(pod, PodOptions{}), "label");
  PodOptions opts;
  opts.workload_identifier_annotations = true;
  EXPECT_EQ(GroupName(pod, opts), "anno");
}

TEST(PodHelpersTest, RunnableOrSucceeded) {
  EXPECT_TRUE(IsRunnableOrSucceeded(PodBuilder("p")));
  EXPECT_TRUE(IsRunnableOrSucceeded(PodBuilder("p").Phase(v1::POD_PHASE_SUCCEEDED)));
  EXPECT_FALSE(IsRunnableOrSucceeded(PodBuilder("p").Phase(v1::POD_PHASE_FAILED)));
  EXPECT_FALSE(IsRunnableOrSucceeded(PodBuilder("p").Deleted(kT0)));
  EXPECT_TRUE(IsRunnableOrSucceeded(PodBuilder("p").Deleted(kT0).Node("n1")));
}

TEST(PodHelpersTest, ValidateOptions) {
  PodOptions opts;
  EXPECT_TRUE(ValidateOptions(opts).ok());
  opts.max_roles = 18;
  EXPECT_TRUE(ValidateOptions(opts).ok());
  opts.max_roles = 19;
  EXPECT_FALSE(ValidateOptions(opts).ok());
  opts.max_roles = 0;
  EXPECT_FALSE(ValidateOptions(opts).ok());
}

// ---- Management and validation ----------------------------------------------------------------

TEST(PodManagementTest, Decisions) {
  struct Case {
    const char* name;
    v1::PodObservation pod;
    ManagementInput in;
    bool managed;
    std::string queue;
  } cases[] = {
      {"queue label", PodBuilder("p").Queue("q"), {}, true, "q"},
      {"no queue", PodBuilder("p"), {}, false, ""},
      {"default local queue", PodBuilder("p"), {true, false, true, false}, true, "default"},
      {"without queue name", PodBuilder("p"), {true, false, false, true}, true, ""},
      {"namespace not selected", PodBuilder("p").Queue("q"), {false, false, false, false}, false, ""},
      {"owner managed", PodBuilder("p").Queue("q"), {true, true, false, false}, false, ""},
  };
  for (const auto& c : cases) {
    ManagementDecision d = DecideManagement(c.pod, c.in);
    EXPECT_EQ(d.managed, c.managed) << c.name;
    EXPECT_EQ(d.queue_name, c.queue) << c.name;
  }
}

TEST(PodValidationTest, CreateMessages) {
  const std::string both =
      "both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the "
      "'kueue.x-k8s.io/pod-group-name' label should be set";
  struct Case {
    const char* name;
    v1::PodObservation pod;
    std::vector<std::string> want;
  } cases[] = {
      {"valid single", PodBuilder("p").Queue("q"), {}},
      {"valid group", PodBuilder("p").Group("g", "2"), {}},
      {"total without name",
       PodBuilder("p").Annotation(kGroupTotalCountAnnotation, "2"),
       {"metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: " + both}},
      {"name without total",
       PodBuilder("p").Label(kGroupNameLabel, "g"),
       {"metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value: " + both}},
      {"total not a number",
       PodBuilder("p").Group("g", "two"),
       {"metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Invalid value: \"two\": "
        "strconv.Atoi: parsing \"two\": invalid syntax"}},
      {"total zero",
       PodBuilder("p").Group("g", "0"),
       {"metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Invalid value: \"0\": "
        "incorrect annotation value 'kueue.x-k8s.io/pod-group-total-count=0': group total count "
        "should be greater than zero"}},
      {"managed label not true",
       PodBuilder("p").Label(kManagedLabel, "yes"),
       {"metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value can only be 'true'"}},
      {"bad group name",
       PodBuilder("p").Group("Bad_Name", "1"),
       {"metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"Bad_Name\": a lowercase "
        "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
  };
  for (const auto& c : cases) EXPECT_EQ(ValidatePodCreate(c.pod, PodOptions{}), c.want) << c.name;
}

TEST(PodValidationTest, UpdateMessages) {
  v1::PodObservation old_pod = PodBuilder("p").Group("g", "2").Annotation(kRetriableInGroupAnnotation, "false");
  v1::PodObservation flipped = PodBuilder("p").Group("g", "2").Annotation(kRetriableInGroupAnnotation, "true");
  EXPECT_THAT(ValidatePodUpdate(old_pod, flipped, PodOptions{}),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/retriable-in-group]: Forbidden: "
                          "unretriable pod group can't be converted to retriable"));
  v1::PodObservation renamed = PodBuilder("p").Group("h", "2").Annotation(kRetriableInGroupAnnotation, "false");
  EXPECT_THAT(ValidatePodUpdate(old_pod, renamed, PodOptions{}),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"h\": "
                          "field is immutable"));
  EXPECT_THAT(ValidatePodUpdate(old_pod, old_pod, PodOptions{}), IsEmpty());
}

// ---- Single pods ------------------------------------------------------------------------------

TEST(SinglePodTest, WorkloadName) {
  EXPECT_EQ(SinglePodWorkloadName("pod", "test-uid"), "pod-pod-43ebf");
  EXPECT_EQ(SinglePodWorkloadName("spark-driver", "uid-1"), "pod-spark-driver-4132a");
  const std::string longName(300, 'a');
  const std::string name = SinglePodWorkloadName(longName, "u");
  EXPECT_EQ(name.size(), 253u);
  EXPECT_EQ(name.substr(0, 8), "pod-aaaa");
}

TEST(SinglePodTest, BuildWorkload) {
  v1::PodObservation pod = PodBuilder("pod").Queue("user-queue").Managed().Gated();
  pod.set_uid("test-uid");
  v1::Workload wl = BuildSinglePodWorkload(pod, "user-queue");
  EXPECT_EQ(wl.metadata().name(), "pod-pod-43ebf");
  EXPECT_EQ(wl.metadata().namespace_(), "ns");
  ASSERT_EQ(wl.metadata().owner_references_size(), 1);
  EXPECT_EQ(wl.metadata().owner_references(0).kind(), "Pod");
  EXPECT_EQ(wl.metadata().owner_references(0).uid(), "test-uid");
  EXPECT_TRUE(wl.metadata().owner_references(0).controller());
  EXPECT_EQ(wl.spec().queue_name(), "user-queue");
  ASSERT_EQ(wl.spec().pod_sets_size(), 1);
  EXPECT_EQ(wl.spec().pod_sets(0).name(), "main");
  EXPECT_EQ(wl.spec().pod_sets(0).count(), 1);
  EXPECT_EQ(wl.spec().pod_sets(0).template_().spec().containers(0).resources().requests().at("cpu"), "1");
}

TEST(SinglePodTest, Finished) {
  EXPECT_FALSE(SinglePodFinished(PodBuilder("p").Phase(v1::POD_PHASE_RUNNING)).finished);
  FinishedState ok = SinglePodFinished(PodBuilder("p").Phase(v1::POD_PHASE_SUCCEEDED));
  EXPECT_TRUE(ok.finished);
  EXPECT_TRUE(ok.success);
  EXPECT_EQ(ok.reason, "Succeeded");
  FinishedState failed = SinglePodFinished(PodBuilder("p").Phase(v1::POD_PHASE_FAILED).Message("OOMKilled"));
  EXPECT_TRUE(failed.finished);
  EXPECT_FALSE(failed.success);
  EXPECT_EQ(failed.reason, "Failed");
  EXPECT_EQ(failed.message, "OOMKilled");
}

// ---- Group composition ------------------------------------------------------------------------

TEST(ComposeGroupTest, TwoRolesSortedByHash) {
  std::vector<v1::PodObservation> pods = {
      Member("pod1", "3"), Member("pod2", "3").Request("memory", "1Gi"), Member("pod3", "3")};
  GroupComposition c = ComposeGroup(pods, PodOptions{});
  ASSERT_EQ(c.outcome, GroupComposition::Outcome::kCreate) << c.error;
  const v1::Workload& wl = *c.workload;
  EXPECT_EQ(wl.metadata().name(), "test-group");
  EXPECT_EQ(wl.metadata().annotations().at(kIsGroupWorkloadAnnotation), "true");
  EXPECT_EQ(wl.spec().queue_name(), "user-queue");
  ASSERT_EQ(wl.spec().pod_sets_size(), 2);
  EXPECT_EQ(wl.spec().pod_sets(0).name(), "4ebdd4a6");
  EXPECT_EQ(wl.spec().pod_sets(0).count(), 1);
  EXPECT_EQ(wl.spec().pod_sets(1).name(), "dc85db45");
  EXPECT_EQ(wl.spec().pod_sets(1).count(), 2);
  ASSERT_EQ(wl.metadata().owner_references_size(), 3);
  for (const auto& o : wl.metadata().owner_references()) EXPECT_FALSE(o.controller());
  EXPECT_THAT(c.events, ElementsAre(PodEvent{"Normal", "CreatedWorkload", "Created Workload: ns/test-group", "pod1"}));
  EXPECT_THAT(c.finalize, IsEmpty());
  EXPECT_THAT(c.delete_excess, IsEmpty());
}

TEST(ComposeGroupTest, WaitsForTotalCount) {
  GroupComposition c = ComposeGroup({Member("pod1", "3"), Member("pod2", "3")}, PodOptions{});
  EXPECT_EQ(c.outcome, GroupComposition::Outcome::kWaiting);
  EXPECT_EQ(c.error, "'test-group' group has fewer runnable pods than expected");
  EXPECT_THAT(c.events, ElementsAre(PodEvent{"Warning", "ErrWorkloadCompose",
                                             "'test-group' group has fewer runnable pods than expected", "pod1"}));
  EXPECT_FALSE(c.workload.has_value());
}

TEST(ComposeGroupTest, FailedPodsDoNotCountAndAreFinalized) {
  GroupComposition c = ComposeGroup(
      {Member("pod1"), Member("pod2").FailedAt(kT0), Member("pod3").Deleted(kT0)}, PodOptions{});
  EXPECT_EQ(c.outcome, GroupComposition::Outcome::kWaiting);
  EXPECT_THAT(c.finalize, ElementsAre("pod2", "pod3"));
}

TEST(ComposeGroupTest, InvalidGroups) {
  struct Case {
    const char* name;
    std::vector<v1::PodObservation> pods;
    std::string want;
  } cases[] = {
      {"different queues",
       {Member("pod"), Member("pod2").Queue("new-test-queue")},
       "pods 'pod' and 'pod2' has different queue names: user-queue!=new-test-queue"},
      {"different totals",
       {Member("pod1", "2"), Member("pod2", "3")},
       "pods 'pod1' and 'pod2' has different 'kueue.x-k8s.io/pod-group-total-count' values: 2!=3"},
      {"total not a number on the reference pod",
       {Member("pod1", "x"), Member("pod2", "2")},
       "strconv.Atoi: parsing \"x\": invalid syntax"},
      {"total not a number on another pod",
       {Member("pod1", "2"), Member("pod2", "x")},
       "failed to extract 'kueue.x-k8s.io/pod-group-total-count' annotation from the pod 'pod2': "
       "strconv.Atoi: parsing \"x\": invalid syntax"},
      {"group without total",
       {PodBuilder("pod1").Queue("q").Label(kGroupNameLabel, "g")},
       "failed to extract 'kueue.x-k8s.io/pod-group-total-count' annotation"},
      {"total zero",
       {Member("pod1", "0")},
       "incorrect annotation value 'kueue.x-k8s.io/pod-group-total-count=0': group total count "
       "should be greater than zero"},
      {"index out of range",
       {Member("pod1", "1").Label(kGroupPodIndexLabel, "1")},
       "incorrect label value \"1\" for Pod \"ns/pod1\": validation error: value should be less than 1"},
  };
  for (const auto& c : cases) {
    GroupComposition got = ComposeGroup(c.pods, PodOptions{});
    EXPECT_EQ(got.outcome, GroupComposition::Outcome::kInvalid) << c.name;
    EXPECT_EQ(got.error, c.want) << c.name;
    EXPECT_FALSE(got.workload.has_value()) << c.name;
  }
}

TEST(ComposeGroupTest, FailedPodsAreNotComparedForQueueOrTotal) {
  GroupComposition c = ComposeGroup(
      {Member("pod1"), Member("pod2"), Member("pod3", "5").Queue("other").FailedAt(kT0)}, PodOptions{});
  ASSERT_EQ(c.outcome, GroupComposition::Outcome::kCreate) << c.error;
  EXPECT_THAT(c.finalize, ElementsAre("pod3"));
  EXPECT_EQ(c.workload->metadata().owner_references_size(), 3);  // no excess: every pod owns it
}

TEST(ComposeGroupTest, ExcessPodsYoungestDeleted) {
  std::vector<v1::PodObservation> pods = {
      Member("a").Created(kT0 + absl::Seconds(3)),
      Member("b").Created(kT0 + absl::Seconds(1)),
      Member("c").Created(kT0 + absl::Seconds(2)),
      Member("d").Created(kT0 + absl::Seconds(4)).Deleted(kT0 + absl::Seconds(5)).Node("n"),
  };
  GroupComposition c = ComposeGroup(pods, PodOptions{});
  ASSERT_EQ(c.outcome, GroupComposition::Outcome::kCreate) << c.error;
  EXPECT_THAT(c.delete_excess, ElementsAre("a", "d"));
  // Already-terminating pods are finalized without a new deletion or event.
  EXPECT_THAT(c.events, ElementsAre(PodEvent{"Normal", "ExcessPodDeleted", "Excess pod deleted", "a"},
                                    PodEvent{"Normal", "CreatedWorkload", "Created Workload: ns/test-group", "a"}));
  EXPECT_EQ(c.workload->spec().pod_sets(0).count(), 2);
  ASSERT_EQ(c.workload->metadata().owner_references_size(), 2);
  EXPECT_EQ(c.workload->metadata().owner_references(0).name(), "b");
  EXPECT_EQ(c.workload->metadata().owner_references(1).name(), "c");
}

TEST(ComposeGroupTest, ExcessKeepsFinalizedAndUngatedPodsFirst) {
  v1::PodObservation no_finalizer = Member("old").Created(kT0 - absl::Hours(1));
  no_finalizer.clear_finalizers();
  v1::PodObservation ungated = Member("young-ungated").Created(kT0 + absl::Hours(1));
  ungated.clear_scheduling_gates();
  GroupComposition c = ComposeGroup({no_finalizer, ungated, Member("mid")}, PodOptions{});
  ASSERT_EQ(c.outcome, GroupComposition::Outcome::kCreate) << c.error;
  EXPECT_THAT(c.delete_excess, ElementsAre("old"));
}

TEST(ComposeGroupTest, RoleLimit) {
  const auto group = [](int roles) {
    std::vector<v1::PodObservation> pods;
    for (int i = 0; i < roles; ++i) {
      char role[16];
      std::snprintf(role, sizeof(role), "role-%02d", i);
      pods.push_back(Member("pod-" + std::to_string(i), std::to_string(roles)).Annotation(kRoleHashAnnotation, role));
    }
    return pods;
  };
  PodOptions kep;
  EXPECT_EQ(ComposeGroup(group(8), kep).outcome, GroupComposition::Outcome::kCreate);
  GroupComposition nine = ComposeGroup(group(9), kep);
  EXPECT_EQ(nine.outcome, GroupComposition::Outcome::kInvalid);
  EXPECT_EQ(nine.error, "pod group can't include more than 8 roles");
  PodOptions kueue;
  kueue.max_roles = 18;
  GroupComposition eighteen = ComposeGroup(group(18), kueue);
  ASSERT_EQ(eighteen.outcome, GroupComposition::Outcome::kCreate);
  EXPECT_EQ(eighteen.workload->spec().pod_sets_size(), 18);
  EXPECT_EQ(ComposeGroup(group(19), kueue).error, "pod group can't include more than 18 roles");
}

TEST(ComposeGroupTest, FastAdmissionUsesFirstRunnablePod) {
  std::vector<v1::PodObservation> pods = {
      Member("driver", "4").Annotation(kGroupFastAdmissionAnnotation, "true").Request("memory", "1Gi")};
  GroupComposition c = ComposeGroup(pods, PodOptions{});
  ASSERT_EQ(c.outcome, GroupComposition::Outcome::kCreate) << c.error;
  ASSERT_EQ(c.workload->spec().pod_sets_size(), 1);
  EXPECT_EQ(c.workload->spec().pod_sets(0).name(), "4ebdd4a6");
  EXPECT_EQ(c.workload->spec().pod_sets(0).count(), 4);
}

TEST(ComposeGroupTest, GroupPodSetsDescribeThePodsNow) {
  absl::StatusOr<std::vector<v1::PodSet>> sets = GroupPodSets(
      {Member("b", "3").Request("memory", "1Gi"), Member("a", "3"), Member("c", "3").FailedAt(kT0)}, PodOptions{});
  ASSERT_TRUE(sets.ok());
  ASSERT_EQ(sets->size(), 2u);
  EXPECT_EQ((*sets)[0].name(), "4ebdd4a6");
  EXPECT_EQ((*sets)[0].count(), 1);
  EXPECT_EQ((*sets)[1].name(), "dc85db45");
  EXPECT_EQ((*sets)[1].count(), 1);
  absl::StatusOr<std::vector<v1::PodSet>> fast = GroupPodSets(
      {Member("w", "5").Annotation(kGroupFastAdmissionAnnotation, "true")}, PodOptions{});
  ASSERT_TRUE(fast.ok());
  ASSERT_EQ(fast->size(), 1u);
  EXPECT_EQ((*fast)[0].count(), 5);
  EXPECT_EQ(GroupPodSets({Member("w", "5").Annotation(kGroupFastAdmissionAnnotation, "true").FailedAt(kT0)},
                         PodOptions{})
                .status()
                .message(),
            "failed to find a runnable pod in the group");
}

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
              ElementsAre(PodEvent{"Normal", "OwnerReferencesAdded", "Added 2 owner reference(s)", "test-group"},
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
