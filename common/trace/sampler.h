// Sampler: which traces admitd records. Parent-based with a ratio for roots: a span with a valid
// parent follows the parent's sampled flag; a root is sampled when its trace id's last 8 bytes,
// read big-endian, fall below ratio * 2^64. The decision is a function of the trace id alone, so
// every process that sees a trace (admitd, the shim, admitctl) decides the same way without
// telling each other, and a trace is recorded whole or not at all.
//
//   const Sampler sampler(0.1);
//   bool record = sampler.ShouldSample(trace_id, parent);  // parent may be null
//
// Thread safety: immutable after construction; every method may be called from any thread.
#ifndef ADMITD_COMMON_TRACE_SAMPLER_H_
#define ADMITD_COMMON_TRACE_SAMPLER_H_

#include <cstdint>

#include "common/trace/trace_context.h"

namespace admitd::tracing {

class Sampler {
 public:
  // `ratio` is the share of roots sampled: 0 or less (or NaN) never, 1 or more always.
  explicit Sampler(double ratio);

  double ratio() const { return ratio_; }

  // The decision for a root of `trace_id`.
  bool SampleRoot(const TraceId& trace_id) const { return all_ || TraceIdBits(trace_id) < bound_; }
  // The decision for a span of `trace_id` under `parent`: the parent's flag when `parent` is
  // valid, else the root decision.
  bool ShouldSample(const TraceId& trace_id, const SpanContext* parent) const {
    if (parent != nullptr && parent->IsValid()) return parent->sampled;
    return SampleRoot(trace_id);
  }

  // The trace id's last 8 bytes as a big-endian integer: what the ratio is compared with.
  static uint64_t TraceIdBits(const TraceId& trace_id);

 private:
  const double ratio_;
  const uint64_t bound_;  // roots whose TraceIdBits are below this are sampled
  const bool all_;        // ratio >= 1: 2^64 does not fit in bound_
};

}  // namespace admitd::tracing

#endif  // ADMITD_COMMON_TRACE_SAMPLER_H_
