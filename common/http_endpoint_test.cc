#include "common/http_endpoint.h"

#include <atomic>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/raw_http_client.h"

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

}  // namespace
}  // namespace admitd
