#include "integration/exact_quantity.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace admitd::testing {
namespace {

// Nano fits about 1.7e38; keeping values below 1e36 leaves room for sums and products by small
// counts without overflow checks at every step.
constexpr Nano kLimit = static_cast<Nano>(1000000000000000000) * 1000000000000000000;

Nano Abs(Nano v) { return v < 0 ? -v : v; }

Nano Gcd(Nano a, Nano b) {
  a = Abs(a);
  b = Abs(b);
  while (b != 0) {
    Nano t = a % b;
    a = b;
    b = t;
  }
  return a;
}

std::string Digits(Nano v) {
  if (v == 0) return "0";
  std::string out;
  const bool negative = v < 0;
  v = Abs(v);
  while (v > 0) {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return negative ? "-" + out : out;
}

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("quantity \"", text, "\": ", why));
}

}  // namespace

absl::StatusOr<Nano> ParseExact(absl::string_view text) {
  absl::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // Digits with at most one '.', as an integer `mantissa` and the count of fraction digits.
  Nano mantissa = 0;
  int fraction_digits = 0;
  bool any_digit = false, seen_dot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (!absl::ascii_isdigit(c)) break;
    any_digit = true;
    mantissa = mantissa * 10 + (c - '0');
    if (seen_dot) ++fraction_digits;
    if (mantissa > kLimit) return Bad(text, "too large");
  }
  if (!any_digit) return Bad(text, "no digits");
  const absl::string_view suffix = s.substr(i);
  // value = mantissa * 10^(exp10 - fraction_digits) * 2^exp2, in units; nano-units add 9.
  int exp10 = 9 - fraction_digits, exp2 = 0;
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
    const size_t at = binary.find(suffix[0]);
    if (at == std::string::npos) return Bad(text, "unknown suffix");
    exp2 = 10 * static_cast<int>(at + 1);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    int e = 0;
    if (!absl::SimpleAtoi(suffix.substr(1), &e) || e < -40 || e > 40) {
      return Bad(text, "bad exponent");
    }
    exp10 += e;
  } else {
    return Bad(text, "unknown suffix");
  }
  Nano value = mantissa;
  for (; exp10 > 0; --exp10) {
    value *= 10;
    if (value > kLimit) return Bad(text, "too large");
  }
  for (; exp10 < 0; ++exp10) {
    if (value % 10 != 0) return Bad(text, "finer than a nano-unit");
    value /= 10;
  }
  for (; exp2 > 0; --exp2) {
    value *= 2;
    if (value > kLimit) return Bad(text, "too large");
  }
  return negative ? -value : value;
}

std::string FormatNano(Nano value) {
  const bool negative = value < 0;
  value = Abs(value);
  std::string out = Digits(value / 1000000000);
  Nano fraction = value % 1000000000;
  if (fraction != 0) {
    std::string f = Digits(fraction);
    f.insert(0, 9 - f.size(), '0');
    while (!f.empty() && f.back() == '0') f.pop_back();
    absl::StrAppend(&out, ".", f);
  }
  return negative ? "-" + out : out;
}

void ExactSum::Add(Nano quantity, int64_t numerator, int64_t denominator) {
  Nano n = quantity * numerator, d = denominator;
  if (d < 0) {
    n = -n;
    d = -d;
  }
  num_ = num_ * d + n * den_;
  den_ *= d;
  const Nano g = Gcd(num_, den_);
  if (g > 1) {
    num_ /= g;
    den_ /= g;
  }
}

std::string ExactSum::ToString() const {
  if (den_ == 1) return FormatNano(num_);
  return absl::StrCat(FormatNano(num_), "/", Digits(den_));
}

}  // namespace admitd::testing
