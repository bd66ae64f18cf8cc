#include "server/engine/quantity.h"

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

absl::StatusOr<int64_t> ParseQuantity(absl::string_view resource, absl::string_view text) {
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
  if (resource == "cpu") exp10 += 3;  // millicores
  int128 value = negative ? -mantissa : mantissa;
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

std::string FormatQuantity(absl::string_view resource, Amount value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  absl::uint128 magnitude =
      negative ? absl::uint128(-value) : absl::uint128(value);
  const char* sign = negative ? "-" : "";
  const char* suffix = "";
  if (IsBinaryResource(resource) && magnitude >= 1024) {
    static const char* const kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int exp = 0;
    while (magnitude % 1024 == 0 && exp < 6) {
      magnitude /= 1024;
      ++exp;
    }
    suffix = kBinary[exp];
  } else {
    // DecimalSI: the largest exponent (a multiple of 3) that keeps an integer mantissa.
    int exp = resource == "cpu" ? -3 : 0;
    while (magnitude % 1000 == 0 && exp < 18) {
      magnitude /= 1000;
      exp += 3;
    }
    switch (exp) {
      case -3: suffix = "m"; break;
      case 3: suffix = "k"; break;
      case 6: suffix = "M"; break;
      case 9: suffix = "G"; break;
      case 12: suffix = "T"; break;
      case 15: suffix = "P"; break;
      case 18: suffix = "E"; break;
      default: break;
    }
  }
  // Decimal digits of a 128-bit magnitude, least significant first.
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  } while (magnitude != 0);
  return absl::StrCat(sign, std::string(digits.rbegin(), digits.rend()), suffix);
}

}  // namespace admitd::engine
