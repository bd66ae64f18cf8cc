// Who may do what, through the real server: mTLS identities under an authorization policy. An
// unauthenticated call is refused; a shim of cluster c1 is refused on cluster c2's workloads and
// pods; a platform team is refused outside its namespaces and its Watch carries only its own;
// admin changes land in the audit trail.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/pod_service.grpc.pb.h"
#include "admitd/v1/queue_service.grpc.pb.h"
#include "common/connection.h"
#include "common/testing/test_ca.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/fixtures.h"
#include "server/auth/testing/token_signer.h"
#include "server/server.h"

namespace admitd {
namespace {

using ::testing::HasSubstr;
using testing::TestCa;
using testing::WriteFileAtomically;

constexpr char kIssuer[] = "https://kubernetes.default.svc.cluster.local";

constexpr char kPolicy[] = R"(apiVersion: admitd.io/v1
kind: AuthorizationPolicy
bindings:
- {role: admin, subjects: [{kind: User, name: admin}]}
- role: shim
  clusters: [c1]
  subjects:
  - {kind: User, name: shim-c1}
  - {kind: ServiceAccount, cluster: c1, namespace: admitd-system, name: admitd-shim}
- {role: shim, clusters: [c2], subjects: [{kind: User, name: shim-c2}]}
- {role: team, namespaces: [team-a], subjects: [{kind: Group, name: team-a}]}
- {role: reader, subjects: [{kind: Group, name: readers}]}
)";

// One caller: its channel and stubs.
struct Caller {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::QueueService::Stub> queues;
  std::unique_ptr<v1::AdmissionService::Stub> admission;
  std::unique_ptr<v1::PodService::Stub> pods;
};

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

class AuthzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/admitd_authz_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    WriteFileAtomically(dir_ + "/ca.crt", ca_.cert_pem());
    const testing::TestCertificate server = ca_.Issue("admitd", {}, /*server=*/true);
    WriteFileAtomically(dir_ + "/tls.crt", server.cert_pem);
    WriteFileAtomically(dir_ + "/tls.key", server.key_pem);
    WriteFileAtomically(dir_ + "/policy.yaml", kPolicy);
    WriteFileAtomically(dir_ + "/c1-jwks.json", auth::testing::Jwks({&issuer_}));
    WriteFileAtomically(dir_ + "/authn.yaml", absl::StrCat(R"(apiVersion: admitd.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: )", kIssuer, R"(, audiences: [admitd]}
  jwksFile: c1-jwks.json
  serviceAccountsOf: c1
)"));
    Config config;
    config.listen = "127.0.0.1:0";
    config.data_dir = dir_ + "/data";
    config.tls_cert_file = dir_ + "/tls.crt";
    config.tls_key_file = dir_ + "/tls.key";
    config.client_ca_file = dir_ + "/ca.crt";
    config.authorization_policy = dir_ + "/policy.yaml";
    config.authentication_config = dir_ + "/authn.yaml";
    config.manual_scheduling = true;
    absl::StatusOr<std::unique_ptr<AdmitdServer>> started = AdmitdServer::Start(config);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    admin_ = As("admin", {});
    shim1_ = As("shim-c1", {});
    shim2_ = As("shim-c2", {});
    bob_ = As("bob", {"team-a"});
    reader_ = As("rita", {"readers"});
    anonymous_ = As("", {});
    for (const v1::ApplyRequest& r :
         {testing::Flavor("f"), testing::ClusterQueue("cq", {"f"}, {{"cpu", "100"}}),
          testing::LocalQueue("team-a", "lq", "cq"), testing::LocalQueue("team-b", "lq", "cq")}) {
      v1::ApplyResponse resp;
      grpc::Status s = admin_.queues->Apply(Ctx().get(), r, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(2));
    std::filesystem::remove_all(dir_);
  }

  // A caller presenting the bearer token `token` (and no certificate).
  Caller WithToken(const std::string& token) {
    ConnectionOptions options;
    options.target = absl::StrCat("127.0.0.1:", server_->port());
    options.ca_file = dir_ + "/ca.crt";
    options.token = token;
    return Connected(options);
  }
  // The claims of the shim's projected service-account token, valid for an hour.
  static nlohmann::json ShimToken() {
    const int64_t now = absl::ToUnixSeconds(absl::Now());
    return {{"iss", kIssuer}, {"aud", {"admitd"}},
            {"sub", "system:serviceaccount:admitd-system:admitd-shim"},
            {"iat", now}, {"exp", now + 3600}};
  }

  // A caller presenting a certificate with CN `cn` and O `groups`; no certificate for "".
  Caller As(const std::string& cn, const std::vector<std::string>& groups) {
    ConnectionOptions options;
    options.target = absl::StrCat("127.0.0.1:", server_->port());
    options.ca_file = dir_ + "/ca.crt";
    if (!cn.empty()) {
      const testing::TestCertificate cert = ca_.Issue(cn, groups, /*server=*/false);
      WriteFileAtomically(dir_ + "/" + cn + ".crt", cert.cert_pem);
      WriteFileAtomically(dir_ + "/" + cn + ".key", cert.key_pem);
      options.cert_file = dir_ + "/" + cn + ".crt";
      options.key_file = dir_ + "/" + cn + ".key";
    }
    return Connected(options);
  }
  static Caller Connected(const ConnectionOptions& options) {
    Caller c;
    c.channel = *Connect(options);
    c.queues = v1::QueueService::NewStub(c.channel);
    c.admission = v1::AdmissionService::NewStub(c.channel);
    c.pods = v1::PodService::NewStub(c.channel);
    return c;
  }

  static v1::SubmitRequest Job(const std::string& ns, const std::string& name,
                               const std::string& cluster) {
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload(ns, name, "lq", 1, {{"cpu", "1"}});
    if (!cluster.empty()) {
      (*req.mutable_workload()->mutable_metadata()->mutable_labels())["admitd.io/job-cluster"] =
          cluster;
    }
    return req;
  }
  grpc::Status Submit(const Caller& who, const v1::SubmitRequest& req) {
    v1::SubmitResponse resp;
    return who.admission->Submit(Ctx().get(), req, &resp);
  }
  grpc::Status Release(Caller& who, const std::string& ns, const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(ns);
    req.set_name(name);
    req.mutable_finished()->set_succeeded(true);
    v1::ReleaseQuotaResponse resp;
    return who.admission->ReleaseQuota(Ctx().get(), req, &resp);
  }
  // Every event a Watch of `kinds` from the oldest carries up to SYNCED.
  std::vector<v1::WatchEvent> Replay(Caller& who, std::vector<v1::ObjectKind> kinds,
                                     grpc::Status* status = nullptr) {
    v1::WatchRequest req;
    for (v1::ObjectKind k : kinds) req.add_kinds(k);
    req.set_from_oldest(true);
    auto ctx = Ctx();
    std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = who.admission->Watch(ctx.get(), req);
    std::vector<v1::WatchEvent> out;
    v1::WatchEvent event;
    while (reader->Read(&event)) {
      if (event.type() == v1::WatchEvent::SYNCED) {
        ctx->TryCancel();
        break;
      }
      out.push_back(event);
    }
    grpc::Status s = reader->Finish();
    if (status != nullptr) *status = s;
    return out;
  }

  TestCa ca_{"authz-ca"};
  auth::testing::TokenSigner issuer_ = auth::testing::TokenSigner::Rsa("c1-sa-key");
  std::string dir_;
  std::unique_ptr<AdmitdServer> server_;
  Caller admin_, shim1_, shim2_, bob_, reader_, anonymous_;
};

TEST_F(AuthzTest, AnUnauthenticatedCallIsRefused) {
  grpc::Status s = Submit(anonymous_, Job("team-a", "j", ""));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("no credentials"));
  v1::PingResponse pong;
  EXPECT_EQ(anonymous_.queues->Ping(Ctx().get(), v1::PingRequest(), &pong).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(reader_.queues->Ping(Ctx().get(), v1::PingRequest(), &pong).ok());
  grpc::Status watch;
  Replay(anonymous_, {v1::OBJECT_KIND_WORKLOAD}, &watch);
  EXPECT_EQ(watch.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AuthzTest, AShimActsOnlyOnItsOwnClustersWorkloadsAndPods) {
  ASSERT_TRUE(Submit(shim1_, Job("team-a", "job-1", "c1")).ok());
  // Another cluster's label, or none: refused to a shim of c1.
  grpc::Status s = Submit(shim1_, Job("team-a", "job-2", "c2"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "certificate shim-c1 may not submit workloads of cluster c2 in "
                               "namespace team-a");
  EXPECT_EQ(Submit(shim1_, Job("team-a", "job-3", "")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The shim of c2 may not touch c1's workload.
  s = Release(shim2_, "team-a", "job-1");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "certificate shim-c2 may not release workloads of cluster c1 in "
                               "namespace team-a");
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("team-a");
  del.set_name("job-1");
  v1::DeleteWorkloadResponse deleted;
  EXPECT_EQ(shim2_.admission->Delete(Ctx().get(), del, &deleted).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::GetWorkloadRequest get;
  get.set_namespace_("team-a");
  get.set_name("job-1");
  v1::Workload wl;
  EXPECT_EQ(shim2_.admission->Get(Ctx().get(), get, &wl).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(shim1_.admission->Get(Ctx().get(), get, &wl).ok());
  // A workload that does not exist is NOT_FOUND to a shim (it may act in that namespace).
  get.set_name("gone");
  EXPECT_EQ(shim2_.admission->Get(Ctx().get(), get, &wl).error_code(), grpc::StatusCode::NOT_FOUND);
  // Pods of another cluster.
  v1::ReportPodsRequest report;
  report.set_cluster("c1");
  v1::ReportPodsResponse reported;
  s = shim2_.pods->ReportPods(Ctx().get(), report, &reported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "certificate shim-c2 may not report pods of cluster c1");
  EXPECT_TRUE(shim1_.pods->ReportPods(Ctx().get(), report, &reported).ok());
  v1::ListDirectivesRequest directives;
  directives.set_cluster("c1");
  v1::ListDirectivesResponse listed;
  EXPECT_EQ(shim2_.pods->ListDirectives(Ctx().get(), directives, &listed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The shim of c2 lists and watches no workload of c1.
  v1::ListWorkloadsRequest list;
  v1::ListWorkloadsResponse all;
  ASSERT_TRUE(shim2_.admission->List(Ctx().get(), list, &all).ok());
  EXPECT_EQ(all.workloads_size(), 0);
  EXPECT_TRUE(Replay(shim2_, {v1::OBJECT_KIND_WORKLOAD}).empty());
  EXPECT_EQ(Replay(shim1_, {v1::OBJECT_KIND_WORKLOAD}).size(), 1u);
  // Nor may a shim change the queues.
  v1::ApplyResponse applied;
  EXPECT_EQ(shim1_.queues->Apply(Ctx().get(), testing::Flavor("g"), &applied).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(AuthzTest, ATeamActsInItsNamespacesAndWatchesOnlyThem) {
  ASSERT_TRUE(Submit(bob_, Job("team-a", "mine", "")).ok());
  grpc::Status s = Submit(bob_, Job("team-b", "theirs", ""));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "certificate bob may not submit workloads in namespace team-b");
  ASSERT_TRUE(Submit(admin_, Job("team-b", "theirs", "")).ok());
  EXPECT_EQ(Release(bob_, "team-b", "theirs").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Release(bob_, "team-a", "mine").ok());
  // Watch and List carry team-a's workload only; the admin sees both.
  std::vector<v1::WatchEvent> seen = Replay(bob_, {v1::OBJECT_KIND_WORKLOAD});
  ASSERT_FALSE(seen.empty());
  for (const v1::WatchEvent& e : seen) EXPECT_EQ(e.workload().metadata().namespace_(), "team-a");
  bool admin_saw_b = false;
  for (const v1::WatchEvent& e : Replay(admin_, {v1::OBJECT_KIND_WORKLOAD})) {
    admin_saw_b |= e.workload().metadata().namespace_() == "team-b";
  }
  EXPECT_TRUE(admin_saw_b);
  v1::ListWorkloadsResponse listed;
  ASSERT_TRUE(bob_.admission->List(Ctx().get(), v1::ListWorkloadsRequest(), &listed).ok());
  ASSERT_EQ(listed.workloads_size(), 1);
  EXPECT_EQ(listed.workloads(0).metadata().name(), "mine");
  // LocalQueues: its namespace's only; the ClusterQueue, read-only.
  v1::ListObjectsRequest lqs;
  lqs.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  v1::ListObjectsResponse objects;
  ASSERT_TRUE(bob_.queues->List(Ctx().get(), lqs, &objects).ok());
  ASSERT_EQ(objects.objects_size(), 1);
  EXPECT_EQ(objects.objects(0).local_queue().metadata().namespace_(), "team-a");
  v1::ApplyResponse applied;
  s = bob_.queues->Apply(Ctx().get(), testing::ClusterQueue("cq", {"f"}, {{"cpu", "999"}}),
                         &applied);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "certificate bob may not apply clusterqueues");
  // A kind it may watch nowhere is refused outright.
  grpc::Status pods;
  Replay(bob_, {v1::OBJECT_KIND_POD_DIRECTIVE}, &pods);
  EXPECT_EQ(pods.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(AuthzTest, AReaderReadsAndChangesNothing) {
  ASSERT_TRUE(Submit(admin_, Job("team-a", "w", "")).ok());
  v1::ListWorkloadsResponse listed;
  ASSERT_TRUE(reader_.admission->List(Ctx().get(), v1::ListWorkloadsRequest(), &listed).ok());
  EXPECT_EQ(listed.workloads_size(), 1);
  EXPECT_EQ(Submit(reader_, Job("team-a", "x", "")).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::RunSchedulingCyclesResponse ran;
  EXPECT_EQ(reader_.queues->RunSchedulingCycles(Ctx().get(), v1::RunSchedulingCyclesRequest(), &ran)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(AuthzTest, AdminChangesAreInTheAuditTrail) {
  v1::DeleteObjectRequest del;
  del.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  del.set_namespace_("team-b");
  del.set_name("lq");
  v1::DeleteObjectResponse deleted;
  ASSERT_TRUE(admin_.queues->Delete(Ctx().get(), del, &deleted).ok());
  std::vector<std::string> trail;
  for (const v1::WatchEvent& e : Replay(reader_, {v1::OBJECT_KIND_EVENT})) {
    if (e.event().reporting_controller() != "admitd-audit") continue;
    EXPECT_EQ(e.event().user(), "certificate admin");
    EXPECT_TRUE(e.event().has_event_time());
    trail.push_back(absl::StrCat(e.event().reason(), " ", e.event().regarding().kind(), " ",
                                 e.event().regarding().namespace_(), "/",
                                 e.event().regarding().name(), ": ", e.event().note()));
  }
  EXPECT_THAT(trail,
              ::testing::ElementsAre(
                  "Applied ResourceFlavor /f: certificate admin created ResourceFlavor f",
                  "Applied ClusterQueue /cq: certificate admin created ClusterQueue cq",
                  "Applied LocalQueue team-a/lq: certificate admin created LocalQueue lq",
                  "Applied LocalQueue team-b/lq: certificate admin created LocalQueue lq",
                  "Deleted LocalQueue team-b/lq: certificate admin deleted LocalQueue lq"));
  // A refused change leaves no trace.
  v1::ApplyResponse applied;
  ASSERT_FALSE(bob_.queues->Apply(Ctx().get(), testing::Flavor("x"), &applied).ok());
  size_t audits = 0;
  for (const v1::WatchEvent& e : Replay(admin_, {v1::OBJECT_KIND_EVENT})) {
    audits += e.event().reporting_controller() == "admitd-audit";
  }
  EXPECT_EQ(audits, 5u);
}

TEST_F(AuthzTest, AServiceAccountTokenActsAsItsClustersShim) {
  Caller shim = WithToken(issuer_.Sign(ShimToken()));
  ASSERT_TRUE(Submit(shim, Job("team-a", "job-1", "c1")).ok());
  grpc::Status s = Submit(shim, Job("team-a", "job-2", "c2"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "serviceaccount system:serviceaccount:admitd-system:admitd-shim (cluster c1) may not "
            "submit workloads of cluster c2 in namespace team-a");
}

TEST_F(AuthzTest, AChangedPolicyFileTakesEffectWithoutARestart) {
  v1::ApplyResponse applied;
  ASSERT_EQ(bob_.queues->Apply(Ctx().get(), testing::Flavor("g"), &applied).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // bob's group becomes admin; the file is looked at every 2 s.
  WriteFileAtomically(dir_ + "/policy.yaml",
                      std::string(kPolicy) + "- {role: admin, subjects: [{kind: Group, name: team-a}]}\n");
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  grpc::Status s;
  do {
    absl::SleepFor(absl::Milliseconds(200));
    s = bob_.queues->Apply(Ctx().get(), testing::Flavor("g"), &applied);
  } while (!s.ok() && absl::Now() < deadline);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // A policy that does not parse leaves the one in force (waiting out one check interval: what
  // is checked is that nothing changes).
  WriteFileAtomically(dir_ + "/policy.yaml", "bindings: [{role: nobody}]\n");
  absl::SleepFor(absl::Seconds(3));
  EXPECT_TRUE(bob_.queues->Apply(Ctx().get(), testing::Flavor("h"), &applied).ok());
}

TEST_F(AuthzTest, ATokenFileIsReadAgainWhenItChanges) {
  // As a projected service-account token is: the kubelet rewrites the file before expiry.
  WriteFileAtomically(dir_ + "/token", issuer_.Sign(ShimToken()) + "\n");
  ConnectionOptions options;
  options.target = absl::StrCat("127.0.0.1:", server_->port());
  options.ca_file = dir_ + "/ca.crt";
  options.token_file = dir_ + "/token";
  Caller shim = Connected(options);
  ASSERT_TRUE(Submit(shim, Job("team-a", "job-1", "c1")).ok());
  nlohmann::json expired = ShimToken();
  expired["exp"] = absl::ToUnixSeconds(absl::Now()) - 3600;
  WriteFileAtomically(dir_ + "/token", issuer_.Sign(expired));
  grpc::Status s = Submit(shim, Job("team-a", "job-2", "c1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("token expired at"));
  WriteFileAtomically(dir_ + "/token", issuer_.Sign(ShimToken()));
  EXPECT_TRUE(Submit(shim, Job("team-a", "job-3", "c1")).ok());
}

TEST_F(AuthzTest, TokensWithTheWrongAudienceIssuerOrTimeAreRefused) {
  nlohmann::json claims = ShimToken();
  claims["aud"] = {"kubernetes"};
  grpc::Status s = Submit(WithToken(issuer_.Sign(claims)), Job("team-a", "a", "c1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(),
            "token audience [\"kubernetes\"] does not include any of [\"admitd\"]");
  claims = ShimToken();
  claims["iss"] = "https://other.example.com";
  s = Submit(WithToken(issuer_.Sign(claims)), Job("team-a", "b", "c1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("is not trusted"));
  claims = ShimToken();
  claims["exp"] = absl::ToUnixSeconds(absl::Now()) - 3600;
  s = Submit(WithToken(issuer_.Sign(claims)), Job("team-a", "c", "c1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("token expired at"));
  // Signed by a key that is not the cluster's.
  auth::testing::TokenSigner forger = auth::testing::TokenSigner::Rsa("c1-sa-key");
  s = Submit(WithToken(forger.Sign(ShimToken())), Job("team-a", "d", "c1"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "the signature does not verify");
  // Nothing was submitted by any of them.
  v1::ListWorkloadsResponse listed;
  ASSERT_TRUE(admin_.admission->List(Ctx().get(), v1::ListWorkloadsRequest(), &listed).ok());
  EXPECT_EQ(listed.workloads_size(), 0);
}

}  // namespace
}  // namespace admitd
