#include "clients/admitctl_flags.h"

#include "absl/strings/str_split.h"
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

TEST(AdmitctlFlagsTest, HelpListsEveryCommandAndEveryKindItTakes) {
  const std::string usage = AdmitctlUsage();
  for (const CommandHelp& c : AdmitctlCommands()) {
    EXPECT_THAT(usage, HasSubstr("\n  " + c.name + " ")) << c.name;
  }
  EXPECT_THAT(usage, HasSubstr("resourceflavor(s)/rf/flavor(s), cohort(s)"));
  EXPECT_THAT(usage, HasSubstr("workloadpriorityclass(es)/wpc"));
  EXPECT_THAT(usage, HasSubstr("multikueuecluster(s)/mkc"));
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
}

TEST(AdmitctlFlagsTest, KindsByNamePluralAndShortName) {
  EXPECT_EQ(KindFromName("cq"), v1::OBJECT_KIND_CLUSTER_QUEUE);
  EXPECT_EQ(KindFromName("clusterqueues"), v1::OBJECT_KIND_CLUSTER_QUEUE);
  EXPECT_EQ(KindFromName("flavors"), v1::OBJECT_KIND_RESOURCE_FLAVOR);
  EXPECT_EQ(KindFromName("mkc"), v1::OBJECT_KIND_MULTIKUEUE_CLUSTER);
  EXPECT_EQ(KindFromName("multikueueconfigs"), v1::OBJECT_KIND_MULTIKUEUE_CONFIG);
  EXPECT_EQ(KindFromName("ev"), v1::OBJECT_KIND_EVENT);
  EXPECT_EQ(KindFromName("pods"), v1::OBJECT_KIND_UNSPECIFIED);
}

TEST(AdmitctlFlagsTest, AnUnknownCommandIsRefusedWithTheClosestKnownOne) {
  EXPECT_EQ(UnknownCommand("sumbit"), "unknown command \"sumbit\"; did you mean \"submit\"?");
  EXPECT_EQ(UnknownCommand("deactvate"),
            "unknown command \"deactvate\"; did you mean \"deactivate\"?");
  EXPECT_EQ(UnknownCommand("frobnicate"), "unknown command \"frobnicate\"");
}

}  // namespace
}  // namespace admitd::clients
