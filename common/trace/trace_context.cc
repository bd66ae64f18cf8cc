#include "common/trace/trace_context.h"

#include <openssl/sha.h>

#include <cstring>

#include "absl/random/random.h"

namespace admitd::tracing {
namespace {

constexpr char kHex[] = "0123456789abcdef";

template <size_t N>
std::string ToHex(const std::array<uint8_t, N>& id) {
  std::string out(2 * N, '0');
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[id[i] >> 4];
    out[2 * i + 1] = kHex[id[i] & 0xf];
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is invalid in traceparent
}

template <size_t N>
bool FromHex(std::string_view text, std::array<uint8_t, N>* id) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int hi = HexDigit(text[2 * i]), lo = HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*id)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& id) {
  for (uint8_t b : id) {
    if (b != 0) return false;
  }
  return true;
}

// Fully seeded from the OS (a generator seeded with one 32-bit value would give only 2^32
// distinct id sequences across all processes, and trace ids would collide).
absl::BitGen& Generator() {
  thread_local absl::BitGen generator;
  return generator;
}

template <size_t N>
std::array<uint8_t, N> RandomId() {
  static_assert(N % 8 == 0, "ids are whole 64-bit words");
  std::array<uint8_t, N> id{};
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t r = absl::Uniform<uint64_t>(Generator());
      std::memcpy(id.data() + i, &r, 8);
    }
  } while (AllZero(id));
  return id;
}

template <size_t N>
std::array<uint8_t, N> IdFromKey(std::string_view key) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  std::array<uint8_t, N> id{};
  std::memcpy(id.data(), digest, N);
  if (AllZero(id)) id[N - 1] = 1;
  return id;
}

}  // namespace

std::string Hex(const TraceId& id) { return ToHex(id); }
std::string Hex(const SpanId& id) { return ToHex(id); }
bool IsValid(const TraceId& id) { return !AllZero(id); }
bool IsValid(const SpanId& id) { return !AllZero(id); }

std::optional<SpanContext> ParseTraceparent(std::string_view header) {
  // version(2) '-' trace-id(32) '-' parent-id(16) '-' flags(2)
  if (header.size() < 55) return std::nullopt;
  std::array<uint8_t, 1> version{}, flags{};
  if (!FromHex(header.substr(0, 2), &version) || version[0] == 0xff) return std::nullopt;
  if (header[2] != '-' || header[35] != '-' || header[52] != '-') return std::nullopt;
  if (version[0] == 0 ? header.size() != 55 : (header.size() > 55 && header[55] != '-')) {
    return std::nullopt;
  }
  SpanContext out;
  if (!FromHex(header.substr(3, 32), &out.trace_id) ||
      !FromHex(header.substr(36, 16), &out.span_id) || !FromHex(header.substr(53, 2), &flags)) {
    return std::nullopt;
  }
  if (!out.IsValid()) return std::nullopt;
  out.sampled = (flags[0] & 1) != 0;
  out.remote = true;
  return out;
}

std::optional<SpanContext> ParseTraceparent(std::string_view traceparent,
                                            std::string_view tracestate) {
  std::optional<SpanContext> context = ParseTraceparent(traceparent);
  if (context.has_value() && tracestate.size() <= kMaxTraceStateSize) {
    context->trace_state.assign(tracestate.data(), tracestate.size());
  }
  return context;
}

std::string FormatTraceparent(const SpanContext& context) {
  return "00-" + Hex(context.trace_id) + "-" + Hex(context.span_id) +
         (context.sampled ? "-01" : "-00");
}

TraceId NewTraceId() { return RandomId<16>(); }
SpanId NewSpanId() { return RandomId<8>(); }
TraceId TraceIdFromKey(std::string_view key) { return IdFromKey<16>(key); }
SpanId SpanIdFromKey(std::string_view key) { return IdFromKey<8>(key); }

}  // namespace admitd::tracing
