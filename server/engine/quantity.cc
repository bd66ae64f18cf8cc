#include "server/engine/quantity.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace admitd::engine {
namespace {

constexpr char kQuantityError[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

absl::Status Invalid() { return absl::InvalidArgumentError(kQuantityError); }

using int128 = __int128;
constexpr int128 kInt64Max = std::numeric_limits<int64_t>::max();
// The largest power of ten an int128 holds (10^38 < 2^127).
constexpr int kMaxInt128Exp10 = 38;

// Multiplies `v` by base^exp, failing on overflow beyond int64 range.
bool Scale(int128* v, int base, int exp) {
  for (int i = 0; i < exp; ++i) {
    *v *= base;
    if (*v > kInt64Max * 1000 || *v < -kInt64Max * 1000) return false;
  }
  return true;
}

// Divides rounding away from zero toward +infinity, as Kubernetes rounds quantities up.
int128 DivCeil(int128 v, int128 d) {
  int128 q = v / d;
  if (v % d != 0 && v > 0) ++q;
  return q;
}

}  // namespace

bool IsBinaryResource(absl::string_view resource) {
  return resource == "memory" || resource == "ephemeral-storage" || resource == "storage" ||
         absl::StartsWith(resource, "hugepages-");
}

namespace {

// A quantity's text split into value = mantissa * 10^exp10 * 2^exp2.
struct Decimal {
  int128 mantissa = 0;  // signed
  int exp10 = 0;
  int exp2 = 0;
};

absl::StatusOr<Decimal> ParseDecimal(absl::string_view text) {
  absl::string_view s = text;
  if (s.empty()) return Invalid();
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // Mantissa: digits with at most one '.'.
  int128 mantissa = 0;
  int fraction_digits = 0, digits = 0;
  bool dot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (dot) return Invalid();
      dot = true;
      continue;
    }
    if (!absl::ascii_isdigit(c)) break;
    if (digits >= 30) return absl::InvalidArgumentError("quantity has too many digits");
    mantissa = mantissa * 10 + (c - '0');
    ++digits;
    if (dot) ++fraction_digits;
  }
  if (digits == 0) return Invalid();
  absl::string_view suffix = s.substr(i);
  int exp10 = -fraction_digits, exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix == "n") {
    exp10 -= 9;
  } else if (suffix == "u") {
    exp10 -= 6;
  } else if (suffix == "m") {
    exp10 -= 3;
  } else if (suffix == "k") {
    exp10 += 3;
  } else if (suffix == "M") {
    exp10 += 6;
  } else if (suffix == "G") {
    exp10 += 9;
  } else if (suffix == "T") {
    exp10 += 12;
  } else if (suffix == "P") {
    exp10 += 15;
  } else if (suffix == "E") {
    exp10 += 18;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    const std::string binary = "KMGTPE";
    size_t at = binary.find(suffix[0]);
    if (at == std::string::npos) return Invalid();
    exp2 = 10 * static_cast<int>(at + 1);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    int e;
    if (!absl::SimpleAtoi(suffix.substr(1), &e) || e > 30 || e < -30) return Invalid();
    exp10 += e;
  } else {
    return Invalid();
  }
  return Decimal{negative ? -mantissa : mantissa, exp10, exp2};
}

}  // namespace

absl::StatusOr<double> ParseQuantityAsDouble(absl::string_view text) {
  absl::StatusOr<Decimal> d = ParseDecimal(text);
  if (!d.ok()) return d.status();
  return static_cast<double>(d->mantissa) * std::pow(10.0, d->exp10) * std::ldexp(1.0, d->exp2);
}

absl::StatusOr<int64_t> ParseQuantity(absl::string_view resource, absl::string_view text) {
  absl::StatusOr<Decimal> d = ParseDecimal(text);
  if (!d.ok()) return d.status();
  int exp10 = d->exp10;
  const int exp2 = d->exp2;
  if (resource == "cpu") exp10 += 3;  // millicores
  int128 value = d->mantissa;
  auto too_large = [text] {
    return absl::InvalidArgumentError(absl::StrCat("quantity ", text, " is too large"));
  };
  if (!Scale(&value, 2, exp2)) return too_large();
  if (exp10 >= 0) {
    if (!Scale(&value, 10, exp10)) return too_large();
  } else if (-exp10 > kMaxInt128Exp10) {
    // |value| < 10^30 is smaller than any such divisor: what is left is the rounding up.
    value = value > 0 ? 1 : 0;
  } else {
    int128 divisor = 1;
    for (int k = 0; k < -exp10; ++k) divisor *= 10;
    value = DivCeil(value, divisor);
  }
  if (value > kInt64Max || value < -kInt64Max) return too_large();
  return static_cast<int64_t>(value);
}

std::string FormatQuantity(absl::string_view resource, int64_t value) {
  return FormatQuantity(resource, Amount(value));
}

namespace {

// Divides `magnitude` by `base` while it stays an integer, at most `limit` times; returns how
// often it did.
template <typename U>
int StripFactor(U* magnitude, unsigned base, int limit) {
  int n = 0;
  while (n < limit && *magnitude % base == 0) {
    *magnitude /= base;
    ++n;
  }
  return n;
}

// The same in 64-bit arithmetic when the magnitude fits (every realistic quantity): 128-bit
// division is a library call.
int StripFactorFast(absl::uint128* magnitude, unsigned base, int limit) {
  if (absl::Uint128High64(*magnitude) != 0) return StripFactor(magnitude, base, limit);
  uint64_t low = absl::Uint128Low64(*magnitude);
  const int n = StripFactor(&low, base, limit);
  *magnitude = low;
  return n;
}

}  // namespace

std::string FormatQuantity(absl::string_view resource, Amount value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  absl::uint128 magnitude = negative ? absl::uint128(-value) : absl::uint128(value);
  absl::string_view suffix;
  if (IsBinaryResource(resource) && magnitude >= 1024) {
    static constexpr absl::string_view kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    suffix = kBinary[StripFactorFast(&magnitude, 1024, 6)];
  } else {
    // DecimalSI: the largest exponent (a multiple of 3) that keeps an integer mantissa.
    static constexpr absl::string_view kDecimal[] = {"m", "", "k", "M", "G", "T", "P", "E"};
    const int first = resource == "cpu" ? 0 : 1;  // cpu is counted in millis
    suffix = kDecimal[first + StripFactorFast(&magnitude, 1000, 7 - first)];
  }
  // The decimal digits, written backwards from the end of a buffer wide enough for 2^128.
  char buf[48];
  char* end = buf + sizeof(buf);
  char* p = end;
  if (absl::Uint128High64(magnitude) == 0) {
    uint64_t low = absl::Uint128Low64(magnitude);
    do {
      *--p = static_cast<char>('0' + low % 10);
      low /= 10;
    } while (low != 0);
  } else {
    do {
      *--p = static_cast<char>('0' + static_cast<int>(magnitude % 10));
      magnitude /= 10;
    } while (magnitude != 0);
  }
  if (negative) *--p = '-';
  std::string out;
  out.reserve(static_cast<size_t>(end - p) + suffix.size());
  out.append(p, end);
  out.append(suffix.data(), suffix.size());
  return out;
}

}  // namespace admitd::engine
