// The RayCluster webhook's rules: Kueue's texts exactly (raycluster_webhook_test.go and the
// job framework's), the JSON patches applied to the cluster, and the AdmissionReview answers.
#include "clients/shim/integrations/raycluster/raycluster_webhook.h"

#include <set>

#include "absl/strings/escaping.h"
#include "clients/shim/webhook/webhook_server.h"
#include "clients/shim/webhook/webhook_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using webhook_testing::FakeContext;
using webhook_testing::Texts;

// A RayCluster as the API server hands it to the webhook: a head and one worker group.
nlohmann::json Cluster(const nlohmann::json& labels = {{"kueue.x-k8s.io/queue-name", "lq"}},
                       const nlohmann::json& annotations = nlohmann::json::object()) {
  nlohmann::json rc = nlohmann::json::parse(R"({
    "apiVersion": "ray.io/v1", "kind": "RayCluster",
    "metadata": {"name": "rc", "namespace": "team-a"},
    "spec": {"headGroupSpec": {"rayStartParams": {},
                               "template": {"spec": {"containers": [{"name": "head"}]}}},
             "workerGroupSpecs": [{"groupName": "workers", "replicas": 2, "numOfHosts": 1,
                                   "rayStartParams": {},
                                   "template": {"spec": {"containers": [{"name": "w"}]}}}]}})");
  if (!labels.empty()) rc["metadata"]["labels"] = labels;
  if (!annotations.empty()) rc["metadata"]["annotations"] = annotations;
  return rc;
}

nlohmann::json Elastic(nlohmann::json rc) {
  rc["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  return rc;
}

class RayClusterWebhookTest : public ::testing::Test {
 protected:
  std::vector<std::string> Create(const nlohmann::json& rc) {
    std::string denial;
    std::vector<std::string> out = Texts(ValidateRayClusterCreate(rc, options_, &denial));
    if (!denial.empty()) out.push_back("denied: " + denial);
    return out;
  }
  std::vector<std::string> Update(const nlohmann::json& old_rc, const nlohmann::json& new_rc) {
    std::string denial;
    return Texts(ValidateRayClusterUpdate(old_rc, new_rc, context_, options_, &denial));
  }
  nlohmann::json Defaulted(const nlohmann::json& rc) {
    return rc.patch(nlohmann::json(DefaultRayCluster(rc, context_, options_)));
  }
  FakeContext context_;
  JobWebhookOptions options_;
};

TEST_F(RayClusterWebhookTest, AQueuedClusterIsSuspendedAndDefaulted) {
  nlohmann::json rc = Defaulted(Cluster());
  EXPECT_EQ(rc["spec"]["suspend"], true);
  EXPECT_FALSE(rc["spec"]["headGroupSpec"]["template"]["spec"].contains("schedulingGates"));

  // No queue: the namespace's default LocalQueue and the default priority class.
  context_.queues = {"team-a"};
  context_.priority_class = true;
  rc = Defaulted(Cluster(nlohmann::json::object()));
  EXPECT_EQ(rc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "default");
  EXPECT_EQ(rc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "default");
  EXPECT_EQ(rc["spec"]["suspend"], true);

  // Nothing to do: no queue, no default queue, not managed without one.
  context_.queues.clear();
  context_.priority_class = false;
  EXPECT_THAT(DefaultRayCluster(Cluster(nlohmann::json::object()), context_, options_), IsEmpty());
  // A cluster controlled by a RayCluster is its owner's.
  nlohmann::json child = Cluster();
  child["metadata"]["ownerReferences"] = {{{"apiVersion", "ray.io/v1"},
                                           {"kind", "RayCluster"},
                                           {"name", "p"},
                                           {"uid", "u"},
                                           {"controller", true}}};
  EXPECT_THAT(DefaultRayCluster(child, context_, options_), IsEmpty());
}

TEST_F(RayClusterWebhookTest, AnElasticClustersTemplatesAreAllGated) {
  nlohmann::json rc = Elastic(Cluster());
  const nlohmann::json group = rc["spec"]["workerGroupSpecs"][0];
  rc["spec"]["workerGroupSpecs"].push_back(group);
  rc["spec"]["workerGroupSpecs"][1]["groupName"] = "more";
  rc["spec"]["workerGroupSpecs"][1]["template"]["spec"]["schedulingGates"] =
      nlohmann::json::parse(R"([{"name": "other"}])");
  const nlohmann::json gated = Defaulted(rc);
  const nlohmann::json gate = {{"name", "kueue.x-k8s.io/elastic-job"}};
  EXPECT_EQ(gated["spec"]["headGroupSpec"]["template"]["spec"]["schedulingGates"],
            nlohmann::json::array({gate}));
  EXPECT_EQ(gated["spec"]["workerGroupSpecs"][0]["template"]["spec"]["schedulingGates"],
            nlohmann::json::array({gate}));
  EXPECT_EQ(
      gated["spec"]["workerGroupSpecs"][1]["template"]["spec"]["schedulingGates"],
      nlohmann::json::parse(R"([{"name": "other"}, {"name": "kueue.x-k8s.io/elastic-job"}])"));
  // Already gated: nothing more.
  nlohmann::json again = gated;
  again["spec"]["suspend"] = true;
  EXPECT_THAT(DefaultRayCluster(again, context_, options_), IsEmpty());
  EXPECT_THAT(Create(gated), IsEmpty());
  // The gate off: not elastic, no gates.
  options_.elastic_jobs = false;
  EXPECT_FALSE(
      Defaulted(rc)["spec"]["headGroupSpec"]["template"]["spec"].contains("schedulingGates"));
}

// Objects of the wrong JSON type where the gates go (the schema is checked after admission) get
// an answer, not an exception.
TEST_F(RayClusterWebhookTest, AnElasticClusterWithArraysForObjectsIsAnswered) {
  nlohmann::json rc = Elastic(Cluster());
  rc["spec"]["workerGroupSpecs"][0]["template"] = nlohmann::json::array({1});
  rc["spec"]["headGroupSpec"] = nlohmann::json::array();
  std::vector<nlohmann::json> ops;
  ASSERT_NO_THROW(ops = DefaultRayCluster(rc, context_, options_));
  bool gated_worker = false;
  for (const nlohmann::json& op : ops) {
    gated_worker |= op["path"] == "/spec/workerGroupSpecs/0/template/spec";
  }
  EXPECT_TRUE(gated_worker) << nlohmann::json(ops).dump();
  EXPECT_NO_THROW(Create(rc));
}

TEST_F(RayClusterWebhookTest, AnElasticClusterWithoutItsGatesIsRefused) {
  nlohmann::json rc = Elastic(Cluster());
  rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["schedulingGates"] =
      nlohmann::json::parse(R"([{"name": "x"}])");
  EXPECT_THAT(
      Create(rc),
      ElementsAre(
          "spec.workerGroupSpecs[0].template.spec.schedulingGates: Invalid value: "
          "[{\"name\":\"x\"}]: an elastic job must have the ElasticJobSchedulingGate",
          "spec.headGroupSpec.template.spec.schedulingGates: Invalid value: null: an elastic job "
          "must have the ElasticJobSchedulingGate"));
  // Autoscaling under MultiKueue is refused too.
  nlohmann::json mk = Defaulted(Elastic(Cluster()));
  mk["spec"]["enableInTreeAutoscaling"] = true;
  mk["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  EXPECT_THAT(Create(mk), ElementsAre("spec.enableInTreeAutoscaling: Forbidden: in-tree "
                                      "autoscaling is not supported for a MultiKueue-managed "
                                      "elastic RayCluster"));
}

TEST_F(RayClusterWebhookTest, AutoscalingOnlyAsAnElasticJob) {
  nlohmann::json rc = Cluster();
  rc["spec"]["enableInTreeAutoscaling"] = true;
  EXPECT_THAT(Create(rc),
              ElementsAre("spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed "
                          "RayCluster can use autoscaling only as an elastic job: enable the "
                          "ElasticJobsViaWorkloadSlices feature gate and set the "
                          "\"kueue.x-k8s.io/elastic-job\": \"true\" annotation"));
  // Not managed: Kueue leaves it alone.
  rc["metadata"].erase("labels");
  EXPECT_THAT(Create(rc), IsEmpty());
  // Elastic and gated: allowed.
  rc = Defaulted(Elastic(Cluster()));
  rc["spec"]["enableInTreeAutoscaling"] = true;
  EXPECT_THAT(Create(rc), IsEmpty());
}

TEST_F(RayClusterWebhookTest, PodSetLimitsAndTheReservedHeadName) {
  nlohmann::json rc = Cluster();
  nlohmann::json group = rc["spec"]["workerGroupSpecs"][0];
  for (int i = 1; i < 18; ++i) rc["spec"]["workerGroupSpecs"].push_back(group);
  rc["spec"]["workerGroupSpecs"][3]["groupName"] = "head";
  EXPECT_THAT(Create(rc),
              ElementsAre("spec.workerGroupSpecs: Too many: 19: must have at most 18 items",
                          "spec.workerGroupSpecs[3].groupName: Forbidden: \"head\" is reserved "
                          "for the head group"));
}

TEST_F(RayClusterWebhookTest, TheFrameworksRulesApplyOnCreateAndUpdate) {
  nlohmann::json rc = Cluster(
      {{"kueue.x-k8s.io/queue-name", "Bad_Queue"}, {"kueue.x-k8s.io/max-exec-time-seconds", "0"}});
  const std::vector<std::string> errs = Create(rc);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_THAT(errs[0],
              ::testing::StartsWith("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "
                                    "\"Bad_Queue\": a lowercase RFC 1123 subdomain"));
  EXPECT_EQ(errs[1],
            "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be "
            "greater than 0");

  nlohmann::json running = Cluster();
  running["spec"]["suspend"] = false;
  nlohmann::json moved = running;
  moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other";
  EXPECT_THAT(Update(running, moved),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other\": "
                          "field is immutable"));
  nlohmann::json suspended = Cluster();
  suspended["spec"]["suspend"] = true;
  nlohmann::json requeued = suspended;
  requeued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other";
  EXPECT_THAT(Update(suspended, requeued), IsEmpty());
  // The elastic annotation may not come or go.
  EXPECT_THAT(Update(suspended, Defaulted(Elastic(suspended))),
              ElementsAre("metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: true: "
                          "field is immutable"));
  // An unmanaged cluster that stays unmanaged is not checked; one that was managed is.
  nlohmann::json bare = Cluster(nlohmann::json::object());
  bare["spec"]["enableInTreeAutoscaling"] = true;
  EXPECT_THAT(Update(bare, bare), IsEmpty());
  EXPECT_THAT(Update(running, bare),
              ElementsAre("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"\": field "
                          "is immutable"));
  // A replicas change of a running elastic cluster (the autoscaler's) is allowed.
  nlohmann::json elastic = Defaulted(Elastic(Cluster()));
  elastic["spec"]["suspend"] = false;
  nlohmann::json scaled = elastic;
  scaled["spec"]["workerGroupSpecs"][0]["replicas"] = 5;
  EXPECT_THAT(Update(elastic, scaled), IsEmpty());
}

TEST_F(RayClusterWebhookTest, TopologyRequestsOfEachTemplate) {
  nlohmann::json rc = Cluster();
  rc["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/podset-slice-required-topology", "rack"},
      {"kueue.x-k8s.io/podset-slice-size", "3"}};
  EXPECT_THAT(Create(rc),
              ElementsAre("spec.workerGroupSpecs[0].template.metadata.annotations[kueue.x-k8s.io/"
                          "podset-slice-size]: Invalid value: \"3\": must not be greater than pod "
                          "set count 2"));
  // A pod-set group must be a pair.
  rc = Cluster();
  rc["spec"]["headGroupSpec"]["template"]["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/podset-required-topology", "rack"},
      {"kueue.x-k8s.io/podset-group-name", "g"}};
  EXPECT_THAT(Create(rc),
              ElementsAre("spec.headGroupSpec.template.metadata.annotations[kueue.x-k8s.io/"
                          "podset-group-name]: Invalid value: \"g\": can only define groups of "
                          "exactly 2 pod sets, got: 1 pod set(s)"));
  rc["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/podset-preferred-topology", "rack"},
      {"kueue.x-k8s.io/podset-group-name", "g"}};
  EXPECT_THAT(
      Create(rc),
      ElementsAre(
          "spec.headGroupSpec.template.metadata.annotations: Invalid value: must specify "
          "'kueue.x-k8s.io/podset-required-topology' or 'kueue.x-k8s.io/podset-preferred-topology' "
          "topology consistent with 'spec.workerGroupSpecs[0].template.metadata.annotations' in "
          "group 'g'",
          "spec.workerGroupSpecs[0].template.metadata.annotations: Invalid value: must specify "
          "'kueue.x-k8s.io/podset-required-topology' or 'kueue.x-k8s.io/podset-preferred-topology' "
          "topology consistent with 'spec.headGroupSpec.template.metadata.annotations' in group "
          "'g'"));
  rc["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"]
    ["kueue.x-k8s.io/podset-required-topology"] = "rack";
  rc["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"].erase(
      "kueue.x-k8s.io/podset-preferred-topology");
  EXPECT_THAT(Create(rc), IsEmpty());
  // A worker's annotation that cannot be read into pod sets, with a clean head: Kueue's plain
  // refusal.
  rc = Cluster();
  rc["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/podset-unconstrained-topology", "maybe"}};
  EXPECT_THAT(Create(rc), ElementsAre("denied: strconv.ParseBool: parsing \"maybe\": invalid "
                                      "syntax"));
}

TEST_F(RayClusterWebhookTest, AdmissionReviewAnswers) {
  const nlohmann::json review = {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "u1"}, {"operation", "CREATE"}, {"namespace", "team-a"}, {"object", Cluster()}}}};
  WebhookReply reply = AnswerRayClusterReview("/mutate-ray-io-v1-raycluster", review.dump(),
                                              context_, options_, /*enabled=*/true);
  ASSERT_EQ(reply.http_status, 200);
  EXPECT_EQ(reply.body["response"]["allowed"], true);
  EXPECT_EQ(reply.body["response"]["patchType"], "JSONPatch");
  std::string ops;
  ASSERT_TRUE(absl::Base64Unescape(reply.body["response"]["patch"].get<std::string>(), &ops));
  EXPECT_EQ(Cluster().patch(nlohmann::json::parse(ops))["spec"]["suspend"], true);

  nlohmann::json bad = review;
  bad["request"]["object"]["spec"]["enableInTreeAutoscaling"] = true;
  reply = AnswerRayClusterReview("/validate-ray-io-v1-raycluster", bad.dump(), context_, options_,
                                 true);
  EXPECT_EQ(reply.body["response"]["allowed"], false);
  EXPECT_EQ(reply.body["response"]["status"]["code"], 403);
  EXPECT_EQ(reply.body["response"]["status"]["reason"], "Forbidden");
  // The integration off: Kueue's no-op webhook.
  reply = AnswerRayClusterReview("/validate-ray-io-v1-raycluster", bad.dump(), context_, options_,
                                 false);
  EXPECT_EQ(reply.body["response"]["allowed"], true);
  reply = AnswerRayClusterReview("/mutate-ray-io-v1-raycluster", review.dump(), context_, options_,
                                 false);
  EXPECT_FALSE(reply.body["response"].contains("patch"));
}

}  // namespace
}  // namespace admitd::shim
