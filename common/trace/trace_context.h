// Trace identity: trace and span ids, the context a span hands to its children and to other
// processes, and W3C Trace Context's `traceparent` encoding of it.
//
//   std::optional<SpanContext> parent = ParseTraceparent(
//       "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate_header);
//   std::string header = FormatTraceparent(span.context());
//   TraceId id = TraceIdFromKey("workload/" + uid);  // the same id in every process, forever
//
// Thread safety: pure functions, except the random ids, which are safe from any thread.
#ifndef ADMITD_COMMON_TRACE_TRACE_CONTEXT_H_
#define ADMITD_COMMON_TRACE_TRACE_CONTEXT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace admitd::tracing {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// Lowercase hex of an id.
std::string Hex(const TraceId& id);
std::string Hex(const SpanId& id);
// An id is valid unless all its bytes are zero.
bool IsValid(const TraceId& id);
bool IsValid(const SpanId& id);

struct SpanContext {
  TraceId trace_id{};
  SpanId span_id{};
  bool sampled = false;
  std::string trace_state;  // W3C tracestate, carried as it came (at most 512 characters)
  bool remote = false;      // came from another process

  bool IsValid() const { return tracing::IsValid(trace_id) && tracing::IsValid(span_id); }
};

// The longest tracestate carried; a longer one is dropped (W3C lets a vendor do so).
inline constexpr size_t kMaxTraceStateSize = 512;

// W3C `traceparent`: version 00 is exactly "00-<32 hex>-<16 hex>-<2 hex>" in lowercase; an
// all-zero id or version ff is invalid; a later version is read for its first four fields when
// what follows them starts with '-'. nullopt when invalid. The result is marked remote.
std::optional<SpanContext> ParseTraceparent(std::string_view header);
// The same, with the `tracestate` header that came beside it: carried as it is when at most
// kMaxTraceStateSize characters, dropped when longer (the parent itself is still used).
std::optional<SpanContext> ParseTraceparent(std::string_view traceparent,
                                            std::string_view tracestate);
// "00-<trace id>-<span id>-<01|00>".
std::string FormatTraceparent(const SpanContext& context);

// Random, never all-zero ids, from a per-thread generator seeded by the operating system (no
// lock, no system call after a thread's first id).
TraceId NewTraceId();
SpanId NewSpanId();

// Ids derived from `key` (the first bytes of its SHA-256): stable across processes and
// versions, so every span about one object joins one trace without stored state. Never all
// zero.
TraceId TraceIdFromKey(std::string_view key);
SpanId SpanIdFromKey(std::string_view key);

}  // namespace admitd::tracing

#endif  // ADMITD_COMMON_TRACE_TRACE_CONTEXT_H_
