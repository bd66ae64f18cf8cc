#include "server/engine/field_checks.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

constexpr char kSubdomainError[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kLabelError[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

bool IsAlnum(char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); }

bool IsLabelChars(absl::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-') return false;
  }
  return true;
}

}  // namespace

bool IsDnsLabel(const std::string& name) { return name.size() <= 63 && IsLabelChars(name); }

bool IsDnsSubdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    absl::string_view part(name.data() + start,
                           (dot == std::string::npos ? name.size() : dot) - start);
    if (!IsLabelChars(part)) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

void CheckName(Violations* out, absl::FunctionRef<std::string()> field, const std::string& name,
               bool label) {
  if (name.empty()) {
    out->push_back({field(), "Required value: name is required"});
    return;
  }
  const size_t max = label ? 63 : 253;
  if (name.size() > max) {
    out->push_back({field(), absl::StrCat("Invalid value: ", Quote(name.substr(0, 16)),
                                          "...: must be no more than ", max, " characters")});
    return;
  }
  if (label ? !IsDnsLabel(name) : !IsDnsSubdomain(name)) {
    out->push_back({field(), absl::StrCat("Invalid value: ", Quote(name), ": ",
                                          label ? kLabelError : kSubdomainError)});
  }
}

void CheckName(Violations* out, absl::string_view field, const std::string& name, bool label) {
  CheckName(out, [field] { return std::string(field); }, name, label);
}

void CheckEnum(Violations* out, const std::string& field, const std::string& value,
               const std::vector<std::string>& allowed) {
  if (value.empty()) return;  // defaulted
  for (const std::string& a : allowed) {
    if (value == a) return;
  }
  std::vector<std::string> quoted;
  for (const std::string& a : allowed) quoted.push_back(Quote(a));
  out->push_back({field, absl::StrCat("Unsupported value: ", Quote(value),
                                      ": supported values: ", absl::StrJoin(quoted, ", "))});
}

void CheckQuantity(Violations* out, const std::string& field, const std::string& resource,
                   const std::string& text) {
  absl::StatusOr<int64_t> v = ParseQuantity(resource, text);
  if (!v.ok()) {
    out->push_back({field, absl::StrCat("Invalid value: ", Quote(text), ": ", v.status().message())});
  } else if (*v < 0) {
    out->push_back({field, absl::StrCat("Invalid value: ", Quote(text),
                                        ": must be greater than or equal to 0")});
  }
}

void CheckResourceList(Violations* out, absl::FunctionRef<std::string()> field,
                       const google::protobuf::Map<std::string, std::string>& list) {
  bool valid = true;
  for (const auto& [name, text] : list) {
    const absl::StatusOr<int64_t> v = ParseQuantity(name, text);
    if (!v.ok() || *v < 0) {
      valid = false;
      break;
    }
  }
  if (valid) return;  // the common case: no names built, nothing sorted
  const std::string base = field();
  std::map<std::string, std::string> sorted(list.begin(), list.end());
  for (const auto& [name, text] : sorted) {
    CheckQuantity(out, absl::StrCat(base, "[", name, "]"), name, text);
  }
}

void CheckTolerations(Violations* out, const std::string& field,
                      const google::protobuf::RepeatedPtrField<v1::Toleration>& tolerations) {
  for (int i = 0; i < tolerations.size(); ++i) {
    const v1::Toleration& t = tolerations[i];
    std::string f = absl::StrCat(field, "[", i, "]");
    CheckEnum(out, f + ".operator", t.operator_(), {"Equal", "Exists"});
    CheckEnum(out, f + ".effect", t.effect(), {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    if (t.operator_() == "Exists" && !t.value().empty()) {
      out->push_back({f + ".operator",
                      "Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'"});
    }
  }
}

void CheckPriority(Violations* out, const std::string& field, int64_t priority) {
  constexpr int64_t kMaxPriority = 2000001000;
  if (priority > kMaxPriority || priority < -kMaxPriority) {
    out->push_back({field, absl::StrCat("Invalid value: ", priority, ": must be between -",
                                        kMaxPriority, " and ", kMaxPriority)});
  }
}

}  // namespace admitd::engine
