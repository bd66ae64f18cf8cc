// Kubernetes resource quantities as int64 in canonical units: CPU in millicores, everything else
// in whole units (bytes for memory), fractional values rounded up as Kubernetes' Value() and
// MilliValue() do. Quota arithmetic saturates at kUnlimited instead of overflowing.
//
//   ParseQuantity("cpu", "1500m")     -> 1500
//   ParseQuantity("memory", "1Gi")    -> 1073741824
//   FormatQuantity("cpu", 1000)       -> "1"
//   FormatQuantity("memory", 1 << 30) -> "1Gi"
//
// Thread safety: pure functions.
#ifndef ADMITD_SERVER_ENGINE_QUANTITY_H_
#define ADMITD_SERVER_ENGINE_QUANTITY_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace admitd::engine {

inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

// INVALID_ARGUMENT (with Kubernetes' wording) when `text` is not a quantity or does not fit
// (its magnitude must stay below kUnlimited).
absl::StatusOr<int64_t> ParseQuantity(absl::string_view resource, absl::string_view text);

// The canonical string: CPU as a milli quantity, memory-like resources as BinarySI
// (1Gi, 10Mi, falling back to a plain number), everything else DecimalSI (1k, 2M).
std::string FormatQuantity(absl::string_view resource, int64_t value);

// True for resources Kubernetes renders in BinarySI.
bool IsBinaryResource(absl::string_view resource);

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? kUnlimited : -kUnlimited;
  return out;
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return (a > 0) == (b > 0) ? kUnlimited : -kUnlimited;
  return out;
}

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_QUANTITY_H_
