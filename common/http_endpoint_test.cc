#include "common/http_endpoint.h"

#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/raw_http_client.h"
#include "common/serving_certificate.h"
#include "common/testing/test_ca.h"

namespace admitd {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kGetPing[] = "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n";

HttpEndpoint::Routes PingRoute(std::atomic<int>* calls = nullptr) {
  HttpEndpoint::Routes routes;
  routes["/ping"] = [calls] {
    if (calls != nullptr) ++*calls;
    return HttpReply{200, "text/plain", "pong\n"};
  };
  return routes;
}

TEST(HttpEndpointTest, KeepsConnectionsAliveUpToTheLimit) {
  HttpEndpointOptions options;
  options.keep_alive_max_requests = 3;
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute(), options);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  RawHttpClient client((*endpoint)->port());
  ASSERT_TRUE(client.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send(kGetPing));
    const std::string response = client.ReadResponse(absl::Seconds(5));
    EXPECT_THAT(response, StartsWith("HTTP/1.1 200 OK\r\n")) << i;
    EXPECT_THAT(response, EndsWith("\r\n\r\npong\n")) << i;
    EXPECT_THAT(response,
                HasSubstr(i < 2 ? "Keep-Alive: timeout=5, max=3\r\n" : "Connection: close\r\n"))
        << i;
  }
  // The third request was the last: the server closes the connection.
  client.Send(kGetPing);
  EXPECT_EQ(client.ReadUntilClosed(absl::Seconds(5)), "");
}

TEST(HttpEndpointTest, AnswersPipelinedRequestsInOrder) {
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  RawHttpClient client((*endpoint)->port());
  ASSERT_TRUE(client.Send(std::string(kGetPing) + "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(client.ReadResponse(absl::Seconds(5)), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(client.ReadResponse(absl::Seconds(5)), StartsWith("HTTP/1.1 404 Not Found\r\n"));
}

TEST(HttpEndpointTest, ClosesConnectionsWhoseRequestBodyWasNotRead) {
  std::atomic<int> calls{0};
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute(&calls));
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  RawHttpClient client((*endpoint)->port());
  // The body looks like a request of its own: it must not be answered as one.
  const std::string body = kGetPing;
  client.Send("POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
              "\r\n\r\n" + body);
  const std::string response = client.ReadUntilClosed(absl::Seconds(5));
  EXPECT_THAT(response, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(response, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(response, Not(HasSubstr("pong")));
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpEndpointTest, HandlerErrorsAndStatusesPassThrough) {
  HttpEndpoint::Routes routes;
  routes["/teapot"] = [] { return HttpReply{418, "text/plain", "short and stout\n"}; };
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", routes);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const std::string response = HttpRequest((*endpoint)->port(), "GET", "/teapot");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 418 "));
  EXPECT_THAT(response, EndsWith("short and stout\n"));
}

TEST(HttpEndpointTest, IdleClientsHoldOneWorkerEachAndTimeOut) {
  HttpEndpointOptions options;
  options.workers = 2;
  options.read_timeout = absl::Milliseconds(300);
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute(), options);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  // Both workers are taken by clients that never send; the read timeout frees them.
  RawHttpClient idle1(port), idle2(port);
  const absl::Time start = absl::Now();
  EXPECT_THAT(HttpRequest(port, "GET", "/ping", absl::Seconds(5)),
              StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
  EXPECT_EQ(idle1.ReadUntilClosed(absl::Seconds(5)), "");  // dropped without an answer
}

TEST(HttpEndpointTest, PortInUseIsUnavailable) {
  auto first = HttpEndpoint::Start("127.0.0.1:0", PingRoute());
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  EXPECT_EQ(HttpEndpoint::Start(taken, PingRoute()).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_THAT(HttpRequest((*first)->port(), "GET", "/ping"), StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST(HttpEndpointTest, AddressesMustBeHostAndPort) {
  for (const char* bad : {"", "9090", "host:", "host:port", "host:70000", "host:-1"}) {
    EXPECT_EQ(HttpEndpoint::Start(bad, PingRoute()).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(HttpEndpointTest, StopRightAfterStartAndTwice) {
  for (int i = 0; i < 20; ++i) {
    auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute());
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    (*endpoint)->Stop();
    (*endpoint)->Stop();
  }
}

TEST(HttpEndpointTest, ListensOnIpv6Loopback) {
  auto endpoint = HttpEndpoint::Start("[::1]:0", PingRoute());
  if (!endpoint.ok()) GTEST_SKIP() << "no IPv6 loopback: " << endpoint.status();
  EXPECT_GT((*endpoint)->port(), 0);
}


// ---- TLS --------------------------------------------------------------------------------------

class HttpEndpointTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/http_tls_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    InstallServer("metrics-1");
    testing::WriteFileAtomically(dir_ + "/ca.crt", ca_.cert_pem());
    const testing::TestCertificate client = ca_.Issue("prometheus", {}, /*server=*/false);
    testing::WriteFileAtomically(dir_ + "/client.crt", client.cert_pem);
    testing::WriteFileAtomically(dir_ + "/client.key", client.key_pem);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void InstallServer(const std::string& cn) {
    const testing::TestCertificate server = ca_.Issue(cn, {}, /*server=*/true);
    testing::WriteFileAtomically(dir_ + "/tls.key", server.key_pem);
    testing::WriteFileAtomically(dir_ + "/tls.crt", server.cert_pem);
  }

  // GET /ping over HTTPS, verifying the server against the CA; -1 when the request fails.
  int Get(int port, bool with_client_cert) {
    std::unique_ptr<httplib::SSLClient> client =
        with_client_cert ? std::make_unique<httplib::SSLClient>(
                               "127.0.0.1", port, dir_ + "/client.crt", dir_ + "/client.key")
                         : std::make_unique<httplib::SSLClient>("127.0.0.1", port);
    client->set_ca_cert_path((dir_ + "/ca.crt").c_str());
    client->enable_server_certificate_verification(true);
    auto res = client->Get("/ping");
    return res ? res->status : -1;
  }

  testing::TestCa ca_{"metrics-ca"};
  std::string dir_;
};

TEST_F(HttpEndpointTlsTest, ServesHttpsAndARotatedCertificateWithoutARestart) {
  auto cert = ServingCertificate::Load({.cert_file = dir_ + "/tls.crt",
                                        .key_file = dir_ + "/tls.key",
                                        .check_interval = absl::ZeroDuration()});
  ASSERT_TRUE(cert.ok()) << cert.status();
  HttpEndpointOptions options;
  options.tls = *cert;
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute(), options);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_EQ(Get((*endpoint)->port(), false), 200);
  EXPECT_EQ((*cert)->CurrentSubject(), "metrics-1");
  // Plain HTTP on the HTTPS port gets no answer.
  RawHttpClient plain((*endpoint)->port());
  plain.Send(kGetPing);
  EXPECT_THAT(plain.ReadUntilClosed(absl::Seconds(5)), Not(HasSubstr("pong")));
  InstallServer("metrics-2");
  EXPECT_EQ(Get((*endpoint)->port(), false), 200);
  EXPECT_EQ((*cert)->CurrentSubject(), "metrics-2");
  // A half-written pair (a key that does not match) keeps the previous one in service.
  testing::WriteFileAtomically(dir_ + "/tls.key", ca_.Issue("x", {}, true).key_pem);
  EXPECT_EQ(Get((*endpoint)->port(), false), 200);
  EXPECT_EQ((*cert)->CurrentSubject(), "metrics-2");
}

TEST_F(HttpEndpointTlsTest, AClientCaRequiresAVerifiedClientCertificate) {
  auto cert = ServingCertificate::Load({.cert_file = dir_ + "/tls.crt",
                                        .key_file = dir_ + "/tls.key",
                                        .client_ca_file = dir_ + "/ca.crt",
                                        .require_client_certificate = true});
  ASSERT_TRUE(cert.ok()) << cert.status();
  HttpEndpointOptions options;
  options.tls = *cert;
  auto endpoint = HttpEndpoint::Start("127.0.0.1:0", PingRoute(), options);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_EQ(Get((*endpoint)->port(), true), 200);
  EXPECT_EQ(Get((*endpoint)->port(), false), -1);
  // A client certificate of another CA is refused too.
  testing::TestCa other("other-ca");
  const testing::TestCertificate stranger = other.Issue("prometheus", {}, false);
  testing::WriteFileAtomically(dir_ + "/client.crt", stranger.cert_pem);
  testing::WriteFileAtomically(dir_ + "/client.key", stranger.key_pem);
  EXPECT_EQ(Get((*endpoint)->port(), true), -1);
}

TEST_F(HttpEndpointTlsTest, FilesThatDoNotLoadAreNamed) {
  auto missing = ServingCertificate::Load({.cert_file = dir_ + "/nope.crt",
                                           .key_file = dir_ + "/tls.key"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.crt"));
  testing::WriteFileAtomically(dir_ + "/tls.key", ca_.Issue("x", {}, true).key_pem);
  auto mismatch = ServingCertificate::Load({.cert_file = dir_ + "/tls.crt",
                                            .key_file = dir_ + "/tls.key"});
  EXPECT_THAT(mismatch.status().message(), HasSubstr("does not match"));
  auto no_ca = ServingCertificate::Load({.cert_file = dir_ + "/tls.crt",
                                         .key_file = dir_ + "/tls.crt",
                                         .client_ca_file = dir_ + "/tls.key"});
  EXPECT_FALSE(no_ca.ok());
}

}  // namespace
}  // namespace admitd
