// The parsers of common/settings.h: each reads one kind of value and says what a good one looks
// like when it cannot.
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/settings.h"

namespace admitd::settings {
namespace {

absl::Status Invalid(absl::string_view what, absl::string_view value) {
  return absl::InvalidArgumentError(absl::StrCat(what, ", not \"", value, "\""));
}

}  // namespace

Parser String(std::string* out) {
  return [out](const std::string& v) {
    *out = v;
    return absl::OkStatus();
  };
}

Parser NonEmpty(std::string* out) {
  return [out](const std::string& v) {
    if (v.empty()) return absl::InvalidArgumentError("must not be empty");
    *out = v;
    return absl::OkStatus();
  };
}

Parser Bool(bool* out) {
  return [out](const std::string& v) {
    if (!absl::SimpleAtob(v, out)) return Invalid("must be true or false", v);
    return absl::OkStatus();
  };
}

Parser NegatedBool(bool* out) {
  return [out](const std::string& v) {
    bool b;
    if (!absl::SimpleAtob(v, &b)) return Invalid("must be true or false", v);
    *out = !b;
    return absl::OkStatus();
  };
}

Parser Int(int64_t* out, int64_t min, int64_t max) {
  return [out, min, max](const std::string& v) {
    int64_t n;
    if (!absl::SimpleAtoi(v, &n) || n < min || n > max) {
      const int64_t kMax = std::numeric_limits<int64_t>::max();
      return Invalid(max == kMax && min == 1   ? "must be a positive integer"
                     : max == kMax && min == 0 ? "must be a non-negative integer"
                     : max == kMax ? absl::StrCat("must be an integer of at least ", min)
                                   : absl::StrCat("must be an integer from ", min, " to ", max),
                     v);
    }
    *out = n;
    return absl::OkStatus();
  };
}

Parser Int(int* out, int min, int max) {
  auto wide = std::make_shared<int64_t>();
  Parser parse = Int(wide.get(), min, max);
  return [out, wide, parse](const std::string& v) {
    if (absl::Status s = parse(v); !s.ok()) return s;
    *out = static_cast<int>(*wide);
    return absl::OkStatus();
  };
}

Parser Uint(uint64_t* out, uint64_t min) {
  auto wide = std::make_shared<int64_t>();
  Parser parse = Int(wide.get(), static_cast<int64_t>(min), std::numeric_limits<int64_t>::max());
  return [out, wide, parse](const std::string& v) {
    if (absl::Status s = parse(v); !s.ok()) return s;
    *out = static_cast<uint64_t>(*wide);
    return absl::OkStatus();
  };
}

Parser Double(double* out, double min, double max) {
  return [out, min, max](const std::string& v) {
    double d;
    if (!absl::SimpleAtod(v, &d) || std::isnan(d) || d < min || d > max) {
      return Invalid(absl::StrCat("must be a number from ", min, " to ", max), v);
    }
    *out = d;
    return absl::OkStatus();
  };
}

Parser Duration(absl::Duration* out, absl::Duration min) {
  return [out, min](const std::string& v) {
    absl::Duration d;
    if (!absl::ParseDuration(v, &d) || d < min || d < absl::ZeroDuration()) {
      return Invalid(min == absl::ZeroDuration()   ? "must be a duration such as 15s or 2ms"
                     : min == absl::Nanoseconds(1) ? "must be a positive duration such as 15s"
                                                   : absl::StrCat("must be a duration of at least ",
                                                                  absl::FormatDuration(min)),
                     v);
    }
    *out = d;
    return absl::OkStatus();
  };
}

Parser Bytes(uint64_t* out, uint64_t min) {
  return [out, min](const std::string& v) {
    absl::string_view text = v;
    uint64_t unit = 1;
    for (const auto& [suffix, scale] :
         {std::pair<absl::string_view, uint64_t>{"Ki", uint64_t{1} << 10},
          {"Mi", uint64_t{1} << 20},
          {"Gi", uint64_t{1} << 30}}) {
      if (absl::ConsumeSuffix(&text, suffix)) {
        unit = scale;
        break;
      }
    }
    uint64_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n == 0 || n > (uint64_t{1} << 50) / unit || n * unit < min) {
      std::string least = absl::StrCat(min);
      if (min >= (1u << 20) && min % (1u << 20) == 0) least = absl::StrCat(min >> 20, "Mi");
      return Invalid(
          absl::StrCat("must be a size of at least ", least, " bytes, such as 67108864 or 64Mi"),
          v);
    }
    *out = n * unit;
    return absl::OkStatus();
  };
}

Parser List(std::vector<std::string>* out) {
  return [out](const std::string& v) {
    *out = absl::StrSplit(v, ',', absl::SkipEmpty());
    return absl::OkStatus();
  };
}

Parser Choice(std::string* out, std::vector<std::string> choices) {
  return [out, choices = std::move(choices)](const std::string& v) {
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      return Invalid(absl::StrCat("must be one of ", absl::StrJoin(choices, ", ")), v);
    }
    *out = v;
    return absl::OkStatus();
  };
}

Parser Checked(std::string* out, std::function<bool(const std::string&)> valid, std::string want) {
  return [out, valid = std::move(valid), want = std::move(want)](const std::string& v) {
    if (!valid(v)) return Invalid(absl::StrCat("must be ", want), v);
    *out = v;
    return absl::OkStatus();
  };
}

}  // namespace admitd::settings
