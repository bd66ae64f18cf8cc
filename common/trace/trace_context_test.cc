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
  EXPECT_EQ(FormatTraceparent(*unsampled),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  // Only bit 0 of the flags means sampled; the other bits are ignored.
  EXPECT_TRUE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09")->sampled);
  EXPECT_FALSE(
      ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe")->sampled);
}

TEST(TraceContextTest, RandomContextsRoundTrip) {
  for (int i = 0; i < 100; ++i) {
    SpanContext c{NewTraceId(), NewSpanId(), i % 2 == 0, "", false};
    const std::string header = FormatTraceparent(c);
    ASSERT_EQ(header.size(), 55u);
    std::optional<SpanContext> back = ParseTraceparent(header);
    ASSERT_TRUE(back.has_value()) << header;
    EXPECT_EQ(back->trace_id, c.trace_id);
    EXPECT_EQ(back->span_id, c.span_id);
    EXPECT_EQ(back->sampled, c.sampled);
    EXPECT_EQ(FormatTraceparent(*back), header);
  }
}

TEST(TraceContextTest, TracestateIsCarriedUpTo512Characters) {
  const std::string state = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
  std::optional<SpanContext> c = ParseTraceparent(kExample, state);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_state, state);
  const std::string longest(kMaxTraceStateSize, 'a');
  EXPECT_EQ(ParseTraceparent(kExample, longest)->trace_state, longest);
  // Too long: dropped, and the parent is still used.
  c = ParseTraceparent(kExample, longest + "a");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_state, "");
  EXPECT_TRUE(c->IsValid());
  // Without a valid traceparent, tracestate means nothing.
  EXPECT_FALSE(ParseTraceparent("00-bad", state).has_value());
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
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",      // 54 characters
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",    // 56 characters
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",     // uppercase span id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",     // flags not hex
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",     // misplaced '-'
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",    // trailing space
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-00",  // version ff, longer
           "cc-00000000000000000000000000000000-00f067aa0ba902b7-01-00",  // later, zero trace id
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
  // A later version is read for its known fields, with or without more after them.
  EXPECT_TRUE(
      ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever")
          .has_value());
  std::optional<SpanContext> later =
      ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(FormatTraceparent(*later), kExample);  // written back as version 00
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
  EXPECT_EQ(Hex(TraceIdFromKey("workload/uid-1")), "270a1c7f85462399ae88e19a5ca07b69");
  EXPECT_EQ(Hex(SpanIdFromKey("workload/uid-1")), "270a1c7f85462399");
  EXPECT_EQ(Hex(TraceIdFromKey("abc")), "ba7816bf8f01cfea414140de5dae2223");
  EXPECT_EQ(Hex(SpanIdFromKey("abc")), "ba7816bf8f01cfea");
  EXPECT_NE(Hex(TraceIdFromKey("workload/uid-1")), Hex(TraceIdFromKey("workload/uid-2")));
}

}  // namespace
}  // namespace admitd::tracing
