#include "common/trace/trace_context.h"

#include <set>

#include "gtest/gtest.h"

namespace admitd::tracing {
namespace {

constexpr char kExample[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContextTest, ParsesAndFormatsVersion00) {
  std::optional<SpanContext> c = ParseTraceparent(kExample);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(Hex(c->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(Hex(c->span_id), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_TRUE(c->remote);
  EXPECT_EQ(FormatTraceparent(*c), kExample);
  std::optional<SpanContext> unsampled =
      ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(unsampled.has_value());
  EXPECT_FALSE(unsampled->sampled);
}

TEST(TraceContextTest, RefusesWhatW3CCallsInvalid) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-00",  // 00 with more
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // separator
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version not hex
           "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",    // later version, no '-'
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
  // A later version is read for its known fields.
  EXPECT_TRUE(
      ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever")
          .has_value());
}

TEST(TraceContextTest, RandomIdsAreValidAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const TraceId t = NewTraceId();
    ASSERT_TRUE(IsValid(t));
    ASSERT_TRUE(IsValid(NewSpanId()));
    seen.insert(Hex(t));
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(TraceContextTest, IdsFromKeysAreStable) {
  // SHA-256("workload/uid-1") begins with these bytes; a change in the derivation would split
  // the traces of workloads recorded before and after it.
  EXPECT_EQ(Hex(TraceIdFromKey("workload/uid-1")), Hex(TraceIdFromKey("workload/uid-1")));
  EXPECT_EQ(Hex(TraceIdFromKey("abc")), "ba7816bf8f01cfea414140de5dae2223");
  EXPECT_EQ(Hex(SpanIdFromKey("abc")), "ba7816bf8f01cfea");
  EXPECT_NE(Hex(TraceIdFromKey("workload/uid-1")), Hex(TraceIdFromKey("workload/uid-2")));
}

}  // namespace
}  // namespace admitd::tracing
