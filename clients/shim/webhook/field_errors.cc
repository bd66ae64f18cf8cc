#include "clients/shim/webhook/field_errors.h"

#include <limits>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace admitd::shim {
namespace {

// Decodes the UTF-8 sequence at s[i] as Go does (no overlongs, surrogates or values past
// U+10FFFF); returns its length, or 0 when the byte at i does not start a valid sequence.
int DecodeRune(const std::string& s, size_t i, uint32_t* rune) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *rune = b0;
    return 1;
  }
  int n = b0 >= 0xF0 && b0 <= 0xF4   ? 4
          : b0 >= 0xE0 && b0 <= 0xEF ? 3
          : b0 >= 0xC2 && b0 <= 0xDF ? 2
                                     : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t r = b0 & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    r = (r << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && (r < 0x800 || (r >= 0xD800 && r <= 0xDFFF))) ||
      (n == 4 && (r < 0x10000 || r > 0x10FFFF))) {
    return 0;
  }
  *rune = r;
  return n;
}

// Go's unicode.IsPrint for the code points a label or annotation value plausibly holds: the
// C1 controls, spaces other than ' ', format characters, separators and private use are not.
bool GoIsPrint(uint32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7F;
  if (r <= 0xA0 || r == 0xAD || r == 0x61C || r == 0x1680 || r == 0x180E || r == 0xFEFF)
    return false;
  if ((r >= 0x2000 && r <= 0x200F) || (r >= 0x2028 && r <= 0x202F) ||
      (r >= 0x205F && r <= 0x206F)) {
    return false;
  }
  if (r == 0x3000 || (r >= 0xE000 && r <= 0xF8FF) || (r >= 0xFFF9 && r <= 0xFFFB) || r >= 0xF0000) {
    return false;
  }
  return true;
}

// The two-character escape of `r` in Go's strconv.Quote, or in Go's encoding/json (`json`, which
// has no \a and \v); nullptr when there is none.
const char* ShortEscape(uint32_t r, bool json) {
  static constexpr std::pair<uint32_t, const char*> kEscapes[] = {
      {'"', "\\\""}, {'\\', "\\\\"}, {'\a', "\\a"}, {'\b', "\\b"}, {'\f', "\\f"},
      {'\n', "\\n"}, {'\r', "\\r"},  {'\t', "\\t"}, {'\v', "\\v"}};
  for (const auto& [c, text] : kEscapes) {
    if (c == r) return json && (r == '\a' || r == '\v') ? nullptr : text;
  }
  return nullptr;
}

bool IsDnsLabelText(absl::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}

bool MatchesDnsSubdomain(const std::string& s) {
  for (absl::string_view part : absl::StrSplit(s, '.')) {
    if (!IsDnsLabelText(part)) return false;
  }
  return true;
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?
bool MatchesLabelKeyName(const std::string& s) {
  if (s.empty() || !absl::ascii_isalnum(s.front()) || !absl::ascii_isalnum(s.back())) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

std::string FieldError::ToString() const {
  std::string out = absl::StrCat(path, ": ", type);
  if (!value_text.empty()) absl::StrAppend(&out, ": ", value_text);
  if (!detail.empty()) absl::StrAppend(&out, ": ", detail);
  return out;
}

FieldError FieldError::Invalid(std::string path, std::string value_text, std::string detail) {
  return {std::move(path), "Invalid value", std::move(value_text), std::move(detail)};
}
FieldError FieldError::Forbidden(std::string path, std::string detail) {
  return {std::move(path), "Forbidden", "", std::move(detail)};
}
FieldError FieldError::Required(std::string path, std::string detail) {
  return {std::move(path), "Required value", "", std::move(detail)};
}
FieldError FieldError::Duplicate(std::string path, std::string value_text) {
  return {std::move(path), "Duplicate value", std::move(value_text), ""};
}
FieldError FieldError::TooLong(std::string path, int max_bytes) {
  return {std::move(path), "Too long", "",
          absl::StrCat("may not be more than ", max_bytes, max_bytes == 1 ? " byte" : " bytes")};
}

std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    uint32_t r = 0;
    const int n = DecodeRune(s, i, &r);
    if (n == 0) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (const char* escape = ShortEscape(r, /*json=*/false)) {
      out += escape;
    } else if (GoIsPrint(r)) {
      out.append(s, i, n);
    } else if (r < 0x20 || r == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02x", r);
    } else if (r < 0x10000) {
      absl::StrAppendFormat(&out, "\\u%04x", r);
    } else {
      absl::StrAppendFormat(&out, "\\U%08x", r);
    }
    i += n;
  }
  return out + "\"";
}

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    uint32_t r = 0;
    const int n = DecodeRune(s, i, &r);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (const char* escape = ShortEscape(r, /*json=*/true)) {
      out += escape;
    } else if (r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029) {
      absl::StrAppendFormat(&out, "\\u%04x", r);
    } else {
      out.append(s, i, n);
    }
    i += n;
  }
  return out + "\"";
}

std::string AggregateErrors(const std::vector<FieldError>& errors) {
  std::vector<std::string> messages;
  std::set<std::string> seen;
  for (const FieldError& e : errors) {
    std::string m = e.ToString();
    if (seen.insert(m).second) messages.push_back(std::move(m));
  }
  if (messages.size() <= 1) return messages.empty() ? "" : messages[0];
  return absl::StrCat("[", absl::StrJoin(messages, ", "), "]");
}

std::string RegexError(const std::string& msg, const std::string& re,
                       const std::vector<std::string>& examples) {
  if (examples.empty()) return absl::StrCat(msg, " (regex used for validation is '", re, "')");
  std::string out = msg + " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    absl::StrAppend(&out, "'", examples[i], "', ");
  }
  return absl::StrCat(out, "regex used for validation is '", re, "')");
}

std::vector<std::string> DnsSubdomainErrors(const std::string& value) {
  std::vector<std::string> errs;
  if (value.size() > 253) errs.push_back("must be no more than 253 characters");
  if (!MatchesDnsSubdomain(value)) {
    errs.push_back(RegexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character",
        R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)", {"example.com"}));
  }
  return errs;
}

// apimachinery's IsLabelKey (a qualified name).
std::vector<std::string> LabelKeyErrors(const std::string& value) {
  constexpr char kMsg[] =
      "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character";
  constexpr char kFmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
  const std::vector<std::string> examples = {"MyName", "my.name", "123-abc"};
  std::vector<std::string> errs;
  std::vector<std::string> parts = absl::StrSplit(value, '/');
  std::string name = parts[0];
  if (parts.size() == 2) {
    name = parts[1];
    if (parts[0].empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& e : DnsSubdomainErrors(parts[0])) errs.push_back("prefix part " + e);
    }
  } else if (parts.size() > 2) {
    errs.push_back(absl::StrCat("a valid label key ", RegexError(kMsg, kFmt, examples),
                                " with an optional DNS subdomain prefix and '/' (e.g. "
                                "'example.com/MyName')"));
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part must be no more than 63 characters");
  }
  if (!MatchesLabelKeyName(name)) errs.push_back("name part " + RegexError(kMsg, kFmt, examples));
  return errs;
}

// ---- Go's strconv ------------------------------------------------------------------------------

std::optional<int64_t> GoAtoi(const std::string& s, std::string* error) {
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) i = 1;
  if (i == s.size()) {
    *error = absl::StrCat("strconv.Atoi: parsing ", GoQuote(s), ": invalid syntax");
    return std::nullopt;
  }
  uint64_t magnitude = 0;
  bool overflow = false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') {
      *error = absl::StrCat("strconv.Atoi: parsing ", GoQuote(s), ": invalid syntax");
      return std::nullopt;
    }
    const uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) overflow = true;
    if (!overflow) magnitude = magnitude * 10 + digit;
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (overflow || magnitude > limit) {
    *error = absl::StrCat("strconv.Atoi: parsing ", GoQuote(s), ": value out of range");
    return std::nullopt;
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<bool> GoParseBool(const std::string& s, std::string* error) {
  static const std::set<std::string> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  if (kTrue.count(s)) return true;
  if (kFalse.count(s)) return false;
  *error = absl::StrCat("strconv.ParseBool: parsing ", GoQuote(s), ": invalid syntax");
  return std::nullopt;
}

std::optional<int32_t> GoParseInt32(const std::string& s) {
  std::string ignored;
  std::optional<int64_t> v = GoAtoi(s, &ignored);
  if (!v || *v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<int32_t>(*v);
}

bool GoParsesAsUint64(const std::string& s) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return s.size() < 20 || s <= "18446744073709551615";
}

}  // namespace admitd::shim
