#include "server/config_kueue.h"

#include <fstream>
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

}  // namespace
}  // namespace admitd
