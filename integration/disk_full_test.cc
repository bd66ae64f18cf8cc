// A full (or failing) disk through the public API: writes are answered UNAVAILABLE, the server
// stays up, and once the disk takes writes again it serves again by itself, holding exactly what
// a restart recovers. The disk is RocksDB's file system with faults injected
// (store/faulty_file_system.h).
#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"
#include "store/faulty_file_system.h"

namespace admitd {
namespace {

using Fault = store::FaultyFileSystem::Fault;

class DiskFullTest : public testing::InProcessTest, public ::testing::WithParamInterface<Fault> {
 protected:
  void SetUp() override {
    config_.store_file_system = fs_;
    Start();
    Apply(testing::Flavor("default"));
    Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000"}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }

  grpc::Status Submit(const std::string& name) {
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "1"}});
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::SubmitResponse resp;
    return client_->admission->Submit(&ctx, req, &resp);
  }

  grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& service = "") {
    auto health = grpc::health::v1::Health::NewStub(client_->channel);
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    if (!health->Check(&ctx, req, &resp).ok())
      return grpc::health::v1::HealthCheckResponse::UNKNOWN;
    return resp.status();
  }

  // name -> (resource_version, state) of every workload, as the server lists them.
  std::map<std::string, std::string> Workloads() {
    grpc::ClientContext ctx;
    v1::ListWorkloadsRequest req;
    v1::ListWorkloadsResponse resp;
    grpc::Status s = client_->admission->List(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::map<std::string, std::string> out;
    for (const v1::Workload& w : resp.workloads()) {
      out[w.metadata().name()] = absl::StrCat(w.metadata().resource_version(), " ",
                                              w.status().admission().cluster_queue());
    }
    return out;
  }

  std::shared_ptr<store::FaultyFileSystem> fs_ = std::make_shared<store::FaultyFileSystem>();
};

TEST_P(DiskFullTest, WritesAreUnavailableUntilTheDiskRecoversThenTheServerServesAgain) {
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(Submit(absl::StrCat("w", i)).ok());

  fs_->SetFault(GetParam());
  grpc::Status refused = Submit("w6");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  if (GetParam() == Fault::kNoSpace) {
    EXPECT_TRUE(absl::StrContains(refused.error_message(), "the disk is full"))
        << refused.error_message();
  }
  grpc::Status later = Submit("w7");
  EXPECT_EQ(later.error_code(), grpc::StatusCode::UNAVAILABLE) << later.error_message();
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  // Alive all along: a liveness probe must not restart a server waiting for its disk.
  EXPECT_EQ(Health("liveness"), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_FALSE(server_->sequencer().health().ok());

  fs_->SetFault(Fault::kNone);  // space returns
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (Health() != grpc::health::v1::HealthCheckResponse::SERVING) {
    ASSERT_LT(absl::Now(), deadline) << "the server did not recover by itself";
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(Submit("w6").ok());
  ASSERT_TRUE(Submit("w8").ok());

  const std::map<std::string, std::string> before = Workloads();
  EXPECT_EQ(before.size(), 7u);  // w1..w6 and w8: every write answered OK, and no other
  EXPECT_EQ(before.count("w7"), 0u);
  for (const auto& [name, state] : before) {
    EXPECT_TRUE(absl::EndsWith(state, " cq")) << name << " is not admitted: " << state;
  }
  config_.store_file_system = nullptr;
  Restart();
  EXPECT_EQ(Workloads(), before) << "the state served differs from what a restart recovers";
}

INSTANTIATE_TEST_SUITE_P(Faults, DiskFullTest, ::testing::Values(Fault::kNoSpace, Fault::kIOError),
                         [](const auto& info) {
                           return info.param == Fault::kNoSpace ? "NoSpace" : "IOError";
                         });

}  // namespace
}  // namespace admitd
