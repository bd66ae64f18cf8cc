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
  EXPECT_THAT(ValidatePodUpdate(old_pod, flipped, PodOptions{}, false),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/retriable-in-group]: Forbidden: "
                          "unretriable pod group can't be converted to retriable"));
  v1::PodObservation renamed = PodBuilder("p").Group("h", "2").Annotation(kRetriableInGroupAnnotation, "false");
  EXPECT_THAT(ValidatePodUpdate(old_pod, renamed, PodOptions{}, false),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"h\": "
                          "field is immutable"));
  EXPECT_THAT(ValidatePodUpdate(old_pod, old_pod, PodOptions{}, false), IsEmpty());
}

// jobframework's validateUpdateForQueueName: the queue may change while the pod is gated (or
// terminated), never once it runs, and is never emptied where a `default` LocalQueue exists.
TEST(PodValidationTest, QueueNameUpdates) {
  const v1::PodObservation gated = PodBuilder("p").Queue("lq").Gated();
  const v1::PodObservation running = PodBuilder("p").Queue("lq").Phase(v1::POD_PHASE_RUNNING);
  EXPECT_THAT(ValidatePodUpdate(gated, PodBuilder("p").Queue("other").Gated(), PodOptions{}, true),
              IsEmpty());
  EXPECT_THAT(ValidatePodUpdate(running, PodBuilder("p").Queue("other").Phase(v1::POD_PHASE_RUNNING),
                                PodOptions{}, false),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other\": "
                          "field is immutable"));
  EXPECT_THAT(ValidatePodUpdate(running, PodBuilder("p").Queue("other").Phase(v1::POD_PHASE_FAILED),
                                PodOptions{}, false),
              IsEmpty());
  EXPECT_THAT(ValidatePodUpdate(gated, PodBuilder("p").Gated(), PodOptions{}, true),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": "
                          "queue-name must not be empty in namespace with default queue"));
  EXPECT_THAT(ValidatePodUpdate(gated, PodBuilder("p").Gated(), PodOptions{}, false), IsEmpty());
  // Removing it from a running pod: both errors, in Kueue's order.
  EXPECT_THAT(ValidatePodUpdate(running, PodBuilder("p").Phase(v1::POD_PHASE_RUNNING),
                                PodOptions{}, true),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": "
                          "field is immutable",
                          "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": "
                          "queue-name must not be empty in namespace with default queue"));
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
  kep.max_roles = 8;
  EXPECT_EQ(ComposeGroup(group(8), kep).outcome, GroupComposition::Outcome::kCreate);
  GroupComposition nine = ComposeGroup(group(9), kep);
  EXPECT_EQ(nine.outcome, GroupComposition::Outcome::kInvalid);
  EXPECT_EQ(nine.error, "pod group can't include more than 8 roles");
  PodOptions kueue;  // the default is Kueue's MaxPodSets
  EXPECT_EQ(kueue.max_roles, 18);
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

}  // namespace
}  // namespace admitd::pods
