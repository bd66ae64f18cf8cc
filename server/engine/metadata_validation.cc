#include "server/engine/metadata_validation.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace admitd::engine {
namespace {

constexpr char kQualifiedNameError[] =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr char kLabelValueError[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
constexpr char kClusterNameError[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

// Printable and short, for echoing a bad value back in a message.
std::string Shown(absl::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out.push_back(absl::ascii_isprint(c) ? c : '?');
  if (s.size() > 64) out += "...";
  return absl::StrCat("\"", out, "\"");
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters: a label value when non-empty,
// and the name part of a qualified name.
bool IsNamePart(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!absl::ascii_isalnum(s.front()) || !absl::ascii_isalnum(s.back())) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// The problem with a qualified name, or "" when it is one.
std::string QualifiedNameProblem(absl::string_view key) {
  absl::string_view name = key;
  const size_t slash = key.find('/');
  if (slash != absl::string_view::npos) {
    const std::string prefix(key.substr(0, slash));
    name = key.substr(slash + 1);
    if (prefix.empty()) return "prefix part must be non-empty";
    if (prefix.size() > 253) return "prefix part must be no more than 253 characters";
    if (!IsDnsSubdomain(prefix)) {
      return "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
             "characters, '-' or '.', and must start and end with an alphanumeric character";
    }
  }
  if (name.empty()) return "name part must be non-empty";
  if (name.size() > 63) return "name part must be no more than 63 characters";
  if (!IsNamePart(name)) return kQualifiedNameError;
  return "";
}

// Protobuf maps iterate in no fixed order; violations come out sorted by key.
std::map<std::string, std::string> Sorted(const StringMap& m) { return {m.begin(), m.end()}; }

}  // namespace

bool IsQualifiedName(absl::string_view key) { return QualifiedNameProblem(key).empty(); }

void CheckLabels(Violations* out, const std::string& field, const StringMap& labels) {
  for (const auto& [key, value] : Sorted(labels)) {
    if (std::string problem = QualifiedNameProblem(key); !problem.empty()) {
      out->push_back({field, absl::StrCat("Invalid value: ", Shown(key), ": ", problem)});
    }
    if (value.size() > 63) {
      out->push_back(
          {absl::StrCat(field, "[", Shown(key), "]"),
           absl::StrCat("Invalid value: ", Shown(value), ": must be no more than 63 characters")});
    } else if (!value.empty() && !IsNamePart(value)) {
      out->push_back({absl::StrCat(field, "[", Shown(key), "]"),
                      absl::StrCat("Invalid value: ", Shown(value), ": ", kLabelValueError)});
    }
  }
}

void CheckAnnotations(Violations* out, const std::string& field, const StringMap& annotations) {
  size_t total = 0;
  for (const auto& [key, value] : Sorted(annotations)) {
    total += key.size() + value.size();
    // Kubernetes checks annotation keys case-insensitively as qualified names.
    if (std::string problem = QualifiedNameProblem(absl::AsciiStrToLower(key)); !problem.empty()) {
      out->push_back({field, absl::StrCat("Invalid value: ", Shown(key), ": ", problem)});
    }
  }
  if (total > kMaxAnnotationBytes) {
    out->push_back(
        {field, absl::StrCat("Too long: may not be more than ", kMaxAnnotationBytes, " bytes")});
  }
}

void CheckObjectMeta(Violations* out, const std::string& field, const v1::ObjectMeta& meta) {
  if (!meta.labels().empty()) CheckLabels(out, field + ".labels", meta.labels());
  if (!meta.annotations().empty()) {
    CheckAnnotations(out, field + ".annotations", meta.annotations());
  }
}

void CheckMessage(Violations* out, const std::string& field, const std::string& message) {
  if (message.size() > kMaxMessageBytes) {
    out->push_back(
        {field, absl::StrCat("Too long: may not be more than ", kMaxMessageBytes, " bytes")});
  }
}

void CheckClusterName(Violations* out, const std::string& field, const std::string& name) {
  if (name.empty()) {
    out->push_back({field, "Required value: the shim's cluster name"});
  } else if (name.size() > kMaxClusterNameBytes) {
    out->push_back({field, absl::StrCat("Invalid value: ", Shown(name), ": must be no more than ",
                                        kMaxClusterNameBytes, " characters")});
  } else if (!IsDnsLabel(name)) {
    out->push_back({field, absl::StrCat("Invalid value: ", Shown(name), ": ", kClusterNameError)});
  }
}

void CheckObjectSize(Violations* out, const std::string& field, const std::string& what,
                     size_t bytes, size_t max_bytes) {
  if (max_bytes != 0 && bytes > max_bytes) {
    out->push_back(
        {field, absl::StrCat("Too long: the ", what, " is ", bytes, " bytes encoded; the limit is ",
                             max_bytes, " (--max-object-bytes)")});
  }
}

}  // namespace admitd::engine
