// Kubernetes resource quantities as int64 in canonical units: CPU in millicores, everything else
// in whole units (bytes for memory), fractional values rounded up as Kubernetes' Value() and
// MilliValue() do. One quantity is an int64; sums of quantities over workloads and queues (usage,
// cohort quota) are Amounts, 128 bits wide, so no sequence of admissions, imports and releases
// can saturate or wrap them. A workload whose own total does not fit an int64 is refused by
// validation.
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

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace admitd::engine {

// The largest quantity: 2^63-1 canonical units (millicores for CPU).
inline constexpr int64_t kMaxQuantity = std::numeric_limits<int64_t>::max();

// A sum of quantities, exact: 2^64 quantities of kMaxQuantity still fit.
using Amount = absl::int128;

// INVALID_ARGUMENT (with Kubernetes' wording) when `text` is not a quantity or its magnitude
// passes kMaxQuantity.
absl::StatusOr<int64_t> ParseQuantity(absl::string_view resource, absl::string_view text);

// The quantity as a floating-point number in its own units ("250m" -> 0.25, "1Ki" -> 1024), as
// Kubernetes' AsFloat64Slow gives it: for values that are not amounts of a resource (fair
// sharing weights). INVALID_ARGUMENT as ParseQuantity.
absl::StatusOr<double> ParseQuantityAsDouble(absl::string_view text);

// The canonical string: CPU as a milli quantity, memory-like resources as BinarySI
// (1Gi, 10Mi, falling back to a plain number), everything else DecimalSI (1k, 2M).
std::string FormatQuantity(absl::string_view resource, int64_t value);
std::string FormatQuantity(absl::string_view resource, Amount value);

// True for resources Kubernetes renders in BinarySI.
bool IsBinaryResource(absl::string_view resource);

// Whether `v` is a quantity (fits an int64).
inline bool IsQuantity(Amount v) { return v <= kMaxQuantity && v >= -kMaxQuantity; }

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_QUANTITY_H_
