#include "clients/admitctl_flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::clients {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AdmitctlFlagsTest, ShortAndLongNamesMeanTheSame) {
  absl::StatusOr<Args> a = ParseArgs({"get", "wl", "-n", "team", "-o", "json", "-A"});
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<Args> b =
      ParseArgs({"get", "--namespace=team", "wl", "--output", "json", "--all-namespaces"});
  ASSERT_TRUE(b.ok()) << b.status();
  for (const Args* args : {&*a, &*b}) {
    EXPECT_THAT(args->positional, ElementsAre("get", "wl"));
    EXPECT_EQ(args->Get("-n"), "team");
    EXPECT_EQ(args->Get("-o"), "json");
    EXPECT_TRUE(args->Has("-A"));
  }
}

TEST(AdmitctlFlagsTest, RepeatedFlagsSwitchesAndOptionalValues) {
  absl::StatusOr<Args> a =
      ParseArgs({"apply", "-f", "a.yaml", "--filename=b.yaml", "-w", "--wait=false", "--finished"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->flags.at("-f"), ElementsAre("a.yaml", "b.yaml"));
  EXPECT_TRUE(a->Has("-w"));
  EXPECT_FALSE(a->Has("--wait"));
  EXPECT_EQ(a->Get("--finished"), "succeeded");
  a = ParseArgs({"release", "x", "--finished=failed"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Get("--finished"), "failed");
  EXPECT_EQ(a->Get("-n", "default"), "default");
}

TEST(AdmitctlFlagsTest, AnUnknownFlagIsRefusedWithTheClosestKnownOne) {
  EXPECT_EQ(ParseArgs({"get", "wl", "--namespce", "x"}).status().message(),
            "unknown flag --namespce (did you mean --namespace?)");
  EXPECT_EQ(ParseArgs({"get", "wl", "--frobnicate"}).status().message(),
            "unknown flag --frobnicate (see --help)");
  EXPECT_EQ(ParseArgs({"admit", "x", "--timeout"}).status().message(), "--timeout: needs a value");
}

TEST(AdmitctlFlagsTest, HelpListsTheCommandsAndEveryFlag) {
  absl::StatusOr<Args> a = ParseArgs({"--help"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->help);
  const std::string usage = AdmitctlUsage();
  EXPECT_THAT(usage, HasSubstr("  resize NAME [-n NS] --count PODSET=N"));
  Args scratch;
  const settings::Table table = AdmitctlFlags(&scratch);
  for (const settings::Setting& s : table.settings()) {
    const std::string first = s.flag.substr(0, s.flag.find(','));
    EXPECT_THAT(usage, HasSubstr("  " + first)) << s.flag;
  }
}

}  // namespace
}  // namespace admitd::clients
