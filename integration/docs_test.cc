// The docs kept together with the code: docs/configuration.md's flag tables are the ones the
// settings tables of admitd, admitd-shim and admitctl generate, so a flag or key added, renamed
// or removed without its docs fails here. ADMITD_UPDATE_DOCS=1 rewrites the tables in place.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/admitctl_flags.h"
#include "clients/shim/shim_config.h"
#include "gtest/gtest.h"
#include "server/config.h"

namespace admitd {
namespace {

constexpr char kPath[] = ADMITD_SOURCE_DIR "/docs/configuration.md";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text between "<!-- BEGIN name -->\n" and "<!-- END name -->" in `doc`, replaced by
// `table` when `update`. Fails the test when the markers are missing.
void CheckSection(std::string* doc, const std::string& name, const std::string& table,
                  bool update) {
  const std::string begin = absl::StrCat("<!-- BEGIN ", name,
                                         " (generated: ADMITD_UPDATE_DOCS=1 "
                                         "build/integration/docs_test) -->\n");
  const std::string end = absl::StrCat("<!-- END ", name, " -->");
  const size_t b = doc->find(begin);
  const size_t e = doc->find(end);
  ASSERT_NE(b, std::string::npos) << kPath << " lacks the line " << begin;
  ASSERT_NE(e, std::string::npos) << kPath << " lacks the line " << end;
  ASSERT_LT(b, e);
  const size_t start = b + begin.size();
  if (update) {
    doc->replace(start, e - start, table);
    return;
  }
  EXPECT_EQ(doc->substr(start, e - start), table)
      << "docs/configuration.md's " << name << " table differs from the flags the code declares; "
      << "run ADMITD_UPDATE_DOCS=1 build/integration/docs_test and read the change";
}

TEST(DocsTest, ConfigurationTablesAreTheDeclaredSettings) {
  const char* update_env = std::getenv("ADMITD_UPDATE_DOCS");
  const bool update = update_env != nullptr && std::string(update_env) == "1";
  std::string doc = Read(kPath);
  ASSERT_FALSE(doc.empty()) << kPath;
  Config config;
  shim::ShimConfig shim_config;
  clients::Args args;
  CheckSection(&doc, "admitd", ConfigTable(&config).MarkdownTable(), update);
  CheckSection(&doc, "admitd-shim", shim::ShimConfigTable(&shim_config).MarkdownTable(), update);
  CheckSection(&doc, "admitctl", clients::AdmitctlFlags(&args).MarkdownTable(), update);
  if (update) std::ofstream(kPath) << doc;
}

}  // namespace
}  // namespace admitd
