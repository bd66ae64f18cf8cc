// Namespaces with labels and ClusterQueue namespaceSelectors evaluated against them as Kubernetes
// evaluates a label selector; a namespace created or relabelled later requeues what it unblocks.
#include "server/engine/cluster_queue.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders

v1::QueueObject NamespaceObject(const std::string& name,
                                const std::map<std::string, std::string>& labels) {
  v1::QueueObject o;
  o.mutable_namespace_()->mutable_metadata()->set_name(name);
  for (const auto& [k, v] : labels) (*o.mutable_namespace_()->mutable_metadata()->mutable_labels())[k] = v;
  return o;
}

v1::LabelSelectorRequirement Requirement(const std::string& key, const std::string& op,
                                         const std::vector<std::string>& values = {}) {
  v1::LabelSelectorRequirement r;
  r.set_key(key);
  r.set_operator_(op);
  for (const std::string& v : values) r.add_values(v);
  return r;
}

ClusterQueueState Selecting(const v1::LabelSelector& selector) {
  ClusterQueueState cq;
  *cq.object.mutable_cluster_queue()->mutable_spec()->mutable_namespace_selector() = selector;
  return cq;
}

google::protobuf::Map<std::string, std::string> Labels(
    const std::map<std::string, std::string>& labels) {
  return google::protobuf::Map<std::string, std::string>(labels.begin(), labels.end());
}

TEST(NamespaceSelectorTest, EvaluatesAsKubernetesDoes) {
  const auto team_a = Labels({{"team", "a"}, {"tier", "gold"}});
  const auto team_b = Labels({{"team", "b"}});
  const auto none = Labels({});
  v1::LabelSelector s;
  EXPECT_TRUE(Selecting(s).SelectsNamespace(none));  // {} selects every namespace
  EXPECT_FALSE(ClusterQueueState().SelectsNamespace(team_a));  // unset selects none

  (*s.mutable_match_labels())["team"] = "a";
  EXPECT_TRUE(Selecting(s).SelectsNamespace(team_a));
  EXPECT_FALSE(Selecting(s).SelectsNamespace(team_b));
  EXPECT_FALSE(Selecting(s).SelectsNamespace(none));

  v1::LabelSelector in;
  *in.add_match_expressions() = Requirement("team", "In", {"a", "c"});
  EXPECT_TRUE(Selecting(in).SelectsNamespace(team_a));
  EXPECT_FALSE(Selecting(in).SelectsNamespace(team_b));
  EXPECT_FALSE(Selecting(in).SelectsNamespace(none));

  v1::LabelSelector not_in;
  *not_in.add_match_expressions() = Requirement("team", "NotIn", {"a"});
  EXPECT_FALSE(Selecting(not_in).SelectsNamespace(team_a));
  EXPECT_TRUE(Selecting(not_in).SelectsNamespace(team_b));
  EXPECT_TRUE(Selecting(not_in).SelectsNamespace(none));  // a missing key is not in the set

  v1::LabelSelector exists;
  *exists.add_match_expressions() = Requirement("tier", "Exists");
  EXPECT_TRUE(Selecting(exists).SelectsNamespace(team_a));
  EXPECT_FALSE(Selecting(exists).SelectsNamespace(team_b));

  v1::LabelSelector absent;
  *absent.add_match_expressions() = Requirement("tier", "DoesNotExist");
  EXPECT_FALSE(Selecting(absent).SelectsNamespace(team_a));
  EXPECT_TRUE(Selecting(absent).SelectsNamespace(team_b));

  // Every term must hold.
  v1::LabelSelector both = s;
  *both.add_match_expressions() = Requirement("tier", "In", {"silver"});
  EXPECT_FALSE(Selecting(both).SelectsNamespace(team_a));
}

class NamespacesTest : public EngineApiTest {
 protected:
  // Flavor "default", ClusterQueue "cq" selecting namespaces labelled team=a, LocalQueue lq in
  // namespace "ns".
  void SelectingTeamA() {
    ASSERT_TRUE(Apply(FlavorObject("default")).ok());
    v1::QueueObject cq = ClusterQueueObject("cq", {"default"});
    (*cq.mutable_cluster_queue()->mutable_spec()->mutable_namespace_selector()->mutable_match_labels())
        ["team"] = "a";
    ASSERT_TRUE(Apply(cq).ok());
    ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  }
};

TEST_F(NamespacesTest, ANamespaceCreatedLaterWithMatchingLabelsRequeuesItsWorkloads) {
  SelectingTeamA();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  EXPECT_EQ(Schedule(), 0);
  const v1::Condition pending = Condition("a", kQuotaReserved);
  EXPECT_EQ(pending.reason(), "Misconfigured");
  EXPECT_EQ(pending.message(), "workload namespace doesn't match ClusterQueue selector");

  // Another team's label changes nothing; team=a lets it in.
  ASSERT_TRUE(Apply(NamespaceObject("ns", {{"team", "b"}})).ok());
  EXPECT_EQ(Schedule(), 0);
  ASSERT_TRUE(Apply(NamespaceObject("ns", {{"team", "a"}})).ok());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_TRUE(Get("a").status().has_admission());

  // Relabelled away: what is admitted stays, what comes next waits.
  ASSERT_TRUE(Apply(NamespaceObject("ns", {{"team", "c"}})).ok());
  EXPECT_TRUE(Get("a").status().has_admission());
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  EXPECT_EQ(Schedule(), 0);
  EXPECT_EQ(Condition("b", kQuotaReserved).reason(), "Misconfigured");
}

TEST_F(NamespacesTest, TheNameLabelIsSetByTheServerAndADeletedNamespaceKeepsOnlyIt) {
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  v1::QueueObject cq = ClusterQueueObject("cq", {"default"});
  *cq.mutable_cluster_queue()->mutable_spec()->mutable_namespace_selector()->add_match_expressions() =
      Requirement("kubernetes.io/metadata.name", "In", {"ns"});
  ASSERT_TRUE(Apply(cq).ok());
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  absl::StatusOr<v1::ApplyResponse> applied = Apply(NamespaceObject("ns", {{"team", "a"}}));
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->object().namespace_().metadata().labels().at("kubernetes.io/metadata.name"),
            "ns");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  EXPECT_EQ(Schedule(), 1);

  v1::DeleteObjectRequest del;
  del.set_kind(v1::OBJECT_KIND_NAMESPACE);
  del.set_name("ns");
  ASSERT_TRUE(engine_.Delete(del, Now()).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  EXPECT_EQ(Schedule(), 1);  // still selected by its name
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_NAMESPACE);
  get.set_name("ns");
  EXPECT_EQ(engine_.Get(get).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NamespacesTest, BadNamespacesAreRefusedWithTheField) {
  absl::StatusOr<v1::ApplyResponse> bad = Apply(NamespaceObject("Not_A_Label", {}));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldViolationsOf(bad.status())[0].field, "metadata.name");
  bad = Apply(NamespaceObject("ns", {{"kubernetes.io/metadata.name", "other"}}));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldViolationsOf(bad.status())[0].field,
            "metadata.labels[kubernetes.io/metadata.name]");
  bad = Apply(NamespaceObject("ns", {{"bad key!", "x"}}));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  v1::ListObjectsRequest list;
  list.set_kind(v1::OBJECT_KIND_NAMESPACE);
  EXPECT_EQ(engine_.List(list)->objects_size(), 0);
}

}  // namespace
}  // namespace admitd::engine
