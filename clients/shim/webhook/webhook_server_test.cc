// The webhook server called by the test API server of integration/kube/ (a child process) as
// kube-apiserver calls Kueue's webhooks: registered with Mutating/ValidatingWebhookConfigurations
// pointing at its HTTPS URL, Jobs and Pods created through the API are defaulted and denied with
// Kueue's messages, and a rotated certificate is served without a restart.
#include "clients/shim/webhook/webhook_server.h"

#include "clients/shim/integrations/job/job_webhook.h"
#include "clients/shim/integrations/pod/pod_webhook.h"
#include "clients/shim/integrations/raycluster/raycluster_webhook.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/kube/kube_client.h"
#include "clients/shim/integrations/pod/pod_webhook_role_hash.h"
#include "clients/shim/kube/test_cluster.h"
#include "clients/shim/webhook/webhook_testing.h"
#include "common/testing/wait_for.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {
using webhook_testing::FakeContext;

constexpr char kJobs[] = "/apis/batch/v1/namespaces/default/jobs";
constexpr char kDefaultPods[] = "/api/v1/namespaces/default/pods";
constexpr char kAdmissionApi[] = "/apis/admissionregistration.k8s.io/v1/";

using ::admitd::testing::WaitFor;

// A self-signed certificate for 127.0.0.1 and localhost, PEM encoded, with its key.
struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};

TestCertificate MakeCertificate(const std::string& common_name) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()),
                   static_cast<long>(absl::ToUnixMicros(absl::Now())));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 2 * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : std::vector<std::pair<int, const char*>>{
           {NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
           {NID_basic_constraints, "critical,CA:TRUE"},
           {NID_key_usage, "critical,digitalSignature,keyCertSign"},
           {NID_subject_key_identifier, "hash"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert.get(), key.get(), EVP_sha256());
  const auto pem = [](auto write) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    write(bio.get());
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, n);
  };
  return {pem([&](BIO* b) { PEM_write_bio_X509(b, cert.get()); }), pem([&](BIO* b) {
            PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
          })};
}

// Writes `cert` into `dir` as a Secret volume update would: each file replaced in one rename.
void InstallCertificate(const std::string& dir, const TestCertificate& cert) {
  for (const auto& [file, text] :
       {std::pair{"tls.key", cert.key_pem}, std::pair{"tls.crt", cert.cert_pem}}) {
    const std::string path = absl::StrCat(dir, "/", file);
    std::ofstream(path + ".tmp", std::ios::binary) << text;
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
}

// The PEM of the certificate the server at 127.0.0.1:`port` presents (empty on failure).
std::string PresentedCertificate(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
      X509* peer = SSL_get1_peer_certificate(ssl);
      BIO* bio = BIO_new(BIO_s_mem());
      PEM_write_bio_X509(bio, peer);
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio, &data);
      out.assign(data, n);
      BIO_free(bio);
      X509_free(peer);
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  close(fd);
  return out;
}

nlohmann::json Job(const std::string& name, const nlohmann::json& labels,
                   const nlohmann::json& annotations) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
          {"spec",
           {{"parallelism", 3},
            {"template",
             {{"spec",
               {{"restartPolicy", "Never"},
                {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}};
}

nlohmann::json Pod(const std::string& name, const nlohmann::json& labels,
                   const nlohmann::json& annotations) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"containers",
         {{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};
}

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(cluster_.server().empty()) << "the test cluster did not start";
    char dir[] = "/tmp/webhook_server_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    cert_dir_ = dir;
    first_ = MakeCertificate("first");
    InstallCertificate(cert_dir_, first_);
    PodWebhookOptions pods;
    pods.integration_enabled = true;
    server_ = std::make_unique<WebhookServer>(
        "127.0.0.1:0", cert_dir_,
        std::vector<KindWebhook>{JobWebhook(context_, {}), PodWebhook(context_, pods),
                                 RayClusterWebhook(context_, {}, /*enabled=*/false)},
        WebhookServerOptions{.cert_check_interval = absl::Milliseconds(100)});
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { std::filesystem::remove_all(cert_dir_); }

  // One webhook of a configuration, Kueue's registration (§1.3) with the server's URL.
  nlohmann::json Hook(const std::string& name, const std::string& path,
                      const std::vector<std::string>& operations, const std::string& ca_pem,
                      const std::string& group = "batch", const std::string& resource = "jobs") {
    return {{"name", name},
            {"clientConfig",
             {{"url", absl::StrCat("https://127.0.0.1:", server_->port(), path)},
              {"caBundle", absl::Base64Escape(ca_pem)}}},
            {"rules",
             {{{"apiGroups", {group}},
               {"apiVersions", {"v1"}},
               {"operations", operations},
               {"resources", {resource}}}}},
            {"failurePolicy", "Fail"},
            {"sideEffects", "None"},
            {"admissionReviewVersions", {"v1"}},
            {"namespaceSelector",
             {{"matchExpressions",
               {{{"key", "kubernetes.io/metadata.name"},
                 {"operator", "NotIn"},
                 {"values", {"kube-system", "kueue-system"}}}}}}}};
  }

  // Registers (or re-registers with another CA bundle) both of Kueue's Job webhooks.
  void Register(const std::string& ca_pem) {
    for (const auto& [kind, hook] :
         {std::pair{"Mutating", Hook("mjob.kb.io", "/mutate-batch-v1-job", {"CREATE"}, ca_pem)},
          std::pair{"Validating",
                    Hook("vjob.kb.io", "/validate-batch-v1-job", {"CREATE", "UPDATE"}, ca_pem)}}) {
      const std::string plural =
          absl::StrCat(kAdmissionApi, absl::AsciiStrToLower(kind), "webhookconfigurations");
      const std::string name = absl::StrCat("kueue-", absl::AsciiStrToLower(kind), "-webhook");
      absl::StatusOr<nlohmann::json> existing = kube_.Get(absl::StrCat(plural, "/", name));
      nlohmann::json config = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                               {"kind", absl::StrCat(kind, "WebhookConfiguration")},
                               {"metadata", {{"name", name}}},
                               {"webhooks", {hook}}};
      if (existing.ok()) {
        config["metadata"] = (*existing)["metadata"];
        ASSERT_TRUE(kube_.Update(absl::StrCat(plural, "/", name), config).ok());
      } else {
        ASSERT_TRUE(kube_.Create(plural, config).ok());
      }
    }
  }

  // Registers Kueue's pod webhooks, in configurations of their own.
  void RegisterPods(const std::string& ca_pem) {
    for (const auto& [kind, hook] :
         {std::pair{"Mutating",
                    Hook("mpod.kb.io", "/mutate--v1-pod", {"CREATE"}, ca_pem, "", "pods")},
          std::pair{"Validating", Hook("vpod.kb.io", "/validate--v1-pod", {"CREATE", "UPDATE"},
                                       ca_pem, "", "pods")}}) {
      const std::string plural =
          absl::StrCat(kAdmissionApi, absl::AsciiStrToLower(kind), "webhookconfigurations");
      nlohmann::json config = {
          {"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", absl::StrCat(kind, "WebhookConfiguration")},
          {"metadata", {{"name", absl::StrCat("kueue-pod-", absl::AsciiStrToLower(kind))}}},
          {"webhooks", {hook}}};
      ASSERT_TRUE(kube_.Create(plural, config).ok());
    }
  }

  TestCluster cluster_;
  KubeClient kube_{KubeConfig{.server = cluster_.server()}};
  std::string cert_dir_;
  TestCertificate first_;
  FakeContext context_;
  std::unique_ptr<WebhookServer> server_;
};

TEST_F(WebhookServerTest, JobsAreDefaultedAndDeniedAsKueueDoes) {
  Register(first_.cert_pem);

  absl::StatusOr<nlohmann::json> job = kube_.Create(
      kJobs,
      Job("queued", {{"kueue.x-k8s.io/queue-name", "user-queue"}}, nlohmann::json::object()));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)["spec"]["suspend"], true);
  EXPECT_EQ((*job)["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
  absl::StatusOr<nlohmann::json> stored = kube_.Get(absl::StrCat(kJobs, "/queued"));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)["spec"]["suspend"], true);

  // A Job without a queue is not Kueue's: stored as sent.
  job = kube_.Create(kJobs, Job("plain", nlohmann::json::object(), nlohmann::json::object()));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)["spec"]["suspend"], false);

  absl::StatusOr<nlohmann::json> denied =
      kube_.Create(kJobs, Job("bad", {{"kueue.x-k8s.io/queue-name", "user-queue"}},
                              {{"kueue.x-k8s.io/job-min-parallelism", "5"}}));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.status().message()),
              ::testing::EndsWith(
                  ": admission webhook \"vjob.kb.io\" denied the request: "
                  "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 5: "
                  "should be between 0 and 2"));

  // Updates are validated too: the queue of a running Job is fixed.
  absl::StatusOr<nlohmann::json> moved =
      kube_.Patch(absl::StrCat(kJobs, "/plain"),
                  {{"metadata", {{"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}}});
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(moved.status().message(),
              ::testing::HasSubstr("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "
                                   "\"q\": field is immutable"));
}

TEST_F(WebhookServerTest, PodsAreGatedAndDeniedAsKueueDoes) {
  RegisterPods(first_.cert_pem);

  absl::StatusOr<nlohmann::json> created = kube_.Create(
      kDefaultPods,
      Pod("queued", {{"kueue.x-k8s.io/queue-name", "user-queue"}}, nlohmann::json::object()));
  ASSERT_TRUE(created.ok()) << created.status();
  absl::StatusOr<nlohmann::json> stored = kube_.Get(absl::StrCat(kDefaultPods, "/queued"));
  ASSERT_TRUE(stored.ok()) << stored.status();
  const nlohmann::json& meta = (*stored)["metadata"];
  EXPECT_EQ(meta["labels"]["kueue.x-k8s.io/managed"], "true");
  EXPECT_EQ(meta["labels"]["kueue.x-k8s.io/queue-name"], "user-queue");
  EXPECT_EQ(meta["finalizers"], nlohmann::json({"kueue.x-k8s.io/managed"}));
  EXPECT_EQ((*stored)["spec"]["schedulingGates"],
            nlohmann::json::parse(
                R"([{"name": "kueue.x-k8s.io/admission"}, {"name": "kueue.x-k8s.io/topology"}])"));
  EXPECT_EQ(meta["annotations"]["kueue.x-k8s.io/role-hash"], PodRoleHash((*stored)["spec"]));

  // A pod without a queue is not Kueue's: stored as sent.
  created = kube_.Create(kDefaultPods, Pod("plain", nlohmann::json::object(), nlohmann::json::object()));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE((*created)["metadata"]["labels"].contains("kueue.x-k8s.io/managed"));
  EXPECT_FALSE((*created)["spec"].contains("schedulingGates"));

  absl::StatusOr<nlohmann::json> denied = kube_.Create(
      kDefaultPods,
      Pod("bad",
          {{"kueue.x-k8s.io/queue-name", "user-queue"}, {"kueue.x-k8s.io/pod-group-name", "g"}},
          nlohmann::json::object()));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.status().message()),
              ::testing::EndsWith(
                  ": admission webhook \"vpod.kb.io\" denied the request: "
                  "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value: "
                  "both the 'kueue.x-k8s.io/pod-group-total-count' annotation and the "
                  "'kueue.x-k8s.io/pod-group-name' label should be set"));
  EXPECT_FALSE(kube_.Get(absl::StrCat(kDefaultPods, "/bad")).ok());

  // Updates are validated too: a pod that is not gated cannot be moved to a queue.
  absl::StatusOr<nlohmann::json> moved =
      kube_.Patch(absl::StrCat(kDefaultPods, "/plain"),
                  {{"metadata", {{"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}}});
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(moved.status().message(),
              ::testing::HasSubstr("admission webhook \"vpod.kb.io\" denied the request: "
                                   "metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "
                                   "\"q\": field is immutable"));
}

TEST_F(WebhookServerTest, ARotatedCertificateIsServedWithoutARestart) {
  Register(first_.cert_pem);
  ASSERT_TRUE(kube_.Create(kJobs, Job("before", {{"kueue.x-k8s.io/queue-name", "q"}}, {})).ok());
  EXPECT_EQ(PresentedCertificate(server_->port()), first_.cert_pem);

  const TestCertificate second = MakeCertificate("second");
  InstallCertificate(cert_dir_, second);
  EXPECT_TRUE(WaitFor([&] { return PresentedCertificate(server_->port()) == second.cert_pem; }));
  // The API server trusting only the old CA now fails to call the webhook (failurePolicy Fail).
  absl::StatusOr<nlohmann::json> refused =
      kube_.Create(kJobs, Job("refused", {{"kueue.x-k8s.io/queue-name", "q"}}, {}));
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("failed calling webhook"));
  // With the new CA bundle it succeeds, from the same running server.
  Register(second.cert_pem);
  absl::StatusOr<nlohmann::json> after =
      kube_.Create(kJobs, Job("after", {{"kueue.x-k8s.io/queue-name", "q"}}, {}));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*after)["spec"]["suspend"], true);

  // A half-written pair (a certificate whose key has not arrived) keeps the current one.
  const TestCertificate third = MakeCertificate("third");
  std::ofstream(cert_dir_ + "/tls.crt", std::ios::trunc) << third.cert_pem;
  absl::SleepFor(absl::Milliseconds(300));  // three checks of the files: nothing must change
  EXPECT_EQ(PresentedCertificate(server_->port()), second.cert_pem);
}

TEST_F(WebhookServerTest, StartReportsWhatIsWrong) {
  WebhookServer no_cert("127.0.0.1:0", cert_dir_ + "/missing", {JobWebhook(context_, {})}, {});
  EXPECT_EQ(no_cert.Start().code(), absl::StatusCode::kFailedPrecondition);
  WebhookServer bad_address("127.0.0.1", cert_dir_, {JobWebhook(context_, {})}, {});
  EXPECT_EQ(bad_address.Start().code(), absl::StatusCode::kInvalidArgument);
  WebhookServer taken(absl::StrCat("127.0.0.1:", server_->port()), cert_dir_, {JobWebhook(context_, {})}, {});
  absl::Status status = taken.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("cannot listen on 127.0.0.1:"));
  server_->Stop();
  server_->Stop();
}

}  // namespace
}  // namespace admitd::shim
