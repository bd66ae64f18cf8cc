#include "common/replica_target.h"

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"

namespace admitd {
namespace {

TEST(ReplicaTargetTest, AListBecomesOneTargetOfEveryAddress) {
  std::string authority;
  absl::StatusOr<std::string> target =
      ReplicaListTarget("127.0.0.1:50051, localhost:50052,127.0.0.3:50053", &authority);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(*target, "ipv4:127.0.0.1:50051,127.0.0.1:50052,127.0.0.3:50053");
  EXPECT_EQ(authority, "127.0.0.1:50051");
  EXPECT_TRUE(IsReplicaList("a:1,b:2"));
  EXPECT_FALSE(IsReplicaList("dns:///admitd-peers:50051"));

  target = ReplicaListTarget("[::1]:1,[::1]:2", &authority);
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(*target, "ipv6:[::1]:1,[::1]:2");
}

TEST(ReplicaTargetTest, BadEntriesAreNamed) {
  std::string authority;
  for (const auto& [list, named] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1:50051,127.0.0.2", "\"127.0.0.2\" is not host:port"},
           {"127.0.0.1:0,127.0.0.2:1", "\"127.0.0.1:0\" is not host:port"},
           {"127.0.0.1:1,:2", "\":2\" is not host:port"},
           {"127.0.0.1:1,[::1]:2", "mix IPv4 and IPv6"},
           {",", "empty"}}) {
    absl::StatusOr<std::string> target = ReplicaListTarget(list, &authority);
    ASSERT_FALSE(target.ok()) << list;
    EXPECT_EQ(target.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_NE(target.status().message().find(named), std::string::npos) << target.status();
  }
}

TEST(ReplicaTargetTest, TheServiceConfigIsOneGrpcAccepts) {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(FollowLeaderServiceConfig());
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel("ipv4:127.0.0.1:1", grpc::InsecureChannelCredentials(), args);
  // gRPC parses a default service config when the channel is made; a bad one puts the channel
  // into TRANSIENT_FAILURE with an error, a good one lets it try to connect.
  channel->GetState(/*try_to_connect=*/true);
  EXPECT_NE(FollowLeaderServiceConfig().find(R"("healthCheckConfig":{"serviceName":""})"),
            std::string::npos);
  EXPECT_NE(channel->GetServiceConfigJSON().find("round_robin"), std::string::npos)
      << channel->GetServiceConfigJSON();
}

}  // namespace
}  // namespace admitd
