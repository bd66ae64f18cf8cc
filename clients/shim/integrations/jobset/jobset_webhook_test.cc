// The JobSet webhook's rules (kueue-jobframework.md §8.1) with Kueue's messages.
#include "clients/shim/integrations/jobset/jobset_webhook.h"

#include <gtest/gtest.h>

#include "clients/shim/webhook/webhook_testing.h"

namespace admitd::shim {
namespace jobset_webhook_test {

using webhook_testing::FakeContext;
using webhook_testing::Texts;

nlohmann::json JobSet(const nlohmann::json& labels = {{"kueue.x-k8s.io/queue-name", "lq"}}) {
  return {{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
          {"kind", "JobSet"},
          {"metadata", {{"name", "js"}, {"namespace", "ns"}, {"labels", labels}}},
          {"spec",
           {{"replicatedJobs",
             {{{"name", "workers"},
               {"replicas", 2},
               {"template",
                {{"spec",
                  {{"parallelism", 2},
                   {"template", {{"spec", {{"containers", {{{"name", "c"}}}}}}}}}}}}}}}}}};
}

TEST(JobSetWebhookTest, AQueuedJobSetIsSuspendedAndAMultiKueueOneManagedByIt) {
  FakeContext context;
  std::vector<nlohmann::json> ops = DefaultJobSet(JobSet(), context, {});
  nlohmann::json defaulted = JobSet().patch(nlohmann::json(ops));
  EXPECT_EQ(defaulted["spec"]["suspend"], true);
  EXPECT_FALSE(defaulted["spec"].contains("managedBy"));

  context.multikueue.insert("ns/lq");
  defaulted = JobSet().patch(nlohmann::json(DefaultJobSet(JobSet(), context, {})));
  EXPECT_EQ(defaulted["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
  // Another controller's JobSet is left to it.
  nlohmann::json other = JobSet();
  other["spec"]["managedBy"] = "example.com/controller";
  defaulted = other.patch(nlohmann::json(DefaultJobSet(other, context, {})));
  EXPECT_EQ(defaulted["spec"]["managedBy"], "example.com/controller");
}

TEST(JobSetWebhookTest, AnElasticJobSetIsGatedAndTopologyIsCheckedPerReplicatedJob) {
  nlohmann::json js = JobSet();
  js["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  // Elastic beyond Kueue: accepted, and every replicated job's pods start gated.
  FakeContext context;
  const nlohmann::json defaulted = js.patch(nlohmann::json(DefaultJobSet(js, context, {})));
  for (const nlohmann::json& rj : defaulted["spec"]["replicatedJobs"]) {
    EXPECT_EQ(rj["template"]["spec"]["template"]["spec"]["schedulingGates"],
              nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/elastic-job"}])"));
  }
  js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/podset-required-topology", "rack"},
      {"kueue.x-k8s.io/podset-preferred-topology", "zone"}};
  EXPECT_EQ(
      Texts(ValidateJobSetCreate(js, {})),
      std::vector<std::string>(
          {"spec.replicatedJobs[0].template.spec.template.metadata.annotations: Invalid value: "
           "must not contain more than one topology annotation: "
           "[\"kueue.x-k8s.io/podset-required-topology\", "
           "\"kueue.x-k8s.io/podset-preferred-topology\", "
           "\"kueue.x-k8s.io/podset-unconstrained-topology\"]"}));
  // Not elastic: no gate.
  const nlohmann::json plain = JobSet().patch(nlohmann::json(DefaultJobSet(JobSet(), context, {})));
  EXPECT_FALSE(plain["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].contains(
      "schedulingGates"));
}

TEST(JobSetWebhookTest, TheQueueOfARunningJobSetIsImmutable) {
  FakeContext context;
  nlohmann::json old_js = JobSet();
  old_js["spec"]["suspend"] = false;
  nlohmann::json new_js = JobSet({{"kueue.x-k8s.io/queue-name", "other"}});
  new_js["spec"]["suspend"] = false;
  EXPECT_EQ(Texts(ValidateJobSetUpdate(old_js, new_js, context, {})),
            std::vector<std::string>({"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid "
                                      "value: \"other\": field is immutable"}));
  new_js["spec"]["suspend"] = true;
  EXPECT_TRUE(ValidateJobSetUpdate(old_js, new_js, context, {}).empty());
}

}  // namespace jobset_webhook_test
}  // namespace admitd::shim
