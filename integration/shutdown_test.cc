// Shutdown under load: every call in flight when it begins ends OK (and is durable) or
// UNAVAILABLE (and never ran); none is CANCELLED, which would leave its caller unable to tell
// whether its write happened.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

class ShutdownTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    Start();
    Apply(testing::Flavor("default"));
    Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000000"}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
};

TEST_F(ShutdownTest, CallsInFlightEndOkOrUnavailableNeverCancelled) {
  constexpr int kRounds = 3;
  constexpr int kClients = 24;
  std::map<std::string, grpc::StatusCode> outcomes;  // every call of every round
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) Restart();
    std::mutex mu;
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    const std::string address = server_->address();
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        // Each client has its own connection, as separate processes would.
        grpc::ChannelArguments args;
        args.SetInt("client_id", c);
        auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
        auto stub = v1::AdmissionService::NewStub(channel);
        // Submits until one is refused: a caller told UNAVAILABLE backs off.
        for (int i = 0;; ++i) {
          const std::string name = absl::StrCat("r", round, "-c", c, "-", i);
          v1::SubmitRequest req;
          *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "1"}});
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
          v1::SubmitResponse resp;
          const grpc::Status s = stub->Submit(&ctx, req, &resp);
          {
            std::lock_guard<std::mutex> lock(mu);
            outcomes[name] = s.error_code();
          }
          if (!s.ok()) return;
          ++ok;
        }
      });
    }
    // Shut down mid-stream, once the clients are well under way.
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (ok.load() < 100 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_GE(ok.load(), 100);
    server_->Shutdown(absl::Seconds(5));
    for (std::thread& t : clients) t.join();
  }

  int cancelled = 0, unavailable = 0, other = 0, succeeded = 0;
  for (const auto& [name, code] : outcomes) {
    if (code == grpc::StatusCode::OK) ++succeeded;
    if (code == grpc::StatusCode::CANCELLED) ++cancelled;
    if (code == grpc::StatusCode::UNAVAILABLE) ++unavailable;
    if (code != grpc::StatusCode::OK && code != grpc::StatusCode::CANCELLED &&
        code != grpc::StatusCode::UNAVAILABLE) {
      ++other;
      ADD_FAILURE() << name << " ended " << code;
    }
  }
  EXPECT_EQ(cancelled, 0) << "of " << outcomes.size() << " calls";
  EXPECT_EQ(other, 0);
  EXPECT_EQ(unavailable, kRounds * kClients);  // each client's last call

  // Every OK write is there after a restart; every UNAVAILABLE one never ran.
  Restart();
  grpc::ClientContext ctx;
  v1::ListWorkloadsRequest list;
  v1::ListWorkloadsResponse listed;
  ASSERT_TRUE(client_->admission->List(&ctx, list, &listed).ok());
  std::map<std::string, bool> stored;
  for (const v1::Workload& w : listed.workloads()) stored[w.metadata().name()] = true;
  int lost = 0, ran_anyway = 0;
  for (const auto& [name, code] : outcomes) {
    if (code == grpc::StatusCode::OK && stored.count(name) == 0) ++lost;
    if (code == grpc::StatusCode::UNAVAILABLE && stored.count(name) > 0) ++ran_anyway;
  }
  EXPECT_EQ(lost, 0) << "acknowledged writes missing after restart";
  EXPECT_EQ(ran_anyway, 0) << "writes answered UNAVAILABLE were applied";
  EXPECT_EQ(static_cast<int>(stored.size()), succeeded);
}

}  // namespace
}  // namespace admitd
