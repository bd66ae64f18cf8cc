// Kubernetes quantity strings read exactly, for tests that compare the server's quota figures
// with sums they compute themselves. The server's own parser (server/engine/quantity.h) rounds to
// canonical units; a checker must not share its arithmetic, so this one keeps every quantity as
// an exact count of nano-units and sums fractions (a pod's share of a pod set's usage) as
// rationals.
//
//   ParseExact("1.5Gi")  -> 1610612736000000000 (nano-units)
//   ParseExact("250m")   -> 250000000
//   ExactSum s; s.Add(*ParseExact("1"), 2, 3);  // two thirds of 1
//   FormatExact(s)       -> "2/3"
//
// Thread safety: pure functions; an ExactSum needs external synchronization.
#ifndef ADMITD_INTEGRATION_EXACT_QUANTITY_H_
#define ADMITD_INTEGRATION_EXACT_QUANTITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace admitd::testing {

// A quantity in nano-units (1e-9 of the unit: a CPU, a byte).
using Nano = __int128;

// INVALID_ARGUMENT when `text` is not a Kubernetes quantity (sign, digits, optional fraction,
// then a binary suffix Ki..Ei, a decimal suffix n u m k M G T P E, or an exponent e±N), or when
// its value is not a whole number of nano-units or does not fit.
absl::StatusOr<Nano> ParseExact(absl::string_view text);

// Decimal text of a nano-unit count in units: 1500000000 -> "1.5".
std::string FormatNano(Nano value);

// An exact sum of fractions of quantities: Add(q, k, n) adds q * k / n.
class ExactSum {
 public:
  void Add(Nano quantity, int64_t numerator = 1, int64_t denominator = 1);
  bool operator==(const ExactSum& other) const { return num_ == other.num_ && den_ == other.den_; }
  bool operator!=(const ExactSum& other) const { return !(*this == other); }
  bool Equals(Nano value) const { return den_ == 1 && num_ == value; }
  std::string ToString() const;

 private:
  Nano num_ = 0;
  Nano den_ = 1;
};

}  // namespace admitd::testing

#endif  // ADMITD_INTEGRATION_EXACT_QUANTITY_H_
