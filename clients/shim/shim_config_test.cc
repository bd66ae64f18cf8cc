#include "clients/shim/shim_config.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

std::map<std::string, std::string>* env_values = nullptr;

std::string FakeEnv(const char* name) {
  auto it = env_values->find(name);
  return it == env_values->end() ? "" : it->second;
}

class ShimConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { env_values = &env_; }
  absl::StatusOr<ShimConfig> Parse(std::vector<std::string> args) {
    bool help = false;
    return ParseShimConfig(args, &help, FakeEnv);
  }
  std::map<std::string, std::string> env_;
};

TEST_F(ShimConfigTest, DefaultsFollowThePodAndKueue) {
  env_ = {{"POD_NAMESPACE", "team-system"}, {"POD_NAME", "shim-7d9"}};
  absl::StatusOr<ShimConfig> c = Parse({"--admitd", "admitd:50051", "--cluster=c1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->leader_election_namespace, "team-system");
  EXPECT_EQ(c->identity, "shim-7d9");
  EXPECT_EQ(c->excluded_namespaces, (std::set<std::string>{"kube-system", "team-system"}));
  EXPECT_TRUE(c->leader_elect);
  EXPECT_EQ(c->lease_duration, absl::Seconds(15));
  EXPECT_EQ(c->renew_deadline, absl::Seconds(10));
  EXPECT_EQ(c->retry_period, absl::Seconds(2));
  EXPECT_EQ(c->webhook_listen, "0.0.0.0:9443");
}

TEST_F(ShimConfigTest, TheChartsFlagsParse) {
  absl::StatusOr<ShimConfig> c =
      Parse({"--admitd=a:1", "--cluster=c", "--leader-elect=false", "--webhook-listen=",
             "--managed-namespaces-exclude=kube-system,x", "--manage-jobs-without-queue-name",
             "--feature-gates=ElasticJobsViaWorkloadSlices=false", "--workers=3"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->leader_elect);
  EXPECT_EQ(c->webhook_listen, "");
  EXPECT_EQ(c->excluded_namespaces, (std::set<std::string>{"kube-system", "x"}));
  EXPECT_TRUE(c->manage_jobs_without_queue_name);
  EXPECT_FALSE(c->elastic_jobs);
  EXPECT_EQ(c->workers, 3);
}

TEST_F(ShimConfigTest, ErrorsNameTheFlag) {
  EXPECT_EQ(Parse({"--cluster=c"}).status().message(),
            "--admitd: is required (or set ADMITD_SERVER)");
  env_ = {{"ADMITD_SERVER", "a:1"}};
  EXPECT_EQ(Parse({}).status().message(), "--cluster: is required");
  EXPECT_EQ(Parse({"--cluster=c", "--leader-elect=maybe"}).status().message(),
            "--leader-elect: must be true or false, not \"maybe\"");
  EXPECT_EQ(Parse({"--cluster=c", "--renew-deadline=20s"}).status().message(),
            "--renew-deadline: must be shorter than --lease-duration");
  EXPECT_EQ(Parse({"--cluster=c", "--retry-period=soon"}).status().message(),
            "--retry-period: must be a positive duration such as 15s, not \"soon\"");
  EXPECT_EQ(Parse({"--cluster=c", "--workers=0"}).status().message(),
            "--workers: must be an integer from 1 to 256, not \"0\"");
  EXPECT_EQ(Parse({"--cluster=c", "--bogus=1"}).status().message(),
            "unknown flag --bogus (see --help)");
  EXPECT_EQ(Parse({"--cluster=c", "--feature-gates=Nope=true"}).status().message(),
            "--feature-gates: unknown feature gate \"Nope\" (known: ElasticJobsViaWorkloadSlices)");
  EXPECT_EQ(Parse({"--cluster"}).status().message(), "--cluster: needs a value");
  EXPECT_EQ(Parse({"--cluster=a/b"}).status().message(),
            "--cluster: \"a/b\" is not a valid label value (at most 63 characters: letters, "
            "digits, '-', '_' or '.', starting and ending with a letter or digit)");
  EXPECT_TRUE(Parse({"--cluster=eu-west_1.prod"}).ok());
  EXPECT_EQ(Parse({"--cluster=c", "--integrations=batch/job,kubeflow.org/mpijob"}).status().message(),
            "--integrations: unknown integration \"kubeflow.org/mpijob\" (known: batch/job, pod, "
            "ray.io/raycluster, ray.io/rayjob, jobset.x-k8s.io/jobset, kubeflow.org/pytorchjob, "
            "deployment, statefulset)");
  absl::StatusOr<ShimConfig> both = Parse({"--cluster=c", "--integrations=batch/job,pod"});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->integrations, (std::set<std::string>{"batch/job", "pod"}));
}

}  // namespace
}  // namespace admitd::shim
