#include "clients/shim/framework/tas_rules.h"

#include <limits>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/kueue_keys.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

constexpr char kConstraintType[] = "v1beta2.PodsetSliceRequiredTopologyConstraint";

// Go's encoding/json quoteChar: a byte of a syntax error, single-quoted.
std::string QuoteChar(unsigned char c) {
  if (c == '\'') return R"('\'')";
  if (c == '"') return R"('"')";
  std::string rune;  // string(c) in Go: the code point U+00cc
  if (c < 0x80) {
    rune = std::string(1, static_cast<char>(c));
  } else {
    rune = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  }
  const std::string quoted = GoQuote(rune);
  return "'" + quoted.substr(1, quoted.size() - 2) + "'";
}

// The JSON Go's json.Unmarshal sees in `text`, or its syntax error: Go's text for a value that
// ends early or starts with a character no value starts with; elsewhere Go names the scanner's
// state, which is not followed here.
std::optional<nlohmann::json> ParseJson(const std::string& text, std::string* error) {
  size_t bad = 0;  // 1-based position of the offending byte; past the end: an early end
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    bad = e.byte;
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || bad > text.size() || bad == 0) {
    *error = "unexpected end of JSON input";
  } else if (bad == first + 1) {
    *error = absl::StrCat("invalid character ", QuoteChar(text[first]),
                          " looking for beginning of value");
  } else {
    *error = absl::StrCat("invalid character ", QuoteChar(text[bad - 1]), " in JSON input");
  }
  return std::nullopt;
}

// The Go kind of a JSON value, as json.UnmarshalTypeError names it.
std::string GoValueKind(const nlohmann::json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "number " + v.dump();
}

struct Layer {
  std::string topology;
  int32_t size = 0;
};

// json.Unmarshal into []PodsetSliceRequiredTopologyConstraint: the layers, or Go's first type
// error (keys match case-insensitively; unknown keys are ignored; null leaves the zero value).
std::optional<std::vector<Layer>> DecodeLayers(const nlohmann::json& doc, std::string* error) {
  std::vector<Layer> layers;
  std::string first_error;
  const auto type_error = [&](const std::string& value, const char* field, const char* type) {
    if (!first_error.empty()) return;
    first_error =
        field == nullptr
            ? absl::StrCat("json: cannot unmarshal ", value, " into Go value of type ", type)
            : absl::StrCat("json: cannot unmarshal ", value, " into Go struct field ",
                           "PodsetSliceRequiredTopologyConstraint.", field, " of type ", type);
  };
  if (doc.is_null()) return layers;
  if (!doc.is_array()) {
    *error = absl::StrCat("json: cannot unmarshal ", doc.is_number() ? "number" : GoValueKind(doc),
                          " into Go value of type []", kConstraintType);
    return std::nullopt;
  }
  for (const nlohmann::json& element : doc) {
    Layer layer;
    if (!element.is_null() && !element.is_object()) {
      type_error(element.is_number() ? "number" : GoValueKind(element), nullptr, kConstraintType);
    }
    static const nlohmann::json kNoKeys = nlohmann::json::object();
    for (const auto& [key, value] : (element.is_object() ? element : kNoKeys).items()) {
      const std::string lower = absl::AsciiStrToLower(key);
      if (lower == "topology" && !value.is_null()) {
        if (value.is_string()) {
          layer.topology = value.get<std::string>();
        } else {
          type_error(value.is_number() ? "number" : GoValueKind(value), "topology", "string");
        }
      } else if (lower == "size" && !value.is_null()) {
        const bool fits = value.is_number_integer() &&
                          value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                          value.get<int64_t>() <= std::numeric_limits<int32_t>::max() &&
                          !(value.is_number_unsigned() &&
                            value.get<uint64_t>() > std::numeric_limits<int32_t>::max());
        if (fits) {
          layer.size = static_cast<int32_t>(value.get<int64_t>());
        } else {
          type_error(GoValueKind(value), "size", "int32");
        }
      }
    }
    layers.push_back(std::move(layer));
  }
  if (!first_error.empty()) {
    *error = first_error;
    return std::nullopt;
  }
  return layers;
}

void CheckConstraints(const std::string& annotations_path, const nlohmann::json& annotations,
                      bool multi_layer, bool slice_required, bool slice_size, bool group_name,
                      std::vector<FieldError>* errs) {
  const std::optional<std::string> text = Entry(annotations, kSliceConstraints);
  if (!text) return;
  const std::string path = absl::StrCat(annotations_path, "[", kSliceConstraints, "]");
  if (!multi_layer) {
    errs->push_back(FieldError::Forbidden(
        path, "the TASMultiLayerTopology feature gate must be enabled to use this annotation"));
    return;
  }
  if (slice_required) errs->push_back(FieldError::Forbidden(path, MayNot(kSliceRequiredTopology)));
  if (slice_size) errs->push_back(FieldError::Forbidden(path, MayNot(kSliceSize)));
  if (group_name) {
    errs->push_back(FieldError::Forbidden(absl::StrCat(annotations_path, "[", kPodSetGroupName, "]"),
                                          MayNot(kSliceConstraints)));
  }
  std::string error;
  std::optional<nlohmann::json> doc = ParseJson(*text, &error);
  std::optional<std::vector<Layer>> layers;
  if (doc) layers = DecodeLayers(*doc, &error);
  if (!layers) {
    errs->push_back(
        FieldError::Invalid(path, GoQuote(*text), "must be a valid JSON array: " + error));
    return;
  }
  if (layers->empty() || layers->size() > 3) {
    errs->push_back(FieldError::Invalid(
        path, GoQuote(*text), "topology constraints must contain between 1 and 3 entries"));
    return;
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    const std::string entry = absl::StrCat(path, "[", i, "]");
    AddLabelKeyErrors(entry + ".topology", (*layers)[i].topology, errs);
    if ((*layers)[i].size < 1) {
      errs->push_back(FieldError::Invalid(entry + ".size", absl::StrCat((*layers)[i].size),
                                          "must be greater than or equal to 1"));
    }
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < layers->size(); ++i) {
    const std::string& topology = (*layers)[i].topology;
    if (auto [it, inserted] = seen.emplace(topology, i); !inserted) {
      errs->push_back(FieldError::Duplicate(
          absl::StrCat(path, "[", i, "].topology"),
          GoQuote(absl::StrCat(topology, " (also at index ", it->second, ")"))));
    }
  }
  for (size_t i = 0; i + 1 < layers->size(); ++i) {
    const int32_t parent = (*layers)[i].size, child = (*layers)[i + 1].size;
    if (child > 0 && parent % child != 0) {
      errs->push_back(
          FieldError::Invalid(absl::StrCat(path, "[", i + 1, "].size"), absl::StrCat(child),
                              absl::StrCat("must evenly divide the parent layer size ", parent)));
    }
  }
}

}  // namespace

std::vector<FieldError> TasPodSetRequestErrors(const std::string& replica_path,
                                               const nlohmann::json& annotations,
                                               bool multi_layer) {
  std::vector<FieldError> errs;
  const std::string annotations_path = replica_path + ".annotations";
  const auto key_path = [&](const char* key) {
    return absl::StrCat(annotations_path, "[", key, "]");
  };
  const std::optional<std::string> required = Entry(annotations, kRequiredTopology);
  const std::optional<std::string> preferred = Entry(annotations, kPreferredTopology);
  const std::optional<std::string> unconstrained = Entry(annotations, kUnconstrainedTopology);
  const std::optional<std::string> slice_required = Entry(annotations, kSliceRequiredTopology);
  const std::optional<std::string> slice_size = Entry(annotations, kSliceSize);
  const std::optional<std::string> group_name = Entry(annotations, kPodSetGroupName);
  if (int{required.has_value()} + int{preferred.has_value()} + int{unconstrained.has_value()} > 1) {
    errs.push_back(FieldError::Invalid(
        annotations_path, "",
        absl::StrCat("must not contain more than one topology annotation: [", GoQuote(kRequiredTopology),
                     ", ", GoQuote(kPreferredTopology), ", ", GoQuote(kUnconstrainedTopology), "]")));
  }
  if (required) AddLabelKeyErrors(key_path(kRequiredTopology), *required, &errs);
  if (preferred) AddLabelKeyErrors(key_path(kPreferredTopology), *preferred, &errs);
  if (slice_required) AddLabelKeyErrors(key_path(kSliceRequiredTopology), *slice_required, &errs);
  if (group_name) {
    if (GoParsesAsUint64(*group_name)) {
      errs.push_back(
          FieldError::Invalid(key_path(kPodSetGroupName), GoQuote(*group_name), "must not be a number"));
    }
    if (slice_size) errs.push_back(FieldError::Forbidden(key_path(kPodSetGroupName), MayNot(kSliceSize)));
    if (slice_required) {
      errs.push_back(FieldError::Forbidden(key_path(kPodSetGroupName), MayNot(kSliceRequiredTopology)));
    }
    if (!preferred && !required) {
      errs.push_back(FieldError::Forbidden(
          key_path(kPodSetGroupName), absl::StrCat("may not be set when neither '", kPreferredTopology, "' nor '",
                                             kRequiredTopology, "' is specified")));
    }
  }
  std::string ignored;
  if (unconstrained && !GoParseBool(*unconstrained, &ignored)) {
    errs.push_back(FieldError::Invalid(key_path(kUnconstrainedTopology), GoQuote(*unconstrained),
                                       "must be a boolean value"));
  }
  if (slice_size) {
    const std::optional<int32_t> size = GoParseInt32(*slice_size);
    if (!size) {
      errs.push_back(FieldError::Invalid(key_path(kSliceSize), GoQuote(*slice_size),
                                         "must be a numeric value"));
    } else if (*size < 1) {
      errs.push_back(FieldError::Invalid(key_path(kSliceSize), GoQuote(*slice_size),
                                         "must be greater than or equal to 1"));
    }
  }
  if (slice_required && !slice_size) {
    errs.push_back(
        FieldError::Required(key_path(kSliceSize),
                             absl::StrCat("must be set when '", kSliceRequiredTopology, "' is specified")));
  }
  if (!slice_required && slice_size) {
    errs.push_back(FieldError::Forbidden(
        key_path(kSliceSize),
        absl::StrCat("may not be set when '", kSliceRequiredTopology, "' is not specified")));
  }
  CheckConstraints(annotations_path, annotations, multi_layer, slice_required.has_value(),
                   slice_size.has_value(), group_name.has_value(), &errs);
  return errs;
}

}  // namespace admitd::shim
