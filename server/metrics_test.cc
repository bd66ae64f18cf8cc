#include "server/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"

namespace admitd {
namespace {

using ::testing::HasSubstr;

engine::Change WorkloadChange(const std::string& reason, const std::string& cq,
                              const std::string& evicted_reason = "") {
  auto wl = std::make_shared<v1::Workload>();
  wl->mutable_metadata()->set_namespace_("ns");
  wl->mutable_metadata()->set_name("w");
  wl->mutable_spec()->set_queue_name("lq");
  if (!cq.empty()) wl->mutable_status()->mutable_admission()->set_cluster_queue(cq);
  if (!evicted_reason.empty()) {
    v1::Condition* c = wl->mutable_status()->add_conditions();
    c->set_type(engine::kEvicted);
    c->set_status("True");
    c->set_reason(evicted_reason);
  }
  engine::Change change;
  change.kind = v1::OBJECT_KIND_WORKLOAD;
  change.key = "ns/w";
  change.reason = reason;
  change.workload = wl;
  return change;
}

TEST(MetricsTest, CountsCommittedChangesByKind) {
  Metrics m;
  m.CountChanges({WorkloadChange("Admitted", "cq"), WorkloadChange("Admitted", "cq"),
                  WorkloadChange("Evicted", "cq", "Preempted"),
                  WorkloadChange("WorkloadSliceReplaced", "cq"),
                  WorkloadChange("SliceCreated", "")});
  EXPECT_EQ(m.Value("admitd_admitted_workloads_total", {{"cluster_queue", "cq"}}), 2);
  EXPECT_EQ(m.Value("admitd_evicted_workloads_total",
                    {{"cluster_queue", "cq"}, {"reason", "Preempted"}}),
            1);
  EXPECT_EQ(m.Value("admitd_replaced_workload_slices_total", {{"cluster_queue", "cq"}}), 1);
  EXPECT_EQ(m.Value("admitd_workload_slices_created_total", {{"local_queue", "ns/lq"}}), 1);
  EXPECT_EQ(m.Value("admitd_workload_changes_total", {{"reason", "Admitted"}}), 2);
}

TEST(MetricsTest, CountsGatedAndUngatedPods) {
  auto pod = std::make_shared<v1::PodObservation>();
  pod->set_cluster("c1");
  engine::Change gated;
  gated.kind = v1::OBJECT_KIND_POD;
  gated.reason = "PodGated";
  gated.pod = pod;
  engine::Change ungated = gated;
  ungated.reason = "PodUngated";
  engine::Change other = gated;
  other.reason = "PodReported";
  Metrics m;
  m.CountChanges({gated, gated, ungated, other});
  EXPECT_EQ(m.Value("admitd_pods_gated_total", {{"cluster", "c1"}}), 2);
  EXPECT_EQ(m.Value("admitd_pods_ungated_total", {{"cluster", "c1"}}), 1);
}

TEST(MetricsTest, RendersPrometheusText) {
  Metrics m;
  m.Add("b_total", "B things.", {{"q", "x\"y"}}, 2);
  m.Set("a_gauge", "A level.", {}, 1.5);
  EXPECT_EQ(m.Render(),
            "# HELP a_gauge A level.\n# TYPE a_gauge gauge\na_gauge 1.5\n"
            "# HELP b_total B things.\n# TYPE b_total counter\nb_total{q=\"x\\\"y\"} 2\n");
}

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(MetricsServerTest, ServesMetricsAndRefusesOtherPaths) {
  Metrics m;
  m.Add("admitd_admitted_workloads_total", "Workloads admitted.", {{"cluster_queue", "cq"}}, 3);
  auto server = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string metrics = HttpGet((*server)->port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(metrics, HasSubstr("admitd_admitted_workloads_total{cluster_queue=\"cq\"} 3\n"));
  EXPECT_THAT(HttpGet((*server)->port(), "/nope"), HasSubstr("404 Not Found"));
}

TEST(MetricsServerTest, ReadyzFollowsReadiness) {
  Metrics m;
  std::atomic<bool> ready{false};
  auto server = MetricsServer::Start("127.0.0.1:0", &m, [&ready] {
    return ready ? absl::OkStatus() : absl::UnavailableError("the disk is full");
  });
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string not_ready = HttpGet((*server)->port(), "/readyz");
  EXPECT_THAT(not_ready, HasSubstr("503 Service Unavailable"));
  EXPECT_THAT(not_ready, HasSubstr("the disk is full"));
  ready = true;
  EXPECT_THAT(HttpGet((*server)->port(), "/readyz"), HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(HttpGet((*server)->port(), "/healthz"), HasSubstr("HTTP/1.1 200 OK"));
}

TEST(MetricsServerTest, BadAddressIsAnError) {
  Metrics m;
  EXPECT_EQ(MetricsServer::Start("no-port", &m).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace admitd
