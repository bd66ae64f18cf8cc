#include "clients/shim/integrations/pod/pod_webhook_role_hash.h"

#include <openssl/sha.h>

#include <cstdio>
#include <iterator>

#include "clients/shim/webhook/field_errors.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

// How Go encodes one field of a k8s.io/api struct. A pointer or a slice or map that the JSON
// leaves out (or sets to null) is Go's nil.
enum class Kind {
  kString,       // string
  kInt,          // int32 / int64
  kStringPtr,    // *string
  kIntPtr,       // *int32 / *int64
  kStrings,      // []string
  kStringMap,    // map[string]string
  kQuantityMap,  // ResourceList: map[ResourceName]Quantity
  kStruct,       // a struct value: never omitted
  kStructPtr,    // *T
  kStructs,      // []T
};

struct GoType;
struct GoField {
  const char* name;
  Kind kind;
  bool omit_empty;
  const GoType* type;  // for kStruct, kStructPtr and kStructs
};
struct GoType {
  const GoField* fields;
  size_t size;
};

// k8s.io/api/core/v1 and apimachinery's metav1, fields in declaration order.
constexpr GoField kSelectorRequirementFields[] = {
    {"key", Kind::kString, false, nullptr},
    {"operator", Kind::kString, false, nullptr},
    {"values", Kind::kStrings, true, nullptr},
};
constexpr GoType kSelectorRequirement = {kSelectorRequirementFields,
                                         std::size(kSelectorRequirementFields)};
constexpr GoField kLabelSelectorFields[] = {
    {"matchLabels", Kind::kStringMap, true, nullptr},
    {"matchExpressions", Kind::kStructs, true, &kSelectorRequirement},
};
constexpr GoType kLabelSelector = {kLabelSelectorFields, std::size(kLabelSelectorFields)};
constexpr GoField kNodeSelectorTermFields[] = {
    {"matchExpressions", Kind::kStructs, true, &kSelectorRequirement},
    {"matchFields", Kind::kStructs, true, &kSelectorRequirement},
};
constexpr GoType kNodeSelectorTerm = {kNodeSelectorTermFields, std::size(kNodeSelectorTermFields)};
constexpr GoField kNodeSelectorFields[] = {
    {"nodeSelectorTerms", Kind::kStructs, false, &kNodeSelectorTerm},
};
constexpr GoType kNodeSelector = {kNodeSelectorFields, std::size(kNodeSelectorFields)};
constexpr GoField kPreferredTermFields[] = {
    {"weight", Kind::kInt, false, nullptr},
    {"preference", Kind::kStruct, false, &kNodeSelectorTerm},
};
constexpr GoType kPreferredTerm = {kPreferredTermFields, std::size(kPreferredTermFields)};
constexpr GoField kNodeAffinityFields[] = {
    {"requiredDuringSchedulingIgnoredDuringExecution", Kind::kStructPtr, true, &kNodeSelector},
    {"preferredDuringSchedulingIgnoredDuringExecution", Kind::kStructs, true, &kPreferredTerm},
};
constexpr GoType kNodeAffinity = {kNodeAffinityFields, std::size(kNodeAffinityFields)};
constexpr GoField kPodAffinityTermFields[] = {
    {"labelSelector", Kind::kStructPtr, true, &kLabelSelector},
    {"namespaces", Kind::kStrings, true, nullptr},
    {"topologyKey", Kind::kString, false, nullptr},
    {"namespaceSelector", Kind::kStructPtr, true, &kLabelSelector},
    {"matchLabelKeys", Kind::kStrings, true, nullptr},
    {"mismatchLabelKeys", Kind::kStrings, true, nullptr},
};
constexpr GoType kPodAffinityTerm = {kPodAffinityTermFields, std::size(kPodAffinityTermFields)};
constexpr GoField kWeightedTermFields[] = {
    {"weight", Kind::kInt, false, nullptr},
    {"podAffinityTerm", Kind::kStruct, false, &kPodAffinityTerm},
};
constexpr GoType kWeightedTerm = {kWeightedTermFields, std::size(kWeightedTermFields)};
// PodAffinity and PodAntiAffinity have the same fields.
constexpr GoField kPodAffinityFields[] = {
    {"requiredDuringSchedulingIgnoredDuringExecution", Kind::kStructs, true, &kPodAffinityTerm},
    {"preferredDuringSchedulingIgnoredDuringExecution", Kind::kStructs, true, &kWeightedTerm},
};
constexpr GoType kPodAffinity = {kPodAffinityFields, std::size(kPodAffinityFields)};
constexpr GoField kAffinityFields[] = {
    {"nodeAffinity", Kind::kStructPtr, true, &kNodeAffinity},
    {"podAffinity", Kind::kStructPtr, true, &kPodAffinity},
    {"podAntiAffinity", Kind::kStructPtr, true, &kPodAffinity},
};
constexpr GoType kAffinity = {kAffinityFields, std::size(kAffinityFields)};
constexpr GoField kTolerationFields[] = {
    {"key", Kind::kString, true, nullptr},
    {"operator", Kind::kString, true, nullptr},
    {"value", Kind::kString, true, nullptr},
    {"effect", Kind::kString, true, nullptr},
    {"tolerationSeconds", Kind::kIntPtr, true, nullptr},
};
constexpr GoType kToleration = {kTolerationFields, std::size(kTolerationFields)};
constexpr GoField kSpreadConstraintFields[] = {
    {"maxSkew", Kind::kInt, false, nullptr},
    {"topologyKey", Kind::kString, false, nullptr},
    {"whenUnsatisfiable", Kind::kString, false, nullptr},
    {"labelSelector", Kind::kStructPtr, true, &kLabelSelector},
    {"minDomains", Kind::kIntPtr, true, nullptr},
    {"nodeAffinityPolicy", Kind::kStringPtr, true, nullptr},
    {"nodeTaintsPolicy", Kind::kStringPtr, true, nullptr},
    {"matchLabelKeys", Kind::kStrings, true, nullptr},
};
constexpr GoType kSpreadConstraint = {kSpreadConstraintFields, std::size(kSpreadConstraintFields)};
constexpr GoField kResourceClaimFields[] = {
    {"name", Kind::kString, false, nullptr},
    {"resourceClaimName", Kind::kStringPtr, true, nullptr},
    {"resourceClaimTemplateName", Kind::kStringPtr, true, nullptr},
};
constexpr GoType kResourceClaim = {kResourceClaimFields, std::size(kResourceClaimFields)};
constexpr GoField kContainerPortFields[] = {
    {"name", Kind::kString, true, nullptr},        {"hostPort", Kind::kInt, true, nullptr},
    {"containerPort", Kind::kInt, false, nullptr}, {"protocol", Kind::kString, true, nullptr},
    {"hostIP", Kind::kString, true, nullptr},
};
constexpr GoType kContainerPort = {kContainerPortFields, std::size(kContainerPortFields)};

// Whether Go leaves the field out: omitempty and the zero value (or nil).
bool Omitted(const nlohmann::json& v, const GoField& f) {
  if (!f.omit_empty) return false;
  switch (f.kind) {
    case Kind::kString:
      return !v.is_string() || v.get_ref<const std::string&>().empty();
    case Kind::kInt:
      return !v.is_number_integer() || v.get<int64_t>() == 0;
    case Kind::kStringPtr:
      return !v.is_string();
    case Kind::kIntPtr:
      return !v.is_number_integer();
    case Kind::kStructPtr:
      return !v.is_object();
    case Kind::kStrings:
    case Kind::kStructs:
      return !v.is_array() || v.empty();
    case Kind::kStringMap:
    case Kind::kQuantityMap:
      return !v.is_object() || v.empty();
    case Kind::kStruct:
      return false;
  }
  return false;
}

std::string Text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : std::string();
}

void AppendStruct(const nlohmann::json& obj, const GoType& type, std::string* out);

void AppendField(const nlohmann::json& v, const GoField& f, std::string* out) {
  switch (f.kind) {
    case Kind::kString:
      *out += JsonQuote(Text(v));
      return;
    case Kind::kInt:
      *out += v.is_number_integer() ? std::to_string(v.get<int64_t>()) : "0";
      return;
    case Kind::kStringPtr:
      *out += v.is_string() ? JsonQuote(Text(v)) : "null";
      return;
    case Kind::kIntPtr:
      *out += v.is_number_integer() ? std::to_string(v.get<int64_t>()) : "null";
      return;
    case Kind::kStrings:
      if (!v.is_array()) {
        *out += "null";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i > 0) *out += ',';
        *out += JsonQuote(Text(v[i]));
      }
      *out += ']';
      return;
    case Kind::kStringMap:
    case Kind::kQuantityMap: {
      if (!v.is_object()) {
        *out += "null";
        return;
      }
      *out += '{';
      bool first = true;
      for (const auto& [key, value] : v.items()) {  // sorted bytewise, as Go sorts map keys
        if (!first) *out += ',';
        first = false;
        *out += JsonQuote(key);
        *out += ':';
        const bool number = f.kind == Kind::kQuantityMap && value.is_number();
        *out += JsonQuote(number ? value.dump() : Text(value));
      }
      *out += '}';
      return;
    }
    case Kind::kStruct:
      AppendStruct(v, *f.type, out);
      return;
    case Kind::kStructPtr:
      if (!v.is_object()) {
        *out += "null";
        return;
      }
      AppendStruct(v, *f.type, out);
      return;
    case Kind::kStructs:
      if (!v.is_array()) {
        *out += "null";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i > 0) *out += ',';
        AppendStruct(v[i], *f.type, out);
      }
      *out += ']';
      return;
  }
}

void AppendStruct(const nlohmann::json& obj, const GoType& type, std::string* out) {
  *out += '{';
  bool first = true;
  for (size_t i = 0; i < type.size; ++i) {
    const GoField& f = type.fields[i];
    const nlohmann::json& v = Field(obj, f.name);
    if (Omitted(v, f)) continue;
    if (!first) *out += ',';
    first = false;
    *out += JsonQuote(f.name);
    *out += ':';
    AppendField(v, f, out);
  }
  *out += '}';
}

// A member of the shape, a map[string]any: never omitted.
void AppendMember(const char* key, const nlohmann::json& v, Kind kind, const GoType* type,
                  std::string* out) {
  if (out->back() != '{') *out += ',';
  *out += JsonQuote(key);
  *out += ':';
  AppendField(v, GoField{key, kind, false, type}, out);
}

// ContainersShape: nil without containers, else one {"ports", "resources": {"requests"}} each.
void AppendContainers(const char* key, const nlohmann::json& containers, std::string* out) {
  if (out->back() != '{') *out += ',';
  *out += JsonQuote(key);
  *out += ':';
  if (!containers.is_array() || containers.empty()) {
    *out += "null";
    return;
  }
  *out += '[';
  for (size_t i = 0; i < containers.size(); ++i) {
    if (i > 0) *out += ',';
    *out += '{';
    AppendMember("ports", Field(containers[i], "ports"), Kind::kStructs, &kContainerPort, out);
    *out += ",\"resources\":{";
    AppendMember("requests", Field(Field(containers[i], "resources"), "requests"),
                 Kind::kQuantityMap, nullptr, out);
    *out += "}}";
  }
  *out += ']';
}

}  // namespace

std::string PodRoleShapeJson(const nlohmann::json& spec) {
  // The shape is a Go map: its keys are written sorted.
  std::string out = "{\"spec\":{";
  AppendMember("affinity", Field(spec, "affinity"), Kind::kStructPtr, &kAffinity, &out);
  AppendContainers("containers", Field(spec, "containers"), &out);
  AppendContainers("initContainers", Field(spec, "initContainers"), &out);
  AppendMember("nodeSelector", Field(spec, "nodeSelector"), Kind::kStringMap, nullptr, &out);
  AppendMember("overhead", Field(spec, "overhead"), Kind::kQuantityMap, nullptr, &out);
  AppendMember("priority", Field(spec, "priority"), Kind::kIntPtr, nullptr, &out);
  AppendMember("resourceClaims", Field(spec, "resourceClaims"), Kind::kStructs, &kResourceClaim,
               &out);
  // Pod-level resources take part only when set, so that older hashes stay stable.
  if (const nlohmann::json& resources = Field(spec, "resources"); resources.is_object()) {
    AppendMember("resources", Field(resources, "requests"), Kind::kQuantityMap, nullptr, &out);
  }
  AppendMember("runtimeClassName", Field(spec, "runtimeClassName"), Kind::kStringPtr, nullptr,
               &out);
  AppendMember("tolerations", Field(spec, "tolerations"), Kind::kStructs, &kToleration, &out);
  AppendMember("topologySpreadConstraints", Field(spec, "topologySpreadConstraints"),
               Kind::kStructs, &kSpreadConstraint, &out);
  out += "}}";
  return out;
}

std::string PodRoleHash(const nlohmann::json& spec) {
  const std::string shape = PodRoleShapeJson(spec);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(shape.data()), shape.size(), digest);
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%02x%02x%02x%02x", digest[0], digest[1], digest[2], digest[3]);
  return std::string(hex, 8);
}

}  // namespace admitd::shim
