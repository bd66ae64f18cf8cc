#include "clients/shim/webhook/webhook_json.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

constexpr size_t kMaxGateNameLength = 63;

}  // namespace

// ---- Reading an object's JSON ------------------------------------------------------------------

std::optional<std::string> Entry(const nlohmann::json& map, std::string_view key) {
  const nlohmann::json& v = Field(map, key);
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

bool ListHas(const nlohmann::json& list, const std::string& value, const char* member) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(), [&](const nlohmann::json& e) {
    return member == nullptr ? e == value : Entry(e, member) == value;
  });
}

bool ControlledByOneOf(const nlohmann::json& meta, const std::vector<OwnerKind>& kinds) {
  const nlohmann::json& owners = Field(meta, "ownerReferences");
  if (!owners.is_array()) return false;
  for (const nlohmann::json& ref : owners) {
    if (Field(ref, "controller") != true) continue;
    const std::string api_version = Entry(ref, "apiVersion").value_or("");
    const std::string kind = Entry(ref, "kind").value_or("");
    return std::any_of(kinds.begin(), kinds.end(), [&](const OwnerKind& k) {
      return k.api_version == api_version && k.kind == kind;
    });
  }
  return false;
}

// ---- Field paths -------------------------------------------------------------------------------

std::string LabelPath(const std::string& key) { return "metadata.labels[" + key + "]"; }
std::string AnnotationPath(const std::string& key) { return "metadata.annotations[" + key + "]"; }

// ---- JSON Patch --------------------------------------------------------------------------------

std::string PointerOf(const std::vector<std::string>& tokens, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += '/';
    for (char c : tokens[i]) {
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
  }
  return out;
}

void AddAt(const nlohmann::json& doc, const std::vector<std::string>& tokens, nlohmann::json value,
           std::vector<nlohmann::json>* ops, ArrayParents arrays) {
  const bool index_arrays = arrays == ArrayParents::kIndex;
  const nlohmann::json* cur = &doc;
  size_t existing = 0;  // tokens[0, existing) lead to parents that are in doc
  while (existing + 1 < tokens.size()) {
    const nlohmann::json* next = nullptr;
    if (cur->is_object()) {
      next = &Field(*cur, tokens[existing]);
    } else if (index_arrays && cur->is_array()) {
      // A name where an index is due (an object of the wrong type in the request) ends the walk.
      size_t i = 0;
      if (absl::SimpleAtoi(tokens[existing], &i) && i < cur->size()) next = &(*cur)[i];
    }
    if (next == nullptr || !(next->is_object() || (index_arrays && next->is_array()))) break;
    cur = next;
    ++existing;
  }
  for (size_t j = tokens.size() - 1; j > existing; --j) value = {{tokens[j], std::move(value)}};
  ops->push_back({{"op", "add"}, {"path", PointerOf(tokens, existing + 1)}, {"value", value}});
}

void SetEntries(const nlohmann::json& doc, const std::vector<std::string>& tokens,
                const std::map<std::string, std::string>& entries,
                std::vector<nlohmann::json>* ops) {
  if (entries.empty()) return;
  const nlohmann::json* map = &doc;
  for (const std::string& t : tokens) map = &Field(*map, t);
  if (!map->is_object()) {
    AddAt(doc, tokens, nlohmann::json(entries), ops);
    return;
  }
  for (const auto& [k, v] : entries) {
    std::vector<std::string> path = tokens;
    path.push_back(k);
    AddAt(doc, path, v, ops);
  }
}

void GateTemplate(const nlohmann::json& doc, const nlohmann::json& pod_template,
                  std::vector<std::string> tokens, std::vector<nlohmann::json>* ops) {
  static constexpr char kGate[] = "kueue.x-k8s.io/elastic-job";
  const nlohmann::json& gates = Field(Field(pod_template, "spec"), "schedulingGates");
  const nlohmann::json gate = {{"name", kGate}};
  for (const char* t : {"spec", "schedulingGates"}) tokens.push_back(t);
  if (!gates.is_array()) {
    AddAt(doc, tokens, nlohmann::json::array({gate}), ops, ArrayParents::kIndex);
    return;
  }
  if (ListHas(gates, kGate, "name")) return;
  ops->push_back(
      {{"op", "add"}, {"path", PointerOf(tokens, tokens.size()) + "/-"}, {"value", gate}});
}

void AppendToList(const nlohmann::json& doc, const std::vector<std::string>& tokens,
                  const std::vector<nlohmann::json>& items, std::vector<nlohmann::json>* ops) {
  if (items.empty()) return;
  const nlohmann::json* list = &doc;
  for (const std::string& t : tokens) list = &Field(*list, t);
  if (!list->is_array()) {
    AddAt(doc, tokens, nlohmann::json(items), ops);
    return;
  }
  for (const nlohmann::json& item : items) {
    ops->push_back(
        {{"op", "add"}, {"path", PointerOf(tokens, tokens.size()) + "/-"}, {"value", item}});
  }
}

// ---- Kueue's checks ----------------------------------------------------------------------------

std::vector<std::string> ParseCsv(const std::string& s) {
  if (absl::StripAsciiWhitespace(s).empty()) return {};
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

void CheckSubdomain(const std::string& path, const std::optional<std::string>& value,
                    std::vector<FieldError>* errs) {
  if (!value) return;
  if (std::vector<std::string> e = DnsSubdomainErrors(*value); !e.empty()) {
    errs->push_back(FieldError::Invalid(path, GoQuote(*value), absl::StrJoin(e, ",")));
  }
}

void AddLabelKeyErrors(const std::string& path, const std::string& value,
                       std::vector<FieldError>* errs) {
  for (const std::string& e : LabelKeyErrors(value)) {
    errs->push_back(FieldError::Invalid(path, GoQuote(value), e));
  }
}

std::string MayNot(const std::string& key) {
  return absl::StrCat("may not be set when '", key, "' is specified");
}

void CheckMaxExecTime(const nlohmann::json& labels, std::vector<FieldError>* errs) {
  std::optional<std::string> max_exec = Entry(labels, kMaxExecTimeLabel);
  if (!max_exec) return;
  std::string error;
  std::optional<int64_t> v = GoAtoi(*max_exec, &error);
  if (!v) {
    errs->push_back(FieldError::Invalid(LabelPath(kMaxExecTimeLabel), GoQuote(*max_exec), error));
  } else if (*v <= 0) {
    errs->push_back(FieldError::Invalid(LabelPath(kMaxExecTimeLabel), absl::StrCat(*v),
                                        "should be greater than 0"));
  }
}

void CheckAdmissionGatedByFormat(const std::string& value, std::vector<FieldError>* errs) {
  const std::string path = AnnotationPath(kAdmissionGatedBy);
  std::set<std::string> seen;
  for (const std::string& gate : ParseCsv(value)) {
    if (gate.empty()) {
      errs->push_back(FieldError::Invalid(path, GoQuote(value), "cannot contain empty gate names"));
      continue;
    }
    if (!seen.insert(gate).second) {
      errs->push_back(FieldError::Invalid(path, GoQuote(value), "duplicate gate name: " + gate));
      continue;
    }
    // IsDomainPrefixedPath (<DNS subdomain>/<path>), as Kubernetes checks a Job's spec.managedBy.
    const size_t slash = gate.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == gate.size()) {
      errs->push_back(FieldError::Invalid(
          path, GoQuote(gate), "must be a domain-prefixed path (such as \"acme.io/foo\")"));
    } else {
      const std::string host = gate.substr(0, slash), rest = gate.substr(slash + 1);
      for (const std::string& e : DnsSubdomainErrors(host)) {
        errs->push_back(FieldError::Invalid(path, GoQuote(host), e));
      }
      static const std::string kPathChars = "/-._~%!$&'()*+,;=:";
      const bool valid_path = std::all_of(rest.begin(), rest.end(), [](char c) {
        return absl::ascii_isalnum(c) || kPathChars.find(c) != std::string::npos;
      });
      if (!valid_path) {
        errs->push_back(FieldError::Invalid(
            path, GoQuote(rest),
            RegexError("Invalid path", R"([A-Za-z0-9/\-._~%!$&'()*+,;=:]+)", {})));
      }
    }
    if (gate.size() > kMaxGateNameLength) {
      errs->push_back(FieldError::TooLong(path, static_cast<int>(kMaxGateNameLength)));
    }
  }
}

void CheckAdmissionGatedByUpdate(const std::string& old_gates, const std::string& new_gates,
                                 std::vector<FieldError>* errs) {
  const std::string path = AnnotationPath(kAdmissionGatedBy);
  if (old_gates.empty() && !new_gates.empty()) {
    errs->push_back(FieldError::Forbidden(path, "cannot add admission gate after creation"));
  }
  if (!old_gates.empty() && !new_gates.empty()) {
    const std::vector<std::string> before = ParseCsv(old_gates);
    for (const std::string& gate : ParseCsv(new_gates)) {
      if (std::find(before.begin(), before.end(), gate) == before.end()) {
        errs->push_back(FieldError::Forbidden(path, "can only remove gates, not add new ones"));
        break;
      }
    }
  }
  CheckAdmissionGatedByFormat(new_gates, errs);
}

}  // namespace admitd::shim
