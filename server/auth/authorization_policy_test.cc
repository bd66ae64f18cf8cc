#include "server/auth/authorization_policy.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::auth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kPolicy[] = R"(
apiVersion: admitd.io/v1
kind: AuthorizationPolicy
roles:
- name: auditor
  rules:
  - verbs: [get, list, watch]
    resources: [events]
bindings:
- name: shim-c1
  role: shim
  clusters: [c1]
  subjects:
  - {kind: ServiceAccount, cluster: c1, namespace: admitd-system, name: admitd-shim}
  - {kind: User, name: shim-c1}
- name: team-a
  role: team
  namespaces: [team-a, team-a-*]
  subjects: [{kind: Group, name: team-a}]
- name: admins
  role: admin
  subjects: [{kind: User, name: alice}]
- name: readers
  role: reader
  subjects: [{kind: Group, name: auditors}]
- name: audit
  role: auditor
  subjects: [{kind: User, name: carol}]
)";

Identity User(const std::string& name, std::vector<std::string> groups = {}) {
  return {Identity::Source::kOidc, name, std::move(groups), ""};
}
Identity ServiceAccount(const std::string& cluster, const std::string& ns,
                        const std::string& name) {
  return {Identity::Source::kServiceAccount,
          "system:serviceaccount:" + ns + ":" + name,
          {"system:serviceaccounts", "system:authenticated"},
          cluster};
}

class AuthorizationPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto parsed = AuthorizationPolicy::Parse(kPolicy);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    policy_ = *parsed;
  }
  absl::Status Check(const Identity& who, Verb verb, Resource resource, std::string ns = "",
                     std::string cluster = "") {
    return policy_->Authorize(who, {verb, resource, std::move(ns), std::move(cluster)});
  }
  std::shared_ptr<const AuthorizationPolicy> policy_;
};

TEST_F(AuthorizationPolicyTest, AShimActsOnItsOwnClusterOnly) {
  const Identity shim = ServiceAccount("c1", "admitd-system", "admitd-shim");
  EXPECT_TRUE(Check(shim, Verb::kRelease, Resource::kWorkloads, "team-a", "c1").ok());
  EXPECT_TRUE(Check(shim, Verb::kReport, Resource::kPods, "team-a", "c1").ok());
  EXPECT_TRUE(Check(shim, Verb::kApply, Resource::kNamespaces, "team-a").ok());
  EXPECT_TRUE(Check(shim, Verb::kGet, Resource::kResourceFlavors).ok());
  absl::Status other = Check(shim, Verb::kRelease, Resource::kWorkloads, "team-a", "c2");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(other.message(),
            "serviceaccount system:serviceaccount:admitd-system:admitd-shim (cluster c1) may not "
            "release workloads of cluster c2 in namespace team-a");
  EXPECT_FALSE(Check(shim, Verb::kReport, Resource::kPods, "team-a", "c2").ok());
  // A workload of no cluster (a platform team's) is outside a cluster-bound binding.
  EXPECT_FALSE(Check(shim, Verb::kDelete, Resource::kWorkloads, "team-a", "").ok());
  EXPECT_FALSE(Check(shim, Verb::kApply, Resource::kClusterQueues).ok());
  EXPECT_FALSE(Check(shim, Verb::kImport, Resource::kWorkloads, "team-a", "c1").ok());
  // The same service account name from another cluster's issuer is another identity.
  EXPECT_FALSE(Check(ServiceAccount("c2", "admitd-system", "admitd-shim"), Verb::kRelease,
                     Resource::kWorkloads, "team-a", "c2")
                   .ok());
  // A certificate named in the binding.
  EXPECT_TRUE(Check({Identity::Source::kCertificate, "shim-c1", {}, ""}, Verb::kSubmit,
                    Resource::kWorkloads, "x", "c1")
                  .ok());
}

TEST_F(AuthorizationPolicyTest, ATeamActsInItsNamespacesOnly) {
  const Identity bob = User("bob", {"team-a", "system:authenticated"});
  EXPECT_TRUE(Check(bob, Verb::kSubmit, Resource::kWorkloads, "team-a").ok());
  EXPECT_TRUE(Check(bob, Verb::kRelease, Resource::kWorkloads, "team-a-dev", "c1").ok());
  EXPECT_TRUE(Check(bob, Verb::kList, Resource::kClusterQueues).ok());
  EXPECT_EQ(Check(bob, Verb::kSubmit, Resource::kWorkloads, "team-b").message(),
            "user bob may not submit workloads in namespace team-b");
  EXPECT_EQ(Check(bob, Verb::kApply, Resource::kClusterQueues).message(),
            "user bob may not apply clusterqueues");
  EXPECT_FALSE(Check(bob, Verb::kApply, Resource::kLocalQueues, "team-a").ok());
  EXPECT_FALSE(Check(bob, Verb::kReport, Resource::kPods, "team-a", "c1").ok());
  EXPECT_FALSE(Check(bob, Verb::kRun, Resource::kScheduler).ok());
}

TEST_F(AuthorizationPolicyTest, AdminReaderCustomRolesAndStrangers) {
  EXPECT_TRUE(Check(User("alice"), Verb::kImport, Resource::kWorkloads, "x", "c9").ok());
  EXPECT_TRUE(Check(User("alice"), Verb::kRun, Resource::kScheduler).ok());
  const Identity reader = User("dave", {"auditors"});
  EXPECT_TRUE(Check(reader, Verb::kWatch, Resource::kWorkloads, "any", "c3").ok());
  EXPECT_FALSE(Check(reader, Verb::kSubmit, Resource::kWorkloads, "any").ok());
  EXPECT_FALSE(Check(reader, Verb::kDelete, Resource::kResourceFlavors).ok());
  EXPECT_TRUE(Check(User("carol"), Verb::kList, Resource::kEvents).ok());
  EXPECT_FALSE(Check(User("carol"), Verb::kList, Resource::kWorkloads).ok());
  EXPECT_EQ(Check(Identity{}, Verb::kGet, Resource::kWorkloads, "team-a").message(),
            "anonymous may not get workloads in namespace team-a");
  // An anonymous caller matches no binding, even one naming its (empty) name.
  EXPECT_FALSE(Check(User("mallory"), Verb::kGet, Resource::kCohorts).ok());
}

TEST_F(AuthorizationPolicyTest, ScopesUniteBindings) {
  auto both = AuthorizationPolicy::Parse(R"(
apiVersion: admitd.io/v1
kind: AuthorizationPolicy
bindings:
- {role: team, namespaces: [team-a], subjects: [{kind: User, name: eve}]}
- {role: shim, clusters: [c1], subjects: [{kind: User, name: eve}]}
)");
  ASSERT_TRUE(both.ok()) << both.status();
  const Scope scope = (*both)->ScopeOf(User("eve"), Verb::kWatch, Resource::kWorkloads);
  EXPECT_TRUE(scope.Allows("team-a", ""));
  EXPECT_TRUE(scope.Allows("team-a", "c2"));
  EXPECT_TRUE(scope.Allows("team-b", "c1"));
  EXPECT_FALSE(scope.Allows("team-b", "c2"));
  EXPECT_FALSE(scope.Allows("team-b", ""));
  EXPECT_TRUE(scope.AllowsNamespace("team-b"));  // for cluster c1
  EXPECT_FALSE(scope.AllowsEverything());
  EXPECT_TRUE((*both)->ScopeOf(User("eve"), Verb::kList, Resource::kClusterQueues).AllowsEverything());
  EXPECT_TRUE(policy_->ScopeOf(User("alice"), Verb::kWatch, Resource::kWorkloads).AllowsEverything());
  EXPECT_TRUE(policy_->ScopeOf(User("x"), Verb::kWatch, Resource::kWorkloads).AllowsNothing());
  EXPECT_THAT((*both)->BindingsOf(User("eve")),
              ElementsAre("bindings[0] (team)", "bindings[1] (shim)"));
}

TEST_F(AuthorizationPolicyTest, BadPoliciesNameEveryBadField) {
  auto bad = AuthorizationPolicy::Parse(R"(
apiVersion: admitd.io/v1
kind: AuthorizationPolicy
roles:
- name: admin
  rules: [{verbs: [get], resources: [pods]}]
- name: odd
  rules: [{verbs: [fly], resources: [planes]}]
bindings:
- role: shim
  subjects: [{kind: Robot, name: r2}]
- role: team
  namespaces: [a]
  subjects: []
- role: auditr
  subjects: [{kind: ServiceAccount, name: x}]
- role: reader
  subject: [{kind: User, name: typo}]
)");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(bad.status().message());
  EXPECT_THAT(m, HasSubstr("roles[0].name: Invalid value: \"admin\": a built-in role cannot be "
                           "redefined"));
  EXPECT_THAT(m, HasSubstr("roles[1].rules[0].verbs[0]: Unsupported value: \"fly\""));
  EXPECT_THAT(m, HasSubstr("roles[1].rules[0].resources[0]: Unsupported value: \"planes\""));
  EXPECT_THAT(m, HasSubstr("bindings[0].clusters: Required value: the role shim is bound to "
                           "clusters"));
  EXPECT_THAT(m, HasSubstr("bindings[0].subjects[0].kind: Unsupported value: \"Robot\": "
                           "supported values: \"Group\", \"ServiceAccount\", \"User\""));
  EXPECT_THAT(m, HasSubstr("bindings[1].subjects: Required value"));
  EXPECT_THAT(m, HasSubstr("bindings[2].role: Not found: \"auditr\""));
  EXPECT_THAT(m, HasSubstr("bindings[2].subjects[0].namespace: Required value"));
  EXPECT_THAT(m, HasSubstr("bindings[3].subject: Unsupported value: unknown field"));
  EXPECT_THAT(AuthorizationPolicy::Parse("a: [").status().message(), HasSubstr("not YAML"));
  EXPECT_THAT(AuthorizationPolicy::Parse("apiVersion: v9\nkind: X\nbindings: []\n")
                  .status()
                  .message(),
              HasSubstr("apiVersion: Unsupported value: \"v9\""));
  EXPECT_EQ(AuthorizationPolicy::Load("/nonexistent/policy.yaml").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace admitd::auth
