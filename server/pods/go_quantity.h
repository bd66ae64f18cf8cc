// Kubernetes resource.Quantity's canonical string form, as Go's Quantity.String() and
// MarshalJSON produce it ("1000m" -> "1", "1024Mi" -> "1Gi", "1.5" -> "1500m", "2000" -> "2k").
#ifndef ADMITD_SERVER_PODS_GO_QUANTITY_H_
#define ADMITD_SERVER_PODS_GO_QUANTITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace admitd::pods {

// Parses `q` the way resource.ParseQuantity does (sign, digits, optional fraction, a suffix among
// n u m "" k M G T P E, Ki..Ei, or e<exp>/E<exp>; values finer than 1n rounded away from zero)
// and renders the canonical form. The format is kept: binary suffixes stay binary when the value
// is a whole number of at least 1024 in magnitude, decimal exponents stay exponents. Values whose
// nano-units overflow 128 bits are rejected (InvalidArgument), as are malformed strings.
absl::StatusOr<std::string> CanonicalQuantity(absl::string_view q);

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_GO_QUANTITY_H_
