#include "server/engine/quantity.h"

#include <string>

#include "gtest/gtest.h"

namespace admitd::engine {
namespace {

struct ParseCase {
  const char* resource;
  const char* text;
  int64_t want;
};

TEST(QuantityTest, ParsesToCanonicalUnits) {
  const ParseCase cases[] = {
      {"cpu", "1", 1000},           {"cpu", "500m", 500},       {"cpu", "1.5", 1500},
      {"cpu", "0.1", 100},          {"cpu", "2k", 2000000},     {"cpu", "100u", 1},  // rounds up
      {"cpu", "1e3", 1000000},      {"cpu", "+3", 3000},        {"memory", "1Gi", 1073741824},
      {"memory", "10Mi", 10485760}, {"memory", "1G", 1000000000}, {"memory", "1.5Ki", 1536},
      {"memory", "0.5", 1},         {"pods", "10", 10},         {"nvidia.com/gpu", "2", 2},
      {"memory", "-1Ki", -1024},    {"cpu", "0", 0},            {"memory", "1E", 1000000000000000000},
  };
  for (const ParseCase& c : cases) {
    absl::StatusOr<int64_t> got = ParseQuantity(c.resource, c.text);
    ASSERT_TRUE(got.ok()) << c.resource << " " << c.text << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.resource << " " << c.text;
  }
}

TEST(QuantityTest, RejectsWhatKubernetesRejects) {
  for (const char* text : {"", "abc", "1.2.3", "1Qi", "m", "1 Gi", "--1", "1ki"}) {
    absl::StatusOr<int64_t> got = ParseQuantity("memory", text);
    EXPECT_FALSE(got.ok()) << text;
  }
  absl::StatusOr<int64_t> bad = ParseQuantity("cpu", "lots");
  EXPECT_NE(bad.status().message().find("quantities must match the regular expression"),
            absl::string_view::npos);
  EXPECT_FALSE(ParseQuantity("cpu", "100E").ok());  // beyond int64 millicores
}

TEST(QuantityTest, RendersCanonically) {
  EXPECT_EQ(FormatQuantity("cpu", 1000), "1");
  EXPECT_EQ(FormatQuantity("cpu", 500), "500m");
  EXPECT_EQ(FormatQuantity("cpu", 1500), "1500m");
  EXPECT_EQ(FormatQuantity("cpu", 10000), "10");
  EXPECT_EQ(FormatQuantity("cpu", 1000000), "1k");
  EXPECT_EQ(FormatQuantity("memory", 1073741824), "1Gi");
  EXPECT_EQ(FormatQuantity("memory", 10485760), "10Mi");
  EXPECT_EQ(FormatQuantity("memory", 629145600), "600Mi");
  EXPECT_EQ(FormatQuantity("memory", 1000000000), "1000000000");  // not a power-of-1024 multiple
  EXPECT_EQ(FormatQuantity("memory", 512), "512");
  EXPECT_EQ(FormatQuantity("pods", 3), "3");
  EXPECT_EQ(FormatQuantity("example.com/gpu", 2000), "2k");
  EXPECT_EQ(FormatQuantity("cpu", 0), "0");
  EXPECT_EQ(FormatQuantity("cpu", -500), "-500m");
}

TEST(QuantityTest, RoundTrips) {
  for (const char* text : {"1", "250m", "3", "1k"}) {
    EXPECT_EQ(FormatQuantity("cpu", *ParseQuantity("cpu", text)), text);
  }
  for (const char* text : {"1Gi", "512Mi", "3Ki", "100"}) {
    EXPECT_EQ(FormatQuantity("memory", *ParseQuantity("memory", text)), text);
  }
}

TEST(QuantityTest, AmountsBeyondAQuantityFormatExactly) {
  const Amount ten_ei = Amount(10) << 60;
  EXPECT_EQ(FormatQuantity("memory", ten_ei), "10Ei");
  EXPECT_EQ(FormatQuantity("memory", Amount(kMaxQuantity) + 1), "8Ei");
  EXPECT_EQ(FormatQuantity("memory", Amount(kMaxQuantity) * 3), "27670116110564327421");
  EXPECT_EQ(FormatQuantity("cpu", Amount(kMaxQuantity) * 1000), "9223372036854775807");
  EXPECT_EQ(FormatQuantity("memory", -ten_ei), "-10Ei");
  EXPECT_EQ(FormatQuantity("cpu", Amount(1000000000000000000) * 1000000), "1000E");
  EXPECT_EQ(FormatQuantity("memory", -(Amount(kMaxQuantity) * 3)), "-27670116110564327421");
  EXPECT_FALSE(IsQuantity(Amount(kMaxQuantity) + 1));
  EXPECT_TRUE(IsQuantity(kMaxQuantity));
}

// Found by fuzz/quantity_fuzz: a fraction of 30 digits with exponent e-30 divided by 10^60,
// which overflowed int128; the value rounds up to the smallest unit as Kubernetes rounds it.
TEST(QuantityTest, TinyValuesRoundUpWithoutOverflow) {
  const std::string tiny = "0.00000000000000000000000000001e-30";  // 1e-59
  EXPECT_EQ(*ParseQuantity("memory", tiny), 1);
  EXPECT_EQ(*ParseQuantity("cpu", tiny), 1);
  EXPECT_EQ(*ParseQuantity("memory", "-" + tiny), 0);
  EXPECT_EQ(*ParseQuantity("memory", "0.00000000000000000000000000000e-30"), 0);
  EXPECT_EQ(*ParseQuantity("cpu", "1e-30"), 1);
}

// The largest quantity reads back from its own text (it once spelled "unlimited").
TEST(QuantityTest, TheLargestQuantityRoundTrips) {
  EXPECT_EQ(*ParseQuantity("pods", "9223372036854775807"), kMaxQuantity);
  EXPECT_EQ(*ParseQuantity("cpu", "9223372036854775807m"), kMaxQuantity);
  EXPECT_FALSE(ParseQuantity("pods", "9223372036854775808").ok());
  EXPECT_EQ(*ParseQuantity("pods", FormatQuantity("pods", kMaxQuantity)), kMaxQuantity);
  EXPECT_EQ(*ParseQuantity("pods", "-9223372036854775807"), -kMaxQuantity);
}

TEST(QuantityTest, KubernetesCornerCases) {
  // BinarySI below 1024 falls back to DecimalSI, as Kubernetes' CanonicalizeBytes does.
  EXPECT_EQ(FormatQuantity("memory", 1000), "1k");
  EXPECT_EQ(FormatQuantity("ephemeral-storage", 1536000), "1500Ki");
  EXPECT_EQ(FormatQuantity("hugepages-2Mi", 4194304), "4Mi");
  EXPECT_EQ(FormatQuantity("memory", kMaxQuantity), "9223372036854775807");
  EXPECT_EQ(FormatQuantity("example.com/gpu", 1500000), "1500k");
  EXPECT_EQ(*ParseQuantity("cpu", "1e-3"), 1);
  EXPECT_EQ(*ParseQuantity("cpu", "1.5E3"), 1500000);
  EXPECT_EQ(*ParseQuantity("memory", "1Ei"), int64_t{1} << 60);
  EXPECT_EQ(*ParseQuantity("memory", "100n"), 1);  // fractional bytes round up
  EXPECT_EQ(*ParseQuantity("cpu", "-1.5m"), -1);   // rounds toward +infinity
  EXPECT_EQ(*ParseQuantity("cpu", ".5"), 500);
}

TEST(QuantityTest, AsDoubleReadsAQuantityInItsOwnUnits) {
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("250m"), 0.25);
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("3"), 3);
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("1Ki"), 1024);
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("2e3"), 2000);
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("-1"), -1);
  EXPECT_DOUBLE_EQ(*ParseQuantityAsDouble("1n"), 1e-9);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseQuantityAsDouble("heavy").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseQuantityAsDouble("").status()));
}

}  // namespace
}  // namespace admitd::engine
