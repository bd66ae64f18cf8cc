#include "integration/exact_quantity.h"

#include "gtest/gtest.h"

namespace admitd::testing {
namespace {

constexpr Nano kGiga = 1000000000;

TEST(ExactQuantityTest, ParsesEveryKubernetesForm) {
  EXPECT_EQ(*ParseExact("1"), kGiga);
  EXPECT_EQ(*ParseExact("250m"), 250000000);
  EXPECT_EQ(*ParseExact("1.5"), 1500000000);
  EXPECT_EQ(*ParseExact(".5"), 500000000);
  EXPECT_EQ(*ParseExact("3n"), 3);
  EXPECT_EQ(*ParseExact("2u"), 2000);
  EXPECT_EQ(*ParseExact("1k"), 1000 * kGiga);
  EXPECT_EQ(*ParseExact("1Ki"), 1024 * kGiga);
  EXPECT_EQ(*ParseExact("1.5Gi"), static_cast<Nano>(1610612736) * kGiga);
  EXPECT_EQ(*ParseExact("12e3"), 12000 * kGiga);
  EXPECT_EQ(*ParseExact("5E-3"), 5000000);
  EXPECT_EQ(*ParseExact("-2"), -2 * kGiga);
  EXPECT_EQ(*ParseExact("1Ei"), static_cast<Nano>(1152921504606846976) * kGiga);
}

TEST(ExactQuantityTest, RefusesWhatIsNotExact) {
  EXPECT_FALSE(ParseExact("").ok());
  EXPECT_FALSE(ParseExact("m").ok());
  EXPECT_FALSE(ParseExact("1x").ok());
  EXPECT_FALSE(ParseExact("1Xi").ok());
  EXPECT_FALSE(ParseExact("0.5n").ok());  // below a nano-unit
  EXPECT_FALSE(ParseExact("1e-10").ok());
  EXPECT_FALSE(ParseExact("1e99").ok());
}

TEST(ExactQuantityTest, SumsFractionsExactly) {
  ExactSum sum;
  sum.Add(kGiga, 2, 3);  // two of three pods of a 1-CPU pod set
  EXPECT_FALSE(sum.Equals(666666667));
  EXPECT_EQ(sum.ToString(), "2/3");
  sum.Add(kGiga, 1, 3);
  EXPECT_TRUE(sum.Equals(kGiga));
  EXPECT_EQ(FormatNano(*ParseExact("1536Mi")), "1610612736");
  EXPECT_EQ(FormatNano(*ParseExact("4500m")), "4.5");
}

}  // namespace
}  // namespace admitd::testing
