// The pod webhook's rules: Kueue's mutation applied to pods as JSON patches, its error texts
// exactly (and admitd's for declared pod sets), the role hash against Kueue's known values, the
// no-op when the pod integration is off, and the AdmissionReview answers.
#include "clients/shim/integrations/pod/pod_webhook.h"

#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/integrations/pod/pod_webhook_role_hash.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/webhook/webhook_server.h"
#include "clients/shim/webhook/webhook_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using webhook_testing::FakeContext;
using webhook_testing::Texts;
using webhook_testing::kDns1123;

constexpr char kBothLabel[] =
    "both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the "
    "'kueue.x-k8s.io/pod-group-name' label should be set";
constexpr char kSets[] = "kueue.x-k8s.io/pod-group-sets";
constexpr char kSetsPath[] = "metadata.annotations[kueue.x-k8s.io/pod-group-sets]";

// A pod as the API server hands it to the webhook: one container asking for 1 CPU.
nlohmann::json Pod(const nlohmann::json& labels = nlohmann::json::object(),
                   const nlohmann::json& annotations = nlohmann::json::object()) {
  nlohmann::json pod = nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team-a"},
    "spec": {"restartPolicy": "Never",
             "containers": [{"name": "c", "image": "busybox",
                             "resources": {"requests": {"cpu": "1"}}}]}})");
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod;
}

nlohmann::json Gated(nlohmann::json pod) {
  pod["spec"]["schedulingGates"] = {{{"name", "kueue.x-k8s.io/admission"}}};
  return pod;
}

class PodWebhookTest : public ::testing::Test {
 protected:
  PodWebhookTest() { options_.integration_enabled = true; }
  std::vector<nlohmann::json> Ops(const nlohmann::json& pod) {
    return DefaultPod(pod, context_, options_);
  }
  nlohmann::json Defaulted(const nlohmann::json& pod) {
    return pod.patch(nlohmann::json(Ops(pod)));
  }
  std::vector<std::string> Create(const nlohmann::json& pod) {
    return Texts(ValidatePodCreate(pod, context_, options_));
  }
  std::vector<std::string> Update(const nlohmann::json& old_pod, const nlohmann::json& new_pod) {
    return Texts(ValidatePodUpdate(old_pod, new_pod, context_, options_));
  }
  FakeContext context_;
  PodWebhookOptions options_;
};

// ---- Role hash ----------------------------------------------------------------------------------

nlohmann::json CpuSpec(const std::string& cpu) {
  return {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}};
}

TEST(PodRoleHashTest, KueuesKnownHashes) {
  // Kueue's test pod: requests set but empty (a9f06f3a in pod_webhook_test.go), and absent.
  EXPECT_EQ(PodRoleHash(nlohmann::json::parse(
                R"({"containers": [{"name": "c", "image": "pause",
                    "resources": {"requests": {}, "limits": {}}}], "restartPolicy": "Never"})")),
            "a9f06f3a");
  EXPECT_EQ(PodRoleHash({{"containers", {{{"name", "c"}}}}}), "7aa6c7b8");
  EXPECT_EQ(PodRoleHash(CpuSpec("1")), "dc85db45");
  nlohmann::json spec = CpuSpec("1");
  spec["containers"][0]["resources"]["requests"]["memory"] = "1Gi";
  EXPECT_EQ(PodRoleHash(spec), "4ebdd4a6");
  EXPECT_EQ(PodRoleHash(CpuSpec("2")), "21a4619c");
  spec = CpuSpec("1");
  spec["nodeSelector"] = {{"pool", "a"}};
  EXPECT_EQ(PodRoleHash(spec), "2aac6836");
  spec = CpuSpec("1");
  spec["priority"] = 100;
  EXPECT_EQ(PodRoleHash(spec), "cb78a3cb");
  spec = CpuSpec("1");
  spec["resources"] = {{"requests", {{"cpu", "1"}}}};
  EXPECT_EQ(PodRoleHash(spec), "0927209e");
  spec = CpuSpec("1");
  spec["containers"].push_back(spec["containers"][0]);
  EXPECT_EQ(PodRoleHash(spec), "0910f76b");
}

TEST(PodRoleHashTest, OnlyTheAdmissionShapeCounts) {
  nlohmann::json spec = CpuSpec("1");
  spec["containers"][0]["image"] = "other";
  spec["containers"][0]["env"] = {{{"name", "A"}, {"value", "b"}}};
  spec["containers"][0]["resources"]["limits"] = {{"cpu", "4"}};
  spec["volumes"] = {{{"name", "v"}, {"persistentVolumeClaim", {{"claimName", "c1"}}}}};
  spec["schedulingGates"] = {{{"name", "kueue.x-k8s.io/admission"}}};
  spec["priorityClassName"] = "high";
  EXPECT_EQ(PodRoleHash(spec), "dc85db45");
  EXPECT_EQ(PodRoleHash(nlohmann::json()), PodRoleHash(nlohmann::json::object()));
}

TEST(PodRoleHashTest, GoFieldOrderOmitEmptyAndEscaping) {
  nlohmann::json spec = nlohmann::json::parse(R"({
    "runtimeClassName": "gvisor",
    "resourceClaims": [{"resourceClaimTemplateName": "tpl", "name": "gpu"}],
    "topologySpreadConstraints": [{"labelSelector": {"matchLabels": {"app": "x"}},
      "whenUnsatisfiable": "DoNotSchedule", "topologyKey": "zone", "maxSkew": 1}],
    "tolerations": [{"tolerationSeconds": 30, "effect": "NoSchedule", "operator": "Exists",
                     "key": "gpu", "value": ""}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"values": ["a&b"], "operator": "In",
                                                    "key": "zone"}]}]}}},
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}},
                    "ports": [{"protocol": "TCP", "containerPort": 8080, "name": "http",
                               "hostPort": 0}]}]})");
  EXPECT_EQ(
      PodRoleShapeJson(spec),
      R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
      R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a\u0026b"]}]}]}}},)"
      R"("containers":[{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],)"
      R"("resources":{"requests":{"cpu":"1"}}}],"initContainers":null,"nodeSelector":null,)"
      R"("overhead":null,"priority":null,"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"tpl"}],)"
      R"("runtimeClassName":"gvisor","tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule",)"
      R"("tolerationSeconds":30}],"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",)"
      R"("whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"x"}}}]}})");
  // Required (not omitempty) fields are written with their zero value; empty lists stay [].
  EXPECT_EQ(PodRoleShapeJson(nlohmann::json::parse(
                R"({"tolerations": [], "topologySpreadConstraints": [{}], "nodeSelector": {}})")),
            R"({"spec":{"affinity":null,"containers":null,"initContainers":null,"nodeSelector":{},)"
            R"("overhead":null,"priority":null,"resourceClaims":null,"runtimeClassName":null,)"
            R"("tolerations":[],"topologySpreadConstraints":[{"maxSkew":0,"topologyKey":"",)"
            R"("whenUnsatisfiable":""}]}})");
}

// ---- Mutation -----------------------------------------------------------------------------------

TEST_F(PodWebhookTest, AQueuedPodIsLabelledFinalizedGatedAndHashed) {
  const nlohmann::json pod = Pod({{"kueue.x-k8s.io/queue-name", "user-queue"}});
  EXPECT_EQ(nlohmann::json(Ops(pod)), nlohmann::json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1managed", "value": "true"},
    {"op": "add", "path": "/metadata/finalizers", "value": ["kueue.x-k8s.io/managed"]},
    {"op": "add", "path": "/spec/schedulingGates",
     "value": [{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}]},
    {"op": "add", "path": "/metadata/annotations",
     "value": {"kueue.x-k8s.io/role-hash": "dc85db45"}}])"));
  const nlohmann::json got = Defaulted(pod);
  EXPECT_EQ(got["metadata"]["labels"], nlohmann::json({{"kueue.x-k8s.io/queue-name", "user-queue"},
                                                       {"kueue.x-k8s.io/managed", "true"}}));
  EXPECT_EQ(got["metadata"]["finalizers"], nlohmann::json({"kueue.x-k8s.io/managed"}));
  EXPECT_EQ(got["spec"]["schedulingGates"],
            nlohmann::json::parse(
                R"([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])"));
  EXPECT_EQ(got["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"], "dc85db45");
  // Mutated once, it needs nothing more; and what it became passes validation.
  EXPECT_THAT(Ops(got), IsEmpty());
  EXPECT_THAT(Create(got), IsEmpty());
}

TEST_F(PodWebhookTest, ExistingListsAndMapsAreAppendedTo) {
  nlohmann::json pod = Pod({{"kueue.x-k8s.io/queue-name", "q"}, {"a/b~c", "x"}},
                           {{"kueue.x-k8s.io/role-hash", "abcdef01"}, {"note", "n"}});
  pod["metadata"]["finalizers"] = {"example.com/keep"};
  pod["spec"]["schedulingGates"] = {{{"name", "example.com/first"}}};
  const nlohmann::json got = Defaulted(pod);
  EXPECT_EQ(got["metadata"]["finalizers"],
            nlohmann::json({"example.com/keep", "kueue.x-k8s.io/managed"}));
  // Gates go after the user's.
  EXPECT_EQ(got["spec"]["schedulingGates"], nlohmann::json::parse(R"([
    {"name": "example.com/first"}, {"name": "kueue.x-k8s.io/admission"},
    {"name": "kueue.x-k8s.io/topology"}])"));
  // A role hash already there is kept; the other keys stay.
  EXPECT_EQ(got["metadata"]["annotations"],
            nlohmann::json({{"kueue.x-k8s.io/role-hash", "abcdef01"}, {"note", "n"}}));
  EXPECT_EQ(got["metadata"]["labels"]["a/b~c"], "x");
  EXPECT_EQ(got["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
  // A gate or finalizer already present is not added twice.
  pod["metadata"]["finalizers"].push_back("kueue.x-k8s.io/managed");
  pod["spec"]["schedulingGates"].push_back({{"name", "kueue.x-k8s.io/topology"}});
  EXPECT_EQ(nlohmann::json(Ops(pod)), nlohmann::json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1managed", "value": "true"},
    {"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "kueue.x-k8s.io/admission"}}
  ])"));
  // A pod without metadata maps or spec at all still takes the patch.
  options_.manage_jobs_without_queue_name = true;
  const nlohmann::json bare = {{"metadata", {{"name", "b"}, {"namespace", "n"}}}};
  const nlohmann::json defaulted = Defaulted(bare);
  EXPECT_EQ(defaulted["metadata"]["labels"], nlohmann::json({{"kueue.x-k8s.io/managed", "true"}}));
  EXPECT_EQ(defaulted["spec"]["schedulingGates"].size(), 2u);
  EXPECT_EQ(defaulted["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"], "b18935ae");
}

TEST_F(PodWebhookTest, TheDefaultQueueAndPriorityClass) {
  context_.queues = {"team-a"};
  context_.priority_class = true;
  nlohmann::json got = Defaulted(Pod());
  EXPECT_EQ(got["metadata"]["labels"], nlohmann::json({{"kueue.x-k8s.io/queue-name", "default"},
                                                       {"kueue.x-k8s.io/priority-class", "default"},
                                                       {"kueue.x-k8s.io/managed", "true"}}));
  // A queue or class already named is kept.
  got = Defaulted(
      Pod({{"kueue.x-k8s.io/queue-name", "q"}, {"kueue.x-k8s.io/priority-class", "high"}}));
  EXPECT_EQ(got["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "q");
  EXPECT_EQ(got["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "high");
  options_.workload_priority_class_defaulting = false;
  EXPECT_FALSE(Defaulted(Pod())["metadata"]["labels"].contains("kueue.x-k8s.io/priority-class"));
}

TEST_F(PodWebhookTest, APodWithoutAQueueIsNotManaged) {
  EXPECT_THAT(Ops(Pod()), IsEmpty());
  // The default priority class goes into the pod's own label map, which an unmanaged pod keeps
  // only when it had one.
  context_.priority_class = true;
  EXPECT_THAT(Ops(Pod()), IsEmpty());
  EXPECT_EQ(nlohmann::json(Ops(Pod({{"app", "x"}}))), nlohmann::json::parse(R"([
    {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"}
  ])"));
  // manageJobsWithoutQueueName takes every pod of a managed namespace.
  options_.manage_jobs_without_queue_name = true;
  EXPECT_EQ(Defaulted(Pod())["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
}

TEST_F(PodWebhookTest, UnmanagedNamespacesAndOwnedPodsAreLeftAlone) {
  context_.queues = {"team-a", "kube-system"};
  nlohmann::json system = Pod({{"kueue.x-k8s.io/queue-name", "q"}});
  system["metadata"]["namespace"] = "kube-system";
  EXPECT_THAT(Ops(system), IsEmpty());
  nlohmann::json child = Pod({{"kueue.x-k8s.io/queue-name", "q"}});
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "batch/v1"},
                                           {"kind", "Job"},
                                           {"name", "j"},
                                           {"uid", "u"},
                                           {"controller", true}}};
  EXPECT_THAT(Ops(child), IsEmpty());
  // An owner of a kind the shim does not integrate (a ReplicaSet) does not count.
  child["metadata"]["ownerReferences"][0]["apiVersion"] = "apps/v1";
  child["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet";
  EXPECT_EQ(Defaulted(child)["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
}

TEST_F(PodWebhookTest, APodItsParentSuspendsIsOnlyGatedAndHashed) {
  nlohmann::json pod = Pod({{"kueue.x-k8s.io/queue-name", "q"}},
                           {{"kueue.x-k8s.io/pod-suspending-parent", "deployment"}});
  pod["metadata"]["namespace"] = "kube-system";  // not even the namespace is looked at
  const nlohmann::json got = Defaulted(pod);
  EXPECT_FALSE(got["metadata"]["labels"].contains("kueue.x-k8s.io/managed"));
  EXPECT_FALSE(got["metadata"].contains("finalizers"));
  EXPECT_EQ(got["spec"]["schedulingGates"].size(), 2u);
  EXPECT_EQ(got["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"], "dc85db45");
}

TEST_F(PodWebhookTest, TopologyAwareScheduling) {
  nlohmann::json pod = Pod({{"kueue.x-k8s.io/queue-name", "q"}, {"apps/index", "3"}},
                           {{"kueue.x-k8s.io/pod-group-pod-index-label", "apps/index"}});
  EXPECT_EQ(Defaulted(pod)["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"], "3");
  // The named label missing: the index label is set, empty.
  pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-pod-index-label"] = "missing";
  EXPECT_EQ(Defaulted(pod)["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"], "");
  options_.topology_aware_scheduling = false;
  const nlohmann::json got = Defaulted(pod);
  EXPECT_EQ(got["spec"]["schedulingGates"],
            nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/admission"}])"));
  EXPECT_FALSE(got["metadata"]["labels"].contains("kueue.x-k8s.io/pod-group-pod-index"));
}

TEST_F(PodWebhookTest, WithThePodIntegrationOffNothingHappens) {
  options_.integration_enabled = false;
  context_.queues = {"team-a"};
  EXPECT_THAT(Ops(Pod({{"kueue.x-k8s.io/queue-name", "q"}})), IsEmpty());
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/managed", "false"}})), IsEmpty());
  EXPECT_THAT(Update(Pod(), Pod({{"kueue.x-k8s.io/queue-name", "q"}})), IsEmpty());
}

// ---- Validation on CREATE -----------------------------------------------------------------------

TEST_F(PodWebhookTest, ManagedLabelAndCommonRules) {
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/managed", "false"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value "
                          "can only be 'true'"));
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/queue-name", "Q"}})),
              ElementsAre(absl::StrCat(
                  "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Q\": ", kDns1123)));
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/max-exec-time-seconds", "0"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "
                          "0: should be greater than 0"));
  EXPECT_THAT(Create(Pod({}, {{"kueue.x-k8s.io/elastic-job", "true"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic "
                          "job is not supported for \"/v1, Kind=Pod\""));
  EXPECT_THAT(Create(Pod({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/x,a.io/x"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid "
                          "value: \"a.io/x,a.io/x\": duplicate gate name: a.io/x"));
  EXPECT_THAT(Create(Pod({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "W"}})),
              ElementsAre(absl::StrCat("metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]"
                                       ": Invalid value: \"W\": ",
                                       kDns1123)));
  // Several at once, aggregated in Kueue's order.
  EXPECT_EQ(
      AggregateErrors(ValidatePodCreate(
          Pod({{"kueue.x-k8s.io/queue-name", "Q"}, {"kueue.x-k8s.io/managed", "yes"}}), context_,
          options_)),
      absl::StrCat("[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Q\": ", kDns1123,
                   ", metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value can "
                   "only be 'true']"));
}

TEST_F(PodWebhookTest, GroupNameAndTotalCount) {
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/pod-group-name", "g"}},
                         {{"kueue.x-k8s.io/pod-group-total-count", "2"}})),
              IsEmpty());
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/pod-group-name", "g"}})),
              ElementsAre(absl::StrCat("metadata.annotations[kueue.x-k8s.io/pod-group-total-count]"
                                       ": Required value: ",
                                       kBothLabel)));
  EXPECT_THAT(Create(Pod({}, {{"kueue.x-k8s.io/pod-group-total-count", "2"}})),
              ElementsAre(absl::StrCat(
                  "metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: ", kBothLabel)));
  // The group name given as an annotation (WorkloadIdentifierAnnotations) wins over the label.
  EXPECT_THAT(
      Create(
          Pod({{"kueue.x-k8s.io/pod-group-name", "ok"}}, {{"kueue.x-k8s.io/pod-group-name", "G"}})),
      ElementsAre(
          absl::StrCat("metadata.annotations[kueue.x-k8s.io/pod-group-name]: Invalid value: "
                       "\"G\": ",
                       kDns1123),
          "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value: both the "
          "'kueue.x-k8s.io/pod-group-total-count' annotation and the "
          "'kueue.x-k8s.io/pod-group-name' annotation should be set"));
  options_.workload_identifier_annotations = false;
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/pod-group-name", "ok"}},
                         {{"kueue.x-k8s.io/pod-group-name", "G"}})),
              ElementsAre(absl::StrCat("metadata.annotations[kueue.x-k8s.io/pod-group-total-count]"
                                       ": Required value: ",
                                       kBothLabel)));
  options_.workload_identifier_annotations = true;
  const auto total = [&](const std::string& count) {
    return Create(Pod({{"kueue.x-k8s.io/pod-group-name", "g"}},
                      {{"kueue.x-k8s.io/pod-group-total-count", count}}));
  };
  EXPECT_THAT(total("two"),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Invalid "
                          "value: \"two\": strconv.Atoi: parsing \"two\": invalid syntax"));
  EXPECT_THAT(total("0"),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Invalid "
                          "value: \"0\": incorrect annotation value "
                          "'kueue.x-k8s.io/pod-group-total-count=0': group total count should be "
                          "greater than zero"));
  // A prebuilt Workload must be the group's.
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/pod-group-name", "g"}},
                         {{"kueue.x-k8s.io/pod-group-total-count", "1"},
                          {"kueue.x-k8s.io/prebuilt-workload-name", "w"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: Invalid "
                          "value: \"w\": prebuilt workload and pod group should be equal"));
}

TEST_F(PodWebhookTest, TopologyRequestAnnotationsOnThePod) {
  EXPECT_THAT(
      Create(Pod({}, {{"kueue.x-k8s.io/podset-required-topology", "rack"},
                      {"kueue.x-k8s.io/podset-preferred-topology", "block"}})),
      ElementsAre("metadata.annotations: Invalid value: must not contain more than one topology "
                  "annotation: [\"kueue.x-k8s.io/podset-required-topology\", "
                  "\"kueue.x-k8s.io/podset-preferred-topology\", "
                  "\"kueue.x-k8s.io/podset-unconstrained-topology\"]"));
  EXPECT_THAT(Create(Pod({}, {{"kueue.x-k8s.io/podset-slice-size", "2"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/podset-slice-size]: Forbidden: may "
                          "not be set when 'kueue.x-k8s.io/podset-slice-required-topology' is not "
                          "specified"));
  EXPECT_THAT(Create(Pod({}, {{"kueue.x-k8s.io/podset-unconstrained-topology", "maybe"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/podset-unconstrained-topology]: "
                          "Invalid value: \"maybe\": must be a boolean value"));
}

TEST(PodWebhookTasTest, SliceConstraintsAnnotation) {
  const auto errs = [](const std::string& text, bool multi_layer = true) {
    return Texts(TasPodSetRequestErrors(
        "metadata", {{"kueue.x-k8s.io/podset-slice-required-topology-constraints", text}},
        multi_layer));
  };
  const std::string path =
      "metadata.annotations[kueue.x-k8s.io/podset-slice-required-topology-constraints]";
  EXPECT_THAT(errs(R"([{"topology": "rack", "size": 4}, {"topology": "host", "size": 2}])"),
              IsEmpty());
  EXPECT_THAT(errs("[]", false),
              ElementsAre(path + ": Forbidden: the TASMultiLayerTopology feature gate must be "
                                 "enabled to use this annotation"));
  EXPECT_THAT(errs("[]"), ElementsAre(path + ": Invalid value: \"[]\": topology constraints must "
                                             "contain between 1 and 3 entries"));
  EXPECT_THAT(errs(R"([{"topology": "rack", "size": 3}, {"topology": "rack", "size": 2}])"),
              ElementsAre(path + "[1].topology: Duplicate value: \"rack (also at index 0)\"",
                          path + "[1].size: Invalid value: 2: must evenly divide the parent layer "
                                 "size 3"));
  EXPECT_THAT(errs("rack"), ElementsAre(path + ": Invalid value: \"rack\": must be a valid JSON "
                                               "array: invalid character 'r' looking for "
                                               "beginning of value"));
  EXPECT_THAT(errs("[{"), ElementsAre(path + ": Invalid value: \"[{\": must be a valid JSON "
                                             "array: unexpected end of JSON input"));
  EXPECT_THAT(errs(R"({"a": 1})"),
              ElementsAre(path + ": Invalid value: \"{\\\"a\\\": 1}\": must be a valid JSON array: "
                                 "json: cannot unmarshal object into Go value of type "
                                 "[]v1beta2.PodsetSliceRequiredTopologyConstraint"));
  EXPECT_THAT(errs(R"([{"topology": "rack", "size": "2"}])"),
              ElementsAre(path + ": Invalid value: \"[{\\\"topology\\\": \\\"rack\\\", "
                                 "\\\"size\\\": \\\"2\\\"}]\": must be a valid JSON array: json: "
                                 "cannot unmarshal string into Go struct field "
                                 "PodsetSliceRequiredTopologyConstraint.size of type int32"));
}

TEST_F(PodWebhookTest, DeclaredPodSets) {
  const auto driver = [](const std::string& sets,
                         nlohmann::json labels = nlohmann::json::object()) {
    labels["kueue.x-k8s.io/pod-group-name"] = "spark";
    return Pod(labels, {{"kueue.x-k8s.io/pod-group-sets", sets}});
  };
  const std::string good = R"([{"name": "driver", "count": 1},
      {"name": "workers", "count": 2,
       "template": {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "1"}}}]}}}])";
  // No total count needed, for the driver or for a worker naming its set.
  EXPECT_THAT(Create(driver(good)), IsEmpty());
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/pod-group-name", "spark"},
                          {"kueue.x-k8s.io/pod-group-role", "workers"}})),
              IsEmpty());
  EXPECT_THAT(Create(Pod({}, {{kSets, good}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: the "
                          "'kueue.x-k8s.io/pod-group-sets' annotation needs the "
                          "'kueue.x-k8s.io/pod-group-name' label"));
  EXPECT_THAT(Create(Pod({{"kueue.x-k8s.io/pod-group-role", "workers"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: the "
                          "'kueue.x-k8s.io/pod-group-role' label needs the "
                          "'kueue.x-k8s.io/pod-group-name' label"));
  const auto bad = [&](const std::string& sets, const std::string& why,
                       nlohmann::json labels = nlohmann::json::object()) {
    EXPECT_THAT(Create(driver(sets, labels)),
                ElementsAre(absl::StrCat(kSetsPath, ": Invalid value: ", why)))
        << sets;
  };
  bad("[]", "at least one pod set is required");
  // The parser's error quotes the byte after a backslash, half of "ð" here: the denial carries
  // U+FFFD, and the reply can be written as JSON.
  {
    const std::vector<std::string> errors = Create(driver("[\"\\\xc3\xb0\"]"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THAT(errors[0], HasSubstr("not YAML or JSON"));
    EXPECT_THAT(errors[0], HasSubstr("\xef\xbf\xbd"));
    EXPECT_NO_THROW(nlohmann::json(errors).dump());
  }
  bad(R"([{"name": "a", "minCount": 1}])",
      "[0].minCount: Forbidden: pod groups are not "
      "partially admitted");
  bad(R"([{"name": "a"}, {"name": "a", "count": 0}])",
      "[1].name: Duplicate value: \"a\"; [1].count: Invalid value: 0: must be greater than or "
      "equal to 1; only one pod set may leave its template empty to take the pod's own spec, not "
      "a, a");
  bad(R"([{"name": "Driver"}])",
      "[0].name: Invalid value: \"Driver\": must be a lowercase RFC "
      "1123 label");
  bad(good, "the pod's 'kueue.x-k8s.io/pod-group-role' label \"ps\" names none of the pod sets",
      {{"kueue.x-k8s.io/pod-group-role", "ps"}});
  bad(R"([{"name": "w", "template": {"spec": {"containers": [{"name": "c"}]}}}])",
      "the pod belongs to no pod set: give it the 'kueue.x-k8s.io/pod-group-role' label or leave "
      "one pod set's template empty");
  options_.max_pod_sets = 1;
  bad(good, "pod group can't include more than 1 roles");
  options_.max_pod_sets = 18;
  nlohmann::json counted = driver(good);
  counted["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "5";
  EXPECT_THAT(Create(counted), ElementsAre(absl::StrCat(
                                   kSetsPath,
                                   ": Invalid value: the 'kueue.x-k8s.io/pod-group-total-count' "
                                   "annotation (5) differs from the pod sets' total count (3)")));
}

TEST_F(PodWebhookTest, AManagedPodOfAManagedOwnerIsWarnedAbout) {
  nlohmann::json pod = Pod({{"kueue.x-k8s.io/managed", "true"}});
  pod["metadata"]["ownerReferences"] = {{{"apiVersion", "batch/v1"},
                                         {"kind", "Job"},
                                         {"name", "j"},
                                         {"uid", "u"},
                                         {"controller", true}}};
  std::vector<std::string> warnings;
  EXPECT_THAT(ValidatePodCreate(pod, context_, options_, &warnings), IsEmpty());
  EXPECT_THAT(warnings, ElementsAre("pod owner is managed by kueue, label "
                                    "'kueue.x-k8s.io/managed=true' might lead to unexpected "
                                    "behaviour"));
  warnings.clear();
  ValidatePodUpdate(pod, pod, context_, options_, &warnings);
  EXPECT_EQ(warnings.size(), 1u);
  warnings.clear();
  pod["metadata"]["annotations"] = {{"kueue.x-k8s.io/pod-suspending-parent", "x"}};
  ValidatePodUpdate(pod, pod, context_, options_, &warnings);
  EXPECT_THAT(warnings, IsEmpty());
}

// ---- Validation on UPDATE -----------------------------------------------------------------------

TEST_F(PodWebhookTest, TheQueueIsFixedOnceThePodIsUngated) {
  const nlohmann::json old_pod = Pod({{"kueue.x-k8s.io/queue-name", "a"}});
  EXPECT_THAT(Update(old_pod, Pod({{"kueue.x-k8s.io/queue-name", "b"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\": field "
                          "is immutable"));
  // Named string types print as JSON.
  EXPECT_THAT(Update(old_pod, Pod({{"kueue.x-k8s.io/queue-name", "<b>"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "
                          "\"\\u003cb\\u003e\": field is immutable"));
  // Gated or terminated, it may move.
  EXPECT_THAT(Update(Gated(old_pod), Gated(Pod({{"kueue.x-k8s.io/queue-name", "b"}}))), IsEmpty());
  nlohmann::json done = Pod({{"kueue.x-k8s.io/queue-name", "b"}});
  done["status"] = {{"phase", "Succeeded"}};
  EXPECT_THAT(Update(old_pod, done), IsEmpty());
  // Removed where a default queue exists.
  context_.queues = {"team-a"};
  EXPECT_THAT(Update(Gated(old_pod), Gated(Pod())),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": "
                          "queue-name must not be empty in namespace with default queue"));
}

TEST_F(PodWebhookTest, UpdateRules) {
  // The priority class: not added to a running pod, never removed.
  EXPECT_THAT(Update(Pod(), Pod({{"kueue.x-k8s.io/priority-class", "high"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "
                          "\"high\": WorkloadPriorityClass cannot be added to a non-suspended "
                          "workload"));
  EXPECT_THAT(Update(Gated(Pod({{"kueue.x-k8s.io/priority-class", "high"}})), Gated(Pod())),
              ElementsAre("metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"\": "
                          "WorkloadPriorityClass cannot be removed from a workload"));
  EXPECT_THAT(Update(Pod({{"kueue.x-k8s.io/max-exec-time-seconds", "10"}}),
                     Pod({{"kueue.x-k8s.io/max-exec-time-seconds", "20"}})),
              ElementsAre("metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: "
                          "\"20\": field is immutable"));
  EXPECT_THAT(Update(Pod({}, {{"kueue.x-k8s.io/elastic-job", "true"}}), Pod()),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: false: "
                          "field is immutable"));
  EXPECT_THAT(Update(Pod(), Pod({}, {{"kueue.x-k8s.io/admission-gated-by", "a.io/x"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: "
                          "cannot add admission gate after creation"));
  EXPECT_THAT(Update(Pod({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "a"}}),
                     Pod({}, {{"kueue.x-k8s.io/prebuilt-workload-name", "b"}})),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]: Invalid "
                          "value: \"b\": field is immutable"));
  // The group: its name, an unretriable group, declared sets and a pod's set are fixed.
  const nlohmann::json member = Pod({{"kueue.x-k8s.io/pod-group-name", "g"}},
                                    {{"kueue.x-k8s.io/pod-group-total-count", "2"},
                                     {"kueue.x-k8s.io/retriable-in-group", "false"}});
  nlohmann::json renamed = member;
  renamed["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "h";
  EXPECT_THAT(Update(member, renamed),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"h\": "
                          "field is immutable"));
  nlohmann::json retriable = member;
  retriable["metadata"]["annotations"].erase("kueue.x-k8s.io/retriable-in-group");
  EXPECT_THAT(Update(member, retriable),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/retriable-in-group]: Forbidden: "
                          "unretriable pod group can't be converted to retriable"));
  nlohmann::json worker = member;
  worker["metadata"]["labels"]["kueue.x-k8s.io/pod-group-role"] = "w";
  EXPECT_THAT(Update(member, worker),
              ElementsAre("metadata.labels[kueue.x-k8s.io/pod-group-role]: Invalid value: \"w\": "
                          "field is immutable"));
  nlohmann::json declaring = member;
  declaring["metadata"]["annotations"][kSets] = R"([{"name": "d", "count": 2}])";
  EXPECT_THAT(Update(member, declaring),
              ElementsAre(absl::StrCat(kSetsPath,
                                       ": Invalid value: \"[{\\\"name\\\": \\\"d\\\", "
                                       "\\\"count\\\": 2}]\": field is immutable")));
  // The new pod's own rules run too.
  nlohmann::json unnamed = member;
  unnamed["metadata"]["labels"].erase("kueue.x-k8s.io/pod-group-name");
  EXPECT_THAT(Update(member, unnamed),
              ElementsAre(absl::StrCat("metadata.labels[kueue.x-k8s.io/pod-group-name]: Required "
                                       "value: ",
                                       kBothLabel),
                          "metadata.labels[kueue.x-k8s.io/pod-group-name]: Invalid value: \"\": "
                          "field is immutable"));
}

// ---- AdmissionReview ----------------------------------------------------------------------------

std::string ReviewOf(const std::string& operation, const nlohmann::json& object,
                     const nlohmann::json& old_object = nullptr) {
  nlohmann::json review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "u-1"}, {"operation", operation}, {"namespace", "team-a"}, {"object", object}}}};
  if (!old_object.is_null()) review["request"]["oldObject"] = old_object;
  return review.dump();
}

TEST_F(PodWebhookTest, AdmissionReviewAnswers) {
  nlohmann::json pod = Pod({{"kueue.x-k8s.io/queue-name", "q"}});
  pod["metadata"].erase("namespace");  // filled in from the request
  WebhookReply reply =
      AnswerPodReview("/mutate--v1-pod", ReviewOf("CREATE", pod), context_, options_);
  ASSERT_EQ(reply.http_status, 200);
  const nlohmann::json& response = reply.body["response"];
  EXPECT_EQ(response["uid"], "u-1");
  EXPECT_EQ(response["allowed"], true);
  EXPECT_EQ(response["patchType"], "JSONPatch");
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(response["patch"].get<std::string>(), &patch));
  const nlohmann::json patched = pod.patch(nlohmann::json::parse(patch));
  EXPECT_EQ(patched["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
  EXPECT_EQ(patched["spec"]["schedulingGates"][0]["name"], "kueue.x-k8s.io/admission");

  reply = AnswerPodReview("/validate--v1-pod",
                          ReviewOf("CREATE", Pod({{"kueue.x-k8s.io/pod-group-name", "g"}})),
                          context_, options_);
  EXPECT_EQ(reply.body["response"]["allowed"], false);
  EXPECT_EQ(reply.body["response"]["status"],
            nlohmann::json({{"metadata", nlohmann::json::object()},
                            {"code", 403},
                            {"reason", "Forbidden"},
                            {"message", absl::StrCat("metadata.annotations[kueue.x-k8s.io/"
                                                     "pod-group-total-count]: Required value: ",
                                                     kBothLabel)}}));
  reply = AnswerPodReview("/validate--v1-pod",
                          ReviewOf("UPDATE", Pod({{"kueue.x-k8s.io/queue-name", "b"}}),
                                   Pod({{"kueue.x-k8s.io/queue-name", "a"}})),
                          context_, options_);
  EXPECT_EQ(reply.body["response"]["allowed"], false);

  // A managed owner's pod is allowed, with Kueue's warning.
  nlohmann::json owned = Pod({{"kueue.x-k8s.io/managed", "true"}});
  owned["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "o"}, {"uid", "u"}, {"controller", true}}};
  reply = AnswerPodReview("/validate--v1-pod", ReviewOf("CREATE", owned), context_, options_);
  EXPECT_EQ(reply.body["response"]["allowed"], true);
  EXPECT_EQ(reply.body["response"]["warnings"].size(), 1u);

  // The pod integration off: allowed as sent.
  options_.integration_enabled = false;
  reply = AnswerPodReview("/mutate--v1-pod", ReviewOf("CREATE", pod), context_, options_);
  EXPECT_EQ(reply.body["response"], nlohmann::json({{"uid", "u-1"}, {"allowed", true}}));
  reply = AnswerPodReview("/validate--v1-pod",
                          ReviewOf("CREATE", Pod({{"kueue.x-k8s.io/pod-group-name", "g"}})),
                          context_, options_);
  EXPECT_EQ(reply.body["response"]["allowed"], true);

  // Malformed requests.
  EXPECT_EQ(AnswerPodReview("/validate--v1-pod", "{", context_, options_).http_status, 400);
  reply = AnswerPodReview("/validate--v1-pod", ReviewOf("CREATE", nullptr), context_, options_);
  EXPECT_EQ(reply.body["response"]["status"]["message"], "the request carries no Pod to decode");
}

}  // namespace
}  // namespace admitd::shim
