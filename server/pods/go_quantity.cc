#include "server/pods/go_quantity.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace admitd::pods {
namespace {

using i128 = __int128;

enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

constexpr i128 kMax = (static_cast<i128>(1) << 120);

bool MulChecked(i128 a, i128 b, i128* out) {
  if (a != 0 && (b > kMax / a || b < -kMax / a)) return false;
  *out = a * b;
  return true;
}

std::string I128ToString(i128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  if (neg) v = -v;
  std::string digits;
  while (v > 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  if (neg) digits.push_back('-');
  return std::string(digits.rbegin(), digits.rend());
}

absl::Status FormatError(absl::string_view q) {
  return absl::InvalidArgumentError(
      absl::StrCat("quantity \"", q, "\": quantities must match the regular expression "
                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
}

}  // namespace

absl::StatusOr<std::string> CanonicalQuantity(absl::string_view str) {
  if (str.empty()) return FormatError(str);
  // Split into sign, integer digits, fraction digits and suffix (Go's parseQuantityString).
  size_t pos = 0;
  bool positive = true;
  if (str[0] == '-' || str[0] == '+') {
    positive = str[0] == '+';
    ++pos;
  }
  size_t i = pos;
  while (i < str.size() && absl::ascii_isdigit(static_cast<unsigned char>(str[i]))) ++i;
  absl::string_view num = str.substr(pos, i - pos);
  absl::string_view denom;
  pos = i;
  if (pos < str.size() && str[pos] == '.') {
    ++pos;
    i = pos;
    while (i < str.size() && absl::ascii_isdigit(static_cast<unsigned char>(str[i]))) ++i;
    denom = str.substr(pos, i - pos);
    pos = i;
  }
  absl::string_view suffix = str.substr(pos);
  if (num.empty() && denom.empty()) return FormatError(str);

  // Interpret the suffix.
  Format format = Format::kDecimalSI;
  int exponent = 0;  // power of 10, or of 2 for binary
  static const struct {
    const char* s;
    int exp;
  } kDec[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},  {"M", 6},
              {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}},
    kBin[] = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  bool found = false;
  for (const auto& d : kDec) {
    if (suffix == d.s) format = Format::kDecimalSI, exponent = d.exp, found = true;
  }
  for (const auto& b : kBin) {
    if (suffix == b.s) format = Format::kBinarySI, exponent = b.exp, found = true;
  }
  if (!found && suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    int e = 0;
    absl::string_view digits = suffix.substr(1);
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      if (digits.size() == 1) return FormatError(str);
    }
    if (!absl::SimpleAtoi(digits, &e)) return FormatError(str);
    format = Format::kDecimalExponent;
    exponent = e;
    found = true;
  }
  if (!found) {
    return absl::InvalidArgumentError(absl::StrCat("quantity \"", str, "\": unable to parse quantity's suffix"));
  }

  // value = 0.(num denom) in nano units: mantissa * 10^(scale10) * 2^(binexp), rounded up (away
  // from zero) to 1n.
  std::string all_digits = absl::StrCat(num, denom);
  size_t first = all_digits.find_first_not_of('0');
  if (first == std::string::npos) return std::string("0");
  all_digits = all_digits.substr(first);
  i128 mantissa = 0;
  for (char c : all_digits) {
    if (!MulChecked(mantissa, 10, &mantissa)) {
      return absl::InvalidArgumentError(absl::StrCat("quantity \"", str, "\" is too large"));
    }
    mantissa += c - '0';
  }
  int scale10 = 9 - static_cast<int>(denom.size());  // to nano units
  if (format == Format::kBinarySI) {
    if (!MulChecked(mantissa, static_cast<i128>(1) << exponent, &mantissa)) {
      return absl::InvalidArgumentError(absl::StrCat("quantity \"", str, "\" is too large"));
    }
  } else {
    scale10 += exponent;
  }
  i128 nano = mantissa;
  if (scale10 >= 0) {
    for (int k = 0; k < scale10; ++k) {
      if (!MulChecked(nano, 10, &nano)) {
        return absl::InvalidArgumentError(absl::StrCat("quantity \"", str, "\" is too large"));
      }
    }
  } else {
    bool remainder = false;
    for (int k = 0; k < -scale10 && nano != 0; ++k) {
      if (nano % 10 != 0) remainder = true;
      nano /= 10;
    }
    if (remainder) nano += 1;  // round up to the next nano unit
  }
  if (nano == 0) return std::string("0");
  if (!positive) nano = -nano;

  static constexpr i128 kGiga = 1000000000;
  if (format == Format::kBinarySI) {
    if (nano > -1024 * kGiga && nano < 1024 * kGiga) {
      format = Format::kDecimalSI;
    } else if (nano % kGiga != 0) {
      format = Format::kDecimalSI;  // not a whole number: do not lose precision
    } else {
      i128 value = nano / kGiga;
      int exp2 = 0;
      while (value % 1024 == 0 && exp2 < 6) {
        value /= 1024;
        ++exp2;
      }
      static const char* kBinSuffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
      return absl::StrCat(I128ToString(value), kBinSuffix[exp2]);
    }
  }
  // Decimal: strip factors of ten, then bring the exponent down to a multiple of three.
  int exp = -9;
  while (nano % 10 == 0) {
    nano /= 10;
    ++exp;
  }
  switch (exp % 3) {
    case 1:
    case -2:
      nano *= 10;
      exp -= 1;
      break;
    case 2:
    case -1:
      nano *= 100;
      exp -= 2;
      break;
    default:
      break;
  }
  std::string out = I128ToString(nano);
  if (format == Format::kDecimalExponent) {
    if (exp != 0) absl::StrAppend(&out, "e", exp);
    return out;
  }
  switch (exp) {
    case -9: return out + "n";
    case -6: return out + "u";
    case -3: return out + "m";
    case 0: return out;
    case 3: return out + "k";
    case 6: return out + "M";
    case 9: return out + "G";
    case 12: return out + "T";
    case 15: return out + "P";
    case 18: return out + "E";
    default: return out;  // Go writes no suffix when DecimalSI has none for the exponent
  }
}

}  // namespace admitd::pods
