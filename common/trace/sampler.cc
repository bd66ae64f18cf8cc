#include "common/trace/sampler.h"

#include <cmath>
#include <limits>

namespace admitd::tracing {
namespace {

uint64_t Bound(double ratio) {
  if (!(ratio > 0)) return 0;  // also NaN
  if (ratio >= 1) return std::numeric_limits<uint64_t>::max();
  // ratio < 1, so ratio * 2^64 < 2^64 fits (the largest double below 1 gives 2^64 - 2^11).
  return static_cast<uint64_t>(std::ldexp(ratio, 64));
}

}  // namespace

Sampler::Sampler(double ratio) : ratio_(ratio), bound_(Bound(ratio)), all_(ratio >= 1) {}

uint64_t Sampler::TraceIdBits(const TraceId& trace_id) {
  uint64_t bits = 0;
  for (size_t i = 8; i < trace_id.size(); ++i) bits = bits << 8 | trace_id[i];
  return bits;
}

}  // namespace admitd::tracing
