// TLS on admitd's ports, through the real server and the project's client connection: the gRPC
// port refuses plaintext and untrusted clients, serves a rotated certificate without a restart,
// and with a client CA verifies client certificates; the metrics port speaks HTTPS.
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "admitd/v1/queue_service.grpc.pb.h"
#include "common/connection.h"
#include "common/testing/test_ca.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace admitd {
namespace {

using ::testing::HasSubstr;
using testing::TestCa;
using testing::TestCertificate;
using testing::WriteFileAtomically;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/admitd_tls_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    WriteFileAtomically(dir_ + "/ca.crt", ca_.cert_pem());
    InstallServerCertificate("admitd-1");
    Install("shim", ca_.Issue("shim-c1", {"admitd:shims"}, /*server=*/false));
    config_.listen = "127.0.0.1:0";
    config_.metrics_listen = "127.0.0.1:0";
    config_.data_dir = dir_ + "/data";
    config_.tls_cert_file = dir_ + "/tls.crt";
    config_.tls_key_file = dir_ + "/tls.key";
    config_.tls_refresh_interval = absl::Seconds(1);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(2));
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Install(const std::string& name, const TestCertificate& cert) {
    WriteFileAtomically(dir_ + "/" + name + ".key", cert.key_pem);
    WriteFileAtomically(dir_ + "/" + name + ".crt", cert.cert_pem);
  }
  void InstallServerCertificate(const std::string& cn) {
    const TestCertificate cert = ca_.Issue(cn, {}, /*server=*/true);
    WriteFileAtomically(dir_ + "/tls.key", cert.key_pem);
    WriteFileAtomically(dir_ + "/tls.crt", cert.cert_pem);
  }

  void StartServer() {
    absl::StatusOr<std::unique_ptr<AdmitdServer>> server = AdmitdServer::Start(config_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  ConnectionOptions Options() const {
    ConnectionOptions options;
    options.target = absl::StrCat("127.0.0.1:", server_->port());
    options.ca_file = dir_ + "/ca.crt";
    return options;
  }

  // A Ping over `options`; the server certificate's CN goes to `*server_cn`.
  grpc::Status Ping(const ConnectionOptions& options, std::string* server_cn = nullptr) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect(options);
    if (!channel.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "connect");
    auto stub = v1::QueueService::NewStub(*channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::PingResponse resp;
    grpc::Status status = stub->Ping(&ctx, v1::PingRequest(), &resp);
    if (server_cn != nullptr && ctx.auth_context() != nullptr) {
      for (const grpc::string_ref& cn : ctx.auth_context()->FindPropertyValues("x509_common_name")) {
        *server_cn = std::string(cn.data(), cn.size());
      }
    }
    return status;
  }

  TestCa ca_{"admitd-test-ca"};
  std::string dir_;
  Config config_;
  std::unique_ptr<AdmitdServer> server_;
};

TEST_F(TlsTest, TheGrpcPortSpeaksTlsOnlyAndVerifiesAgainstTheCa) {
  StartServer();
  std::string cn;
  grpc::Status ok = Ping(Options(), &cn);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(cn, "admitd-1");
  // Plaintext gets no answer.
  ConnectionOptions plain;
  plain.target = Options().target;
  EXPECT_EQ(Ping(plain).error_code(), grpc::StatusCode::UNAVAILABLE);
  // A client that trusts another CA refuses the server.
  TestCa other("other-ca");
  WriteFileAtomically(dir_ + "/other-ca.crt", other.cert_pem());
  ConnectionOptions distrustful = Options();
  distrustful.ca_file = dir_ + "/other-ca.crt";
  EXPECT_EQ(Ping(distrustful).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, ARotatedCertificateIsServedWithoutARestart) {
  StartServer();
  std::string cn;
  ASSERT_TRUE(Ping(Options(), &cn).ok());
  EXPECT_EQ(cn, "admitd-1");
  InstallServerCertificate("admitd-2");
  // gRPC reads the files again every refresh interval (1 s here); new connections then present
  // the new certificate.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (cn != "admitd-2" && absl::Now() < deadline) {
    ASSERT_TRUE(Ping(Options(), &cn).ok());
    if (cn != "admitd-2") absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(cn, "admitd-2");
}

TEST_F(TlsTest, AClientCaVerifiesClientCertificates) {
  config_.client_ca_file = dir_ + "/ca.crt";
  config_.require_client_certificate = true;
  StartServer();
  ConnectionOptions mtls = Options();
  mtls.cert_file = dir_ + "/shim.crt";
  mtls.key_file = dir_ + "/shim.key";
  grpc::Status ok = Ping(mtls);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(Ping(Options()).error_code(), grpc::StatusCode::UNAVAILABLE);
  TestCa other("other-ca");
  Install("stranger", other.Issue("shim-c1", {}, /*server=*/false));
  ConnectionOptions stranger = Options();
  stranger.cert_file = dir_ + "/stranger.crt";
  stranger.key_file = dir_ + "/stranger.key";
  EXPECT_EQ(Ping(stranger).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, TheMetricsPortSpeaksHttps) {
  StartServer();
  httplib::SSLClient client("127.0.0.1", server_->metrics_port());
  client.set_ca_cert_path((dir_ + "/ca.crt").c_str());
  client.enable_server_certificate_verification(true);
  auto res = client.Get("/healthz");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  httplib::Client plain("127.0.0.1", server_->metrics_port());
  plain.set_read_timeout(2, 0);
  EXPECT_FALSE(plain.Get("/healthz"));
}

TEST_F(TlsTest, BadCertificateFilesStopTheStart) {
  config_.tls_key_file = dir_ + "/shim.key";  // not the certificate's key
  absl::StatusOr<std::unique_ptr<AdmitdServer>> server = AdmitdServer::Start(config_);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), HasSubstr("does not match the certificate"));
  config_.tls_key_file = dir_ + "/missing.key";
  server = AdmitdServer::Start(config_);
  EXPECT_THAT(server.status().message(), HasSubstr("missing.key"));
}

}  // namespace
}  // namespace admitd
