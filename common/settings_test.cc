#include "common/settings.h"

#include <limits>
#include <map>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::settings {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Values {
  std::string listen = "default";
  bool fast = false;
  bool sync = true;
  int64_t workers = 4;
  std::vector<std::string> namespaces;
  std::string gates;
  std::string origin;
  int64_t step = 0;
  std::vector<std::string> files;
  std::string finished;
};

Table MakeTable(Values* v) {
  Table t("prog");
  t.Add({.flag = "--listen",
         .key = "listen",
         .value = "HOST:PORT",
         .help = "where to listen",
         .default_text = "default",
         .parse = String(&v->listen)});
  t.Add({.flag = "--fast",
         .key = "fast",
         .help = "go fast",
         .switch_value = "true",
         .parse = Bool(&v->fast)});
  t.Add({.flag = "--no-sync",
         .help = "no fsync",
         .switch_value = "true",
         .parse = NegatedBool(&v->sync)});
  t.Add({.key = "sync", .help = "fsync", .parse = Bool(&v->sync)});
  t.Add({.flag = "--workers",
         .key = "workers",
         .value = "N",
         .help = "how many",
         .parse = Int(&v->workers, 1, 256)});
  t.Add({.flag = "--namespaces",
         .key = "namespaces",
         .value = "NS,...",
         .help = "which",
         .parse = List(&v->namespaces)});
  t.Add({.flag = "--gates",
         .key = "gates",
         .value = "A=true,...",
         .help = "gates",
         .parse = String(&v->gates)});
  t.Add({.flag = "--origin",
         .key = "multi.origin",
         .value = "V",
         .help = "origin",
         .parse = String(&v->origin)});
  t.Add({.flag = "--step",
         .key = "multi.incremental.step",
         .value = "N",
         .help = "step",
         .parse = Int(&v->step, 1, 10)});
  t.Add({.flag = "-f,--filename",
         .value = "FILE",
         .help = "a file",
         .repeatable = true,
         .parse = [v](const std::string& f) {
           v->files.push_back(f);
           return absl::OkStatus();
         }});
  t.Add({.flag = "--finished",
         .value = "succeeded|failed",
         .help = "how it ended",
         .switch_value = "succeeded",
         .parse = String(&v->finished)});
  return t;
}

TEST(SettingsTest, FlagsInEveryFormApplyInOrder) {
  Values v;
  Table t = MakeTable(&v);
  absl::StatusOr<CommandLine> line =
      t.Parse({"--listen", "a:1", "--fast", "--workers=7", "-f", "x", "--filename=y",
               "--listen=b:2", "--no-sync", "--finished"});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(v.listen, "b:2");  // the last one
  EXPECT_TRUE(v.fast);
  EXPECT_FALSE(v.sync);
  EXPECT_EQ(v.workers, 7);
  EXPECT_THAT(v.files, ElementsAre("x", "y"));
  EXPECT_EQ(v.finished, "succeeded");
  ASSERT_NE(line->Last("--listen"), nullptr);
  EXPECT_EQ(*line->Last("--listen"), "b:2");
  EXPECT_EQ(line->Last("--gates"), nullptr);
  ASSERT_TRUE(t.Parse({"--fast=false", "--finished=failed"}).ok());
  EXPECT_FALSE(v.fast);
  EXPECT_EQ(v.finished, "failed");
  // An empty value is a value.
  ASSERT_TRUE(t.Parse({"--listen="}).ok());
  EXPECT_EQ(v.listen, "");
  v.listen = "x";
  ASSERT_TRUE(t.Parse({"--listen", ""}).ok());
  EXPECT_EQ(v.listen, "");
  EXPECT_EQ(t.Parse({"--workers", ""}).status().message(),
            "--workers: must be an integer from 1 to 256, not \"\"");
}

TEST(SettingsTest, ErrorsNameTheFlagAndSuggestTheClosest) {
  Values v;
  Table t = MakeTable(&v);
  EXPECT_EQ(t.Parse({"--listn", "x"}).status().message(),
            "unknown flag --listn (did you mean --listen?)");
  EXPECT_EQ(t.Parse({"--bogus=1"}).status().message(), "unknown flag --bogus (see --help)");
  EXPECT_EQ(t.Parse({"--listen"}).status().message(), "--listen: needs a value");
  EXPECT_EQ(t.Parse({"-f"}).status().message(), "--filename: needs a value");
  EXPECT_EQ(t.Parse({"--workers", "0"}).status().message(),
            "--workers: must be an integer from 1 to 256, not \"0\"");
  EXPECT_EQ(t.Parse({"--fast=maybe"}).status().message(),
            "--fast: must be true or false, not \"maybe\"");
  EXPECT_EQ(t.Parse({"stray"}).status().message(), "unexpected argument \"stray\"");
  EXPECT_EQ(v.workers, 4);  // nothing applied from a bad value
}

TEST(SettingsTest, PositionalArgumentsAndTheEndOfFlags) {
  Values v;
  Table t = MakeTable(&v);
  absl::StatusOr<CommandLine> line =
      t.Parse({"get", "-f", "a", "wl", "--", "--not-a-flag", "-"}, /*positional_allowed=*/true);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_THAT(line->positional, ElementsAre("get", "wl", "--not-a-flag", "-"));
  EXPECT_THAT(v.files, ElementsAre("a"));
  line = t.Parse({"x", "--help"}, true);
  ASSERT_TRUE(line.ok());
  EXPECT_TRUE(line->help);
}

TEST(SettingsTest, YamlKeysListsMappingsAndNestedKeys) {
  Values v;
  Table t = MakeTable(&v);
  ASSERT_TRUE(t.LoadYaml("listen: y:1\n"
                         "fast: true\n"
                         "sync: false\n"
                         "namespaces: [a, b]\n"
                         "gates: {A: true, B: false}\n"
                         "multi:\n"
                         "  origin: here\n"
                         "  incremental: {step: 3}\n",
                         "f.yaml")
                  .ok());
  EXPECT_EQ(v.listen, "y:1");
  EXPECT_TRUE(v.fast);
  EXPECT_FALSE(v.sync);
  EXPECT_THAT(v.namespaces, ElementsAre("a", "b"));
  EXPECT_EQ(v.gates, "A=true,B=false");
  EXPECT_EQ(v.origin, "here");
  EXPECT_EQ(v.step, 3);
}

TEST(SettingsTest, YamlErrorsNameTheFileAndTheKey) {
  Values v;
  Table t = MakeTable(&v);
  EXPECT_EQ(t.LoadYaml("listenn: x\n", "f.yaml").message(),
            "f.yaml: listenn: unknown key (did you mean listen?)");
  EXPECT_EQ(t.LoadYaml("zzz: x\n", "f.yaml").message(),
            "f.yaml: zzz: unknown key (known: listen, fast, sync, workers, namespaces, gates, "
            "multi)");
  EXPECT_EQ(t.LoadYaml("multi: {orign: x}\n", "f.yaml").message(),
            "f.yaml: multi.orign: unknown key (did you mean origin?)");
  EXPECT_EQ(t.LoadYaml("workers: 300\n", "f.yaml").message(),
            "f.yaml: workers: must be an integer from 1 to 256, not \"300\"");
  EXPECT_EQ(t.LoadYaml("multi: 3\n", "f.yaml").message(), "f.yaml: multi: must be a mapping");
  EXPECT_THAT(std::string(t.LoadYaml("- a\n", "f.yaml").message()),
              HasSubstr("must be a YAML mapping"));
  EXPECT_THAT(std::string(t.LoadYaml("a: [\n", "f.yaml").message()), HasSubstr("f.yaml: "));
  EXPECT_THAT(std::string(t.LoadYamlFile("/nonexistent/x.yaml").message()),
              HasSubstr("/nonexistent/x.yaml"));
}

TEST(SettingsTest, ASectionIsOnByItsPresenceAndItsKeysAreRead) {
  bool on = false;
  std::string strategy = "unset";
  Table t("prog");
  t.Add({.key = "fair", .section = true, .parse = Bool(&on)});
  t.Add({.key = "fair.strategy", .parse = String(&strategy)});
  EXPECT_FALSE(t.LoadYaml("other: {}\n", "f.yaml").ok());
  EXPECT_FALSE(on);
  ASSERT_TRUE(t.LoadYaml("fair: {}\n", "f.yaml").ok());
  EXPECT_TRUE(on);
  EXPECT_EQ(strategy, "unset");
  on = false;
  ASSERT_TRUE(t.LoadYaml("fair:\n", "f.yaml").ok());  // present with nothing inside
  EXPECT_TRUE(on);
  on = false;
  ASSERT_TRUE(t.LoadYaml("fair:\n  strategy: LessThanInitialShare\n", "f.yaml").ok());
  EXPECT_TRUE(on);
  EXPECT_EQ(strategy, "LessThanInitialShare");
  EXPECT_EQ(t.LoadYaml("fair: yes\n", "f.yaml").message(), "f.yaml: fair: must be a mapping");
  EXPECT_EQ(t.LoadYaml("fair: {strategi: x}\n", "f.yaml").message(),
            "f.yaml: fair.strategi: unknown key (did you mean strategy?)");
}

TEST(SettingsTest, HelpAndDocsComeFromTheTable) {
  Values v;
  Table t = MakeTable(&v);
  const std::string help = t.FlagHelp();
  EXPECT_THAT(help, HasSubstr("  --listen HOST:PORT"));
  EXPECT_THAT(help, HasSubstr("where to listen (default default; key listen)"));
  EXPECT_THAT(help, HasSubstr("  -f, --filename FILE"));
  EXPECT_THAT(help, HasSubstr("  --finished[=succeeded|failed]"));
  EXPECT_EQ(help.find("key sync)"), std::string::npos);  // a key without a flag is no flag
  for (absl::string_view line : absl::StrSplit(help, '\n')) EXPECT_LE(line.size(), 100u) << line;
  const std::string md = t.MarkdownTable();
  EXPECT_THAT(md, HasSubstr("| Flag | Config key | Default | Meaning |"));
  EXPECT_THAT(md, HasSubstr("| `--listen HOST:PORT` | `listen` | `default` | where to listen |"));
  EXPECT_THAT(md, HasSubstr("|  | `sync` |  | fsync |"));
  EXPECT_THAT(md, HasSubstr("`-f FILE` `--filename FILE` (repeatable)"));
}

TEST(SettingsTest, ParsersCheckTheirValues) {
  absl::Duration d;
  EXPECT_TRUE(Duration(&d)("1m30s").ok());
  EXPECT_EQ(d, absl::Seconds(90));
  EXPECT_FALSE(Duration(&d)("-1s").ok());
  EXPECT_EQ(Duration(&d, absl::Seconds(1))("10ms").message(),
            "must be a duration of at least 1s, not \"10ms\"");
  uint64_t bytes = 0;
  EXPECT_TRUE(Bytes(&bytes, 1024)("64Mi").ok());
  EXPECT_EQ(bytes, uint64_t{64} << 20);
  for (const char* bad : {"0", "12", "1Ti", "-1Mi", "lots", ""}) {
    EXPECT_FALSE(Bytes(&bytes, 1024)(bad).ok()) << bad;
  }
  double r = 0;
  for (const char* bad : {"1.5", "-0.1", "half", "nan"}) EXPECT_FALSE(Double(&r, 0, 1)(bad).ok());
  std::string c;
  EXPECT_EQ(Choice(&c, {"a", "b"})("x").message(), "must be one of a, b, not \"x\"");
  int64_t n = 0;
  EXPECT_EQ(Int(&n, 1, std::numeric_limits<int64_t>::max())("0").message(),
            "must be a positive integer, not \"0\"");
  EXPECT_EQ(Int(&n, 0, std::numeric_limits<int64_t>::max())("").message(),
            "must be a non-negative integer, not \"\"");
  EXPECT_EQ(Closest("--lisen", {"--listen", "--log-level"}), "--listen");
  EXPECT_EQ(Closest("--x", {"--listen"}), "");
}

}  // namespace
}  // namespace admitd::settings
