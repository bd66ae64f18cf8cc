#include "server/pods/go_json.h"

#include <string>

#include "gtest/gtest.h"
#include "server/pods/go_quantity.h"

namespace admitd::pods {
namespace {

TEST(GoJsonTest, EscapesStringsLikeGo) {
  struct Case {
    std::string in, want;
  } cases[] = {
      {"plain", "\"plain\""},
      {"a<b>&c", "\"a\\u003cb\\u003e\\u0026c\""},
      {"q\"b\\s", "\"q\\\"b\\\\s\""},
      {"\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""},
      {std::string("\x01\x1f", 2), "\"\\u0001\\u001f\""},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
      {"\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\""},
      {"bad\xff", "\"bad\\ufffd\""},
      {"\xc3", "\"\\ufffd\""},
  };
  for (const auto& c : cases) EXPECT_EQ(GoJsonString(c.in), c.want) << c.in;
}

TEST(GoJsonTest, MapsSortKeysStructsKeepOrder) {
  GoJsonValue m = GoJsonValue::Map();
  m.Set("zeta", GoJsonValue::Int(-3));
  m.Set("alpha", GoJsonValue::Null());
  m.Set("Beta", GoJsonValue::Bool(true));
  GoJsonValue s = GoJsonValue::Struct();
  s.Set("zeta", GoJsonValue::String("z"));
  s.Set("alpha", GoJsonValue::Array());
  m.Set("mid", std::move(s));
  EXPECT_EQ(m.Serialize(), R"({"Beta":true,"alpha":null,"mid":{"zeta":"z","alpha":[]},"zeta":-3})");
}

TEST(GoQuantityTest, CanonicalForms) {
  struct Case {
    const char* in;
    const char* want;
  } cases[] = {
      {"1", "1"},          {"1000m", "1"},      {"1500m", "1500m"},  {"1.5", "1500m"},
      {"0.5", "500m"},     {"100m", "100m"},    {"2000", "2k"},      {"1500000", "1500k"},
      {"1Gi", "1Gi"},      {"1024Mi", "1Gi"},   {"1536Mi", "1536Mi"}, {"1.5Gi", "1536Mi"},
      {"512Ki", "512Ki"},  {"0.5Ki", "512"},    {"1000Ki", "1000Ki"}, {"1e3", "1e3"},
      {"1E6", "1e6"},      {"1000e3", "1e6"},   {"0", "0"},          {"0Gi", "0"},
      {"+2", "2"},         {"-1500m", "-1500m"}, {"1.0", "1"},        {"10k", "10k"},
      {"0.0000000001", "1n"}, {"1.0000000001", "1000000001n"}, {"12M", "12M"},
      {"100Mi", "100Mi"},  {"1.", "1"},         {".5", "500m"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::string> got = CanonicalQuantity(c.in);
    ASSERT_TRUE(got.ok()) << c.in << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.in;
  }
}

TEST(GoQuantityTest, RejectsMalformed) {
  for (const char* bad : {"", "abc", "1x", "1Ki2", ".", "-", "1e", "1e+"}) {
    EXPECT_FALSE(CanonicalQuantity(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace admitd::pods
