// Groups that declare their pod sets (kueue.x-k8s.io/pod-group-sets): the driver is queued with
// the shape of the workers it will create.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/pods/pod_group.h"
#include "server/pods/pod_test_util.h"

namespace admitd::pods {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kSparkSets[] =
    R"([{"name": "driver", "count": 1},
        {"name": "workers", "count": 3,
         "template": {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "2"}}}]}}}])";

// The driver as the webhook leaves it: group name, no total count, the declaration.
PodBuilder Driver(const std::string& name = "driver", const std::string& sets = kSparkSets) {
  PodBuilder b(name);
  b.Queue("user-queue").Label(kGroupNameLabel, "spark").Annotation(kGroupSetsAnnotation, sets).Managed().Gated();
  return b;
}

// A worker the driver creates: same group, role label, its own spec.
PodBuilder Worker(const std::string& name, const std::string& role = "workers") {
  PodBuilder b(name);
  b.Queue("user-queue").Label(kGroupNameLabel, "spark").Label(kGroupRoleLabel, role).Managed().Gated();
  b.Request("cpu", "2");
  return b;
}

v1::Workload Composed(const std::vector<v1::PodObservation>& pods) {
  GroupComposition comp = ComposeGroup(pods, PodOptions{});
  EXPECT_EQ(comp.outcome, GroupComposition::Outcome::kCreate) << comp.error;
  return comp.workload.value_or(v1::Workload());
}

TEST(DeclaredSetsTest, ParsesTheDeclarationAndFillsTheDriversTemplate) {
  absl::StatusOr<DeclaredSets> sets = ParseDeclaredSets(Driver(), PodOptions{});
  ASSERT_TRUE(sets.ok()) << sets.status();
  ASSERT_EQ(sets->sets.size(), 2u);
  EXPECT_EQ(sets->sets[0].name(), "driver");
  EXPECT_EQ(sets->sets[0].count(), 1);
  EXPECT_EQ(sets->sets[0].template_().spec().containers(0).resources().requests().at("cpu"), "1");
  EXPECT_EQ(sets->sets[1].name(), "workers");
  EXPECT_EQ(sets->sets[1].count(), 3);
  EXPECT_EQ(sets->sets[1].template_().spec().containers(0).resources().requests().at("cpu"), "2");
  EXPECT_EQ(sets->own_set, "driver");
  EXPECT_EQ(sets->Total(), 4);

  // YAML works as well as JSON; count defaults to 1.
  absl::StatusOr<DeclaredSets> yaml = ParseDeclaredSets(
      Driver("d", "- name: driver\n- name: workers\n  count: 2\n  template:\n    spec:\n      containers:\n"
                  "      - name: w\n        resources: {requests: {cpu: 500m}}\n"),
      PodOptions{});
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(yaml->sets[0].count(), 1);
  EXPECT_EQ(yaml->Total(), 3);
}

TEST(DeclaredSetsTest, RefusesBadDeclarations) {
  PodOptions two_roles;
  two_roles.max_roles = 2;
  struct Case {
    std::string name;
    v1::PodObservation pod;
    std::string want;
  } cases[] = {
      {"not a list", Driver("d", R"({"name": "driver"})"), "must be a list of pod sets"},
      {"not yaml", Driver("d", "[{"), "not YAML or JSON"},
      {"empty", Driver("d", "[]"), "at least one pod set is required"},
      {"bad count", Driver("d", R"([{"name": "driver", "count": "x"}])"), "[0].count: must be an integer"},
      {"zero count", Driver("d", R"([{"name": "driver", "count": 0}])"),
       "[0].count: Invalid value: 0: must be greater than or equal to 1"},
      {"no name", Driver("d", R"([{"count": 1}])"), "[0].name: Required value"},
      {"bad name", Driver("d", R"([{"name": "Driver"}])"), "[0].name: Invalid value: \"Driver\""},
      {"duplicate", Driver("d", R"([{"name": "a"}, {"name": "a"}])"), "[1].name: Duplicate value: \"a\""},
      {"partial", Driver("d", R"([{"name": "a", "minCount": 1}])"), "[0].minCount: Forbidden"},
      {"two without template", Driver("d", R"([{"name": "a"}, {"name": "b"}])"),
       "only one pod set may leave its template empty"},
      {"unknown field", Driver("d", R"([{"name": "a", "size": 1}])"), "[0].size: unknown field"},
      {"too many roles", Driver("d", R"([{"name": "a"}, {"name": "b", "template": {"spec": {"containers": [{"name": "x"}]}}},
                                          {"name": "c", "template": {"spec": {"containers": [{"name": "y"}]}}}])"),
       "pod group can't include more than 2 roles"},
      {"role names no set", Driver("d").Label(kGroupRoleLabel, "executor"),
       "the pod's 'kueue.x-k8s.io/pod-group-role' label \"executor\" names none of the pod sets"},
      {"driver has no set",
       Driver("d", R"([{"name": "w", "template": {"spec": {"containers": [{"name": "x"}]}}}])"),
       "the pod belongs to no pod set"},
      {"total differs", Driver("d").Annotation(kGroupTotalCountAnnotation, "3"),
       "the 'kueue.x-k8s.io/pod-group-total-count' annotation (3) differs from the pod sets' total count (4)"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<DeclaredSets> got = ParseDeclaredSets(c.pod, two_roles);
    EXPECT_FALSE(got.ok()) << c.name;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want)) << c.name;
  }
  // The YAML parser's error quotes a byte that is not UTF-8 (an escape of byte 0xF0): the message
  // carries U+FFFD instead, so that it fits a protobuf string.
  absl::StatusOr<DeclaredSets> bad_byte = ParseDeclaredSets(Driver("d", "[\"\\\xf0\"]"), two_roles);
  ASSERT_FALSE(bad_byte.ok());
  const std::string message(bad_byte.status().message());
  EXPECT_THAT(message, HasSubstr("not YAML or JSON"));
  EXPECT_EQ(message.find('\xf0'), std::string::npos) << message;
  EXPECT_THAT(message, HasSubstr("\xef\xbf\xbd"));
  // The same total is fine.
  EXPECT_TRUE(ParseDeclaredSets(Driver().Annotation(kGroupTotalCountAnnotation, "4"), PodOptions{}).ok());
}

TEST(DeclaredSetsTest, WebhookValidation) {
  PodOptions opts;
  // Neither the driver nor a worker needs a total count.
  EXPECT_THAT(ValidatePodCreate(Driver(), opts), IsEmpty());
  EXPECT_THAT(ValidatePodCreate(Worker("w0"), opts), IsEmpty());
  EXPECT_THAT(ValidatePodCreate(Driver("d", "[]"), opts),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/pod-group-sets]: Invalid value: at least one "
                          "pod set is required"));
  EXPECT_THAT(ValidatePodCreate(PodBuilder("d").Queue("q").Annotation(kGroupSetsAnnotation, kSparkSets), opts),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: the "
                          "'kueue.x-k8s.io/pod-group-sets' annotation needs the "
                          "'kueue.x-k8s.io/pod-group-name' label"));
  EXPECT_THAT(ValidatePodCreate(PodBuilder("w").Queue("q").Label(kGroupRoleLabel, "workers"), opts),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: the "
                          "'kueue.x-k8s.io/pod-group-role' label needs the 'kueue.x-k8s.io/pod-group-name' label"));
  // A plain group member still needs its total count.
  EXPECT_THAT(ValidatePodCreate(PodBuilder("m").Queue("q").Label(kGroupNameLabel, "g"), opts),
              ElementsAre(HasSubstr("kueue.x-k8s.io/pod-group-total-count]: Required value")));
  // The declaration and the role are immutable.
  EXPECT_THAT(ValidatePodUpdate(Driver(), Driver("driver", R"([{"name": "driver"}])"), opts, /*default_local_queue_exists=*/false),
              ElementsAre(HasSubstr("metadata.annotations[kueue.x-k8s.io/pod-group-sets]: Invalid value:")));
  EXPECT_THAT(ValidatePodUpdate(Worker("w0"), Worker("w0", "driver"), opts, /*default_local_queue_exists=*/false),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-role]: Invalid value: \"driver\": field "
                          "is immutable"));
}

TEST(DeclaredSetsTest, TheDriverAloneMakesTheWorkload) {
  GroupComposition comp = ComposeGroup({Driver()}, PodOptions{});
  ASSERT_EQ(comp.outcome, GroupComposition::Outcome::kCreate) << comp.error;
  const v1::Workload& wl = *comp.workload;
  EXPECT_EQ(wl.metadata().name(), "spark");
  EXPECT_EQ(wl.metadata().annotations().at(kIsGroupWorkloadAnnotation), "true");
  EXPECT_EQ(wl.metadata().annotations().at(kGroupSetsAnnotation), kSparkSets);
  EXPECT_EQ(wl.spec().queue_name(), "user-queue");
  ASSERT_EQ(wl.spec().pod_sets_size(), 2);
  EXPECT_EQ(wl.spec().pod_sets(0).name(), "driver");
  EXPECT_EQ(wl.spec().pod_sets(1).name(), "workers");
  EXPECT_EQ(wl.spec().pod_sets(1).count(), 3);
  ASSERT_EQ(wl.metadata().owner_references_size(), 1);
  EXPECT_EQ(wl.metadata().owner_references(0).name(), "driver");
  EXPECT_THAT(comp.events, ElementsAre(PodEvent{"Normal", "CreatedWorkload", "Created Workload: ns/spark", "driver"}));
}

TEST(DeclaredSetsTest, CompositionWaitsForARunnableDriverAndChecksTheGroup) {
  // Workers seen before their driver wait for it.
  GroupComposition early = ComposeGroup({Worker("w0")}, PodOptions{});
  EXPECT_EQ(early.outcome, GroupComposition::Outcome::kWaiting);
  EXPECT_EQ(early.error, "'spark' group has no runnable pod with the 'kueue.x-k8s.io/pod-group-sets' annotation");
  GroupComposition failed = ComposeGroup({Driver().FailedAt(kT0)}, PodOptions{});
  EXPECT_EQ(failed.outcome, GroupComposition::Outcome::kWaiting);

  GroupComposition queues = ComposeGroup({Driver(), Worker("w0").Queue("other")}, PodOptions{});
  EXPECT_EQ(queues.outcome, GroupComposition::Outcome::kInvalid);
  EXPECT_EQ(queues.error, "pods 'driver' and 'w0' has different queue names: user-queue!=other");

  GroupComposition two = ComposeGroup({Driver("a"), Driver("b", R"([{"name": "driver", "count": 2}])")}, PodOptions{});
  EXPECT_EQ(two.outcome, GroupComposition::Outcome::kInvalid);
  EXPECT_EQ(two.error, "pods 'a' and 'b' has different 'kueue.x-k8s.io/pod-group-sets' values");

  GroupComposition total = ComposeGroup({Driver(), Worker("w0").Annotation(kGroupTotalCountAnnotation, "2")},
                                        PodOptions{});
  EXPECT_EQ(total.outcome, GroupComposition::Outcome::kInvalid);
  EXPECT_EQ(total.error, "pods 'driver' and 'w0' has different 'kueue.x-k8s.io/pod-group-total-count' values: 4!=2");
}

TEST(DeclaredSetsTest, CompositionDeletesExcessPerSetAndLeavesUndeclaredPodsGated) {
  GroupComposition comp = ComposeGroup(
      {Driver(), Worker("w0"), Worker("w1"), Worker("w2"), Worker("w3").Created(kT0 + absl::Seconds(5)),
       Worker("x0", "executors")},
      PodOptions{});
  ASSERT_EQ(comp.outcome, GroupComposition::Outcome::kCreate) << comp.error;
  EXPECT_THAT(comp.delete_excess, ElementsAre("w3"));  // the youngest worker
  EXPECT_THAT(comp.undeclared, ElementsAre("x0"));
  EXPECT_EQ(comp.workload->metadata().owner_references_size(), 4);  // driver, w0..w2
  EXPECT_EQ(UndeclaredRoleMessage(Worker("x0", "executors")),
            "pod 'x0' has the role \"executors\", which is none of the pod sets in "
            "'kueue.x-k8s.io/pod-group-sets': it stays gated");
}

TEST(DeclaredSetsTest, RolesComeFromLabelsTheDeclarationOrTheTemplateHash) {
  const v1::Workload wl = Composed({Driver()});
  const RoleResolver roles = RoleResolver::ForWorkload(wl);
  ASSERT_TRUE(roles.declared());
  EXPECT_EQ(*roles.RoleOf(Driver()), "driver");
  EXPECT_EQ(*roles.RoleOf(Worker("w0")), "workers");
  EXPECT_EQ(*roles.RoleOf(Worker("w0", "nope")), "");
  // Without a label, a worker matching the workers' template hash belongs to it...
  v1::PodObservation unlabeled = PodBuilder("u").Queue("user-queue").Label(kGroupNameLabel, "spark").Request("cpu", "2");
  EXPECT_EQ(*roles.RoleOf(unlabeled), "workers");
  // ...but a pod shaped like the driver never takes the driver's set by hash.
  v1::PodObservation like_driver = PodBuilder("v").Queue("user-queue").Label(kGroupNameLabel, "spark");
  EXPECT_EQ(*roles.RoleOf(like_driver), "");
  // A Kueue group's roles stay role hashes.
  EXPECT_FALSE(RoleResolver::ForWorkload(v1::Workload()).declared());
  EXPECT_EQ(*RoleResolver().RoleOf(PodBuilder("p")), "dc85db45");
}

TEST(DeclaredSetsTest, MatchingKeepsWorkersAsTheyComeAndWaitsOnlyForFailedOnes) {
  const v1::Workload wl = Composed({Driver()});
  // Only the driver: nothing is missing yet.
  absl::StatusOr<GroupMatch> alone = MatchGroupWorkload({Driver()}, wl, false, kT0, PodOptions{});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(alone->equivalent);
  EXPECT_EQ(alone->absent_pods, 0);

  // Two workers arrive, one more than declared later; one fails.
  absl::StatusOr<GroupMatch> m = MatchGroupWorkload(
      {Driver().Phase(v1::POD_PHASE_RUNNING), Worker("w0"), Worker("w1").FailedAt(kT0), Worker("x", "nope")},
      wl, false, kT0, PodOptions{});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->equivalent);
  EXPECT_EQ(m->absent_pods, 1);  // w1 failed and is not replaced
  EXPECT_THAT(m->kept, ElementsAre("driver", "w0", "w1"));
  EXPECT_THAT(m->owners_to_add, ElementsAre("w0", "w1"));
  EXPECT_THAT(m->undeclared, ElementsAre("x"));

  absl::StatusOr<GroupMatch> excess = MatchGroupWorkload(
      {Driver(), Worker("w0"), Worker("w1"), Worker("w2"), Worker("w3").Created(kT0 + absl::Seconds(1))}, wl,
      false, kT0, PodOptions{});
  ASSERT_TRUE(excess.ok());
  EXPECT_THAT(excess->delete_excess, ElementsAre("w3"));

  // A new driver with another declaration makes the Workload stale.
  absl::StatusOr<GroupMatch> stale =
      MatchGroupWorkload({Driver("driver", R"([{"name": "driver", "count": 1}])")}, wl, false, kT0, PodOptions{});
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->equivalent);
}

TEST(DeclaredSetsTest, UngatesWorkersIntoTheirSet) {
  v1::Workload wl = Composed({Driver()});
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ungate =
      PodsToUngate({Driver(), Worker("w0"), Worker("x", "nope")}, wl, /*is_group=*/true);
  ASSERT_TRUE(ungate.ok()) << ungate.status();
  EXPECT_THAT(*ungate, ElementsAre(std::pair<std::string, std::string>("driver", "driver"),
                                   std::pair<std::string, std::string>("w0", "workers")));
}

TEST(DeclaredSetsTest, FinishedWhenTheDriverSucceededAndNothingRuns) {
  const v1::Workload wl = Composed({Driver()});
  const auto finished = [&](std::vector<v1::PodObservation> pods) {
    return GroupFinished(std::move(pods), PodOptions{}, &wl);
  };
  EXPECT_FALSE(finished({Driver().Phase(v1::POD_PHASE_RUNNING), Worker("w0").Phase(v1::POD_PHASE_RUNNING)}).finished);
  // The driver is done but a worker still runs.
  EXPECT_FALSE(finished({Driver().Phase(v1::POD_PHASE_SUCCEEDED), Worker("w0").Phase(v1::POD_PHASE_RUNNING)}).finished);
  // The driver is done and its workers were stopped.
  FinishedState done = finished({Driver().Phase(v1::POD_PHASE_SUCCEEDED), Worker("w0").FailedAt(kT0)});
  EXPECT_TRUE(done.finished);
  EXPECT_EQ(done.reason, "Succeeded");
  EXPECT_EQ(done.message, "Pods succeeded: 1/4.");
  // A failed driver waits for its replacement, as a failed pod of any group does.
  EXPECT_FALSE(finished({Driver().FailedAt(kT0), Worker("w0").FailedAt(kT0)}).finished);
  // Every declared pod succeeded.
  EXPECT_TRUE(finished({Driver().Phase(v1::POD_PHASE_SUCCEEDED), Worker("w0").Phase(v1::POD_PHASE_SUCCEEDED),
                        Worker("w1").Phase(v1::POD_PHASE_SUCCEEDED), Worker("w2").Phase(v1::POD_PHASE_SUCCEEDED)})
                  .finished);
}

TEST(DeclaredSetsTest, SucceededWorkersAreReclaimableByTheirSet) {
  const v1::Workload wl = Composed({Driver()});
  absl::StatusOr<std::vector<v1::ReclaimablePod>> r = ReclaimablePods(
      {Driver().Phase(v1::POD_PHASE_RUNNING), Worker("w0").Phase(v1::POD_PHASE_SUCCEEDED),
       Worker("w1").Phase(v1::POD_PHASE_SUCCEEDED), Worker("x", "nope").Phase(v1::POD_PHASE_SUCCEEDED)},
      PodOptions{}, &wl);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name(), "workers");
  EXPECT_EQ((*r)[0].count(), 2);
}

}  // namespace
}  // namespace admitd::pods
