#include "common/trace/sampler.h"

#include <limits>

#include "gtest/gtest.h"

namespace admitd::tracing {
namespace {

// A trace id whose last 8 bytes are `bits`, big-endian; the first 8 bytes are arbitrary.
TraceId WithBits(uint64_t bits) {
  TraceId id{};
  id[0] = 0x5a;
  for (int i = 15; i >= 8; --i) {
    id[i] = static_cast<uint8_t>(bits & 0xff);
    bits >>= 8;
  }
  return id;
}

int SampledOf(const Sampler& sampler, int n) {
  int sampled = 0;
  for (int i = 0; i < n; ++i) sampled += sampler.SampleRoot(NewTraceId()) ? 1 : 0;
  return sampled;
}

TEST(SamplerTest, ReadsTheLastEightBytesBigEndian) {
  EXPECT_EQ(Sampler::TraceIdBits(WithBits(0x0123456789abcdefu)), 0x0123456789abcdefu);
  TraceId id{};
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Sampler::TraceIdBits(id), 0x08090a0b0c0d0e0fu);
}

TEST(SamplerTest, RatioZeroNeverAndOneAlways) {
  const Sampler never(0), always(1), negative(-0.5), above(7),
      nan(std::numeric_limits<double>::quiet_NaN());
  for (uint64_t bits :
       {uint64_t{0}, uint64_t{1}, uint64_t{1} << 63, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_FALSE(never.SampleRoot(WithBits(bits))) << bits;
    EXPECT_FALSE(negative.SampleRoot(WithBits(bits))) << bits;
    EXPECT_FALSE(nan.SampleRoot(WithBits(bits))) << bits;
    EXPECT_TRUE(always.SampleRoot(WithBits(bits))) << bits;
    EXPECT_TRUE(above.SampleRoot(WithBits(bits))) << bits;
  }
  EXPECT_EQ(SampledOf(never, 1000), 0);
  EXPECT_EQ(SampledOf(always, 1000), 1000);
}

TEST(SamplerTest, TheRatioIsAThresholdOnTheTraceId) {
  const Sampler half(0.5);
  EXPECT_TRUE(half.SampleRoot(WithBits(0)));
  EXPECT_TRUE(half.SampleRoot(WithBits((uint64_t{1} << 63) - 1)));
  EXPECT_FALSE(half.SampleRoot(WithBits(uint64_t{1} << 63)));
  EXPECT_FALSE(half.SampleRoot(WithBits(std::numeric_limits<uint64_t>::max())));
  const Sampler quarter(0.25);
  EXPECT_TRUE(quarter.SampleRoot(WithBits((uint64_t{1} << 62) - 1)));
  EXPECT_FALSE(quarter.SampleRoot(WithBits(uint64_t{1} << 62)));
}

TEST(SamplerTest, SamplesAboutTheRatioOfRandomTraces) {
  // 10,000 draws at p = 0.1: the standard deviation is 30, so ±200 is over six of them.
  const int sampled = SampledOf(Sampler(0.1), 10000);
  EXPECT_GT(sampled, 800);
  EXPECT_LT(sampled, 1200);
}

TEST(SamplerTest, TheDecisionDependsOnTheTraceIdAlone) {
  // Two samplers (two processes) agree on every trace.
  const Sampler a(0.3), b(0.3);
  for (int i = 0; i < 1000; ++i) {
    const TraceId id = NewTraceId();
    ASSERT_EQ(a.SampleRoot(id), b.SampleRoot(id));
    ASSERT_EQ(a.SampleRoot(id), a.SampleRoot(id));
  }
  // A trace keyed by an object is sampled or not the same way every time.
  const TraceId keyed = TraceIdFromKey("workload/uid-1");
  EXPECT_EQ(a.ShouldSample(keyed, nullptr), b.ShouldSample(keyed, nullptr));
}

TEST(SamplerTest, AValidParentsFlagIsFollowed) {
  const TraceId id = NewTraceId();
  SpanContext parent{id, NewSpanId(), true, "", true};
  // Whatever the ratio says about the trace id, the parent's flag decides.
  EXPECT_TRUE(Sampler(0).ShouldSample(id, &parent));
  parent.sampled = false;
  EXPECT_FALSE(Sampler(1).ShouldSample(id, &parent));
  // An invalid parent is no parent: the ratio decides.
  SpanContext invalid{};
  invalid.sampled = true;
  EXPECT_FALSE(Sampler(0).ShouldSample(id, &invalid));
  invalid.sampled = false;
  EXPECT_TRUE(Sampler(1).ShouldSample(id, &invalid));
  EXPECT_TRUE(Sampler(1).ShouldSample(id, nullptr));
  EXPECT_FALSE(Sampler(0).ShouldSample(id, nullptr));
}

}  // namespace
}  // namespace admitd::tracing
