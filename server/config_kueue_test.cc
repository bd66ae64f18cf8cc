#include "server/config_kueue.h"

#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd {
namespace {

using ::testing::ElementsAre;

absl::StatusOr<Config> FromFile(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  bool help = false;
  return ParseConfig({"--config", path}, &help);
}

TEST(KueueSectionsTest, FairSharingIsOffWithoutItsSection) {
  bool help = false;
  absl::StatusOr<Config> config = ParseConfig({}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->fair_sharing);
}

TEST(KueueSectionsTest, FairSharingV1beta2IsOnByPresenceAndNeedsStrategies) {
  absl::StatusOr<Config> on = FromFile(
      "fs-v1beta2.yaml", "fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->fair_sharing);
  EXPECT_THAT(on->fair_sharing_preemption_strategies, ElementsAre("LessThanInitialShare"));
  absl::StatusOr<Config> empty = FromFile("fs-empty.yaml", "fairSharing: {}\n");
  EXPECT_EQ(empty.status().message(),
            "fairSharing.preemptionStrategies: Required value: must be specified");
}

TEST(KueueSectionsTest, FairSharingV1beta1FollowsEnableAndDefaultsBothStrategies) {
  absl::StatusOr<Config> on = FromFile("fs-v1beta1.yaml", "fairSharing:\n  enable: true\n");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->fair_sharing);
  EXPECT_THAT(on->fair_sharing_preemption_strategies,
              ElementsAre("LessThanOrEqualToFinalShare", "LessThanInitialShare"));
  absl::StatusOr<Config> off = FromFile(
      "fs-v1beta1-off.yaml",
      "fairSharing:\n  enable: false\n  preemptionStrategies: [LessThanInitialShare]\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->fair_sharing);
}

TEST(KueueSectionsTest, FairSharingStrategiesAreKueuesThreeLists) {
  for (const char* valid : {"[LessThanOrEqualToFinalShare]",
                            "[LessThanOrEqualToFinalShare, LessThanInitialShare]"}) {
    absl::StatusOr<Config> config = FromFile(
        "fs-valid.yaml", std::string("fairSharing:\n  preemptionStrategies: ") + valid + "\n");
    EXPECT_TRUE(config.ok()) << valid << ": " << config.status();
  }
  absl::StatusOr<Config> reversed = FromFile(
      "fs-reversed.yaml",
      "fairSharing:\n  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]\n");
  EXPECT_EQ(reversed.status().message(),
            "fairSharing.preemptionStrategies: Unsupported value: "
            "\"LessThanInitialShare,LessThanOrEqualToFinalShare\": supported values: "
            "\"LessThanOrEqualToFinalShare\", \"LessThanInitialShare\", "
            "\"LessThanOrEqualToFinalShare,LessThanInitialShare\"");
  absl::StatusOr<Config> typo = FromFile(
      "fs-typo.yaml", "fairSharing:\n  preemptionStrategy: [LessThanInitialShare]\n");
  EXPECT_THAT(std::string(typo.status().message()),
              ::testing::HasSubstr("fairSharing.preemptionStrategy: unknown key (known: enable, "
                                   "preemptionStrategies)"));
}

TEST(KueueSectionsTest, WaitForPodsReadyIsOffWithoutItsSection) {
  bool help = false;
  absl::StatusOr<Config> config = ParseConfig({}, &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->wait_for_pods_ready);
}

TEST(KueueSectionsTest, WaitForPodsReadyV1beta2DefaultsToThirtyMinutesWithoutBlocking) {
  absl::StatusOr<Config> c = FromFile("wfpr-v1beta2.yaml", "waitForPodsReady: {}\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->wait_for_pods_ready);
  EXPECT_EQ(*c->pods_ready_timeout, absl::Minutes(30));
  EXPECT_FALSE(*c->pods_ready_block_admission);
  EXPECT_EQ(*c->pods_ready_recovery_timeout, absl::Minutes(30));
  EXPECT_EQ(c->pods_ready_timestamp, "Eviction");
}

TEST(KueueSectionsTest, WaitForPodsReadyV1beta1FollowsEnableWithItsDefaults) {
  absl::StatusOr<Config> c = FromFile("wfpr-v1beta1.yaml", "waitForPodsReady:\n  enable: true\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->wait_for_pods_ready);
  EXPECT_EQ(*c->pods_ready_timeout, absl::Minutes(5));
  EXPECT_TRUE(*c->pods_ready_block_admission);
  EXPECT_EQ(*c->pods_ready_recovery_timeout, absl::Minutes(5));
  absl::StatusOr<Config> off =
      FromFile("wfpr-v1beta1-off.yaml", "waitForPodsReady:\n  enable: false\n  timeout: 1m\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->wait_for_pods_ready);
}

TEST(KueueSectionsTest, WaitForPodsReadyFieldsAsKueueWritesThem) {
  absl::StatusOr<Config> c = FromFile("wfpr-full.yaml",
                                      "waitForPodsReady:\n"
                                      "  timeout: 10m\n"
                                      "  blockAdmission: true\n"
                                      "  recoveryTimeout: 0s\n"
                                      "  requeuingStrategy:\n"
                                      "    timestamp: Creation\n"
                                      "    backoffLimitCount: 3\n"
                                      "    backoffBaseSeconds: 10\n"
                                      "    backoffMaxSeconds: 100\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c->pods_ready_timeout, absl::Minutes(10));
  EXPECT_TRUE(*c->pods_ready_block_admission);
  EXPECT_EQ(*c->pods_ready_recovery_timeout, absl::ZeroDuration());
  EXPECT_EQ(c->pods_ready_timestamp, "Creation");
  EXPECT_EQ(c->backoff_limit_count, 3);
  EXPECT_EQ(c->backoff_base_seconds, 10);
  EXPECT_EQ(c->backoff_max_seconds, 100);
  EXPECT_THAT(std::string(FromFile("wfpr-bad-ts.yaml",
                                   "waitForPodsReady:\n  requeuingStrategy: {timestamp: Now}\n")
                              .status()
                              .message()),
              ::testing::HasSubstr("waitForPodsReady.requeuingStrategy.timestamp: Unsupported "
                                   "value: \"Now\": supported values: \"Creation\", "
                                   "\"Eviction\""));
  EXPECT_THAT(std::string(FromFile("wfpr-bad-limit.yaml",
                                   "waitForPodsReady:\n  requeuingStrategy: "
                                   "{backoffLimitCount: -1}\n")
                              .status()
                              .message()),
              ::testing::HasSubstr("waitForPodsReady.requeuingStrategy.backoffLimitCount: Invalid "
                                   "value: -1: must be greater than or equal to 0"));
  EXPECT_THAT(std::string(FromFile("wfpr-bad-timeout.yaml", "waitForPodsReady: {timeout: -5m}\n")
                              .status()
                              .message()),
              ::testing::HasSubstr("waitForPodsReady.timeout: Invalid value: \"-5m\": must be "
                                   "greater than or equal to 0"));
}

TEST(KueueSectionsTest, AdmissionFairSharingIsOnByPresenceWithKueuesDefaults) {
  bool help = false;
  absl::StatusOr<Config> off = ParseConfig({}, &help);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->admission_fair_sharing);
  absl::StatusOr<Config> c = FromFile("afs.yaml",
                                      "admissionFairSharing:\n"
                                      "  usageHalfLifeTime: 168h\n"
                                      "  resourceWeights:\n"
                                      "    cpu: 2\n"
                                      "    nvidia.com/gpu: 10.5\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->admission_fair_sharing);
  EXPECT_EQ(*c->afs_usage_half_life, absl::Hours(168));
  EXPECT_EQ(*c->afs_usage_sampling_interval, absl::Minutes(5));
  EXPECT_EQ(c->afs_resource_weights,
            (std::map<std::string, double>{{"cpu", 2}, {"nvidia.com/gpu", 10.5}}));
  EXPECT_THAT(std::string(FromFile("afs-neg.yaml",
                                   "admissionFairSharing: {resourceWeights: {cpu: -1}}\n")
                              .status()
                              .message()),
              ::testing::HasSubstr("admissionFairSharing.resourceWeights: cpu: Invalid value: -1: "
                                   "must be greater than or equal to 0"));
  EXPECT_THAT(std::string(FromFile("afs-neg-h.yaml",
                                   "admissionFairSharing: {usageHalfLifeTime: -1h}\n")
                              .status()
                              .message()),
              ::testing::HasSubstr("admissionFairSharing.usageHalfLifeTime: Invalid value: "
                                   "\"-1h\": must be greater than or equal to 0"));
}

}  // namespace
}  // namespace admitd
