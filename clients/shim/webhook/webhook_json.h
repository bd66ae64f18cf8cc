// What the admission webhooks (Jobs, pods, RayClusters) share in reading an object's JSON, in
// writing their mutations as RFC 6902 JSON Patch operations, and in Kueue's checks of the metadata
// every integration carries: members read without throwing on a missing or mistyped one, "add"
// operations that create missing parents as they go, the field paths of labels and annotations
// as field errors print them, and the checks of jobframework.ValidateJobOnCreate and
// ValidateJobOnUpdate that read only strings (see field_errors.h for the error texts).
//
//   const nlohmann::json& labels = Field(Field(pod, "metadata"), "labels");
//   std::vector<nlohmann::json> ops;
//   if (!Entry(labels, kQueueNameLabel)) {
//     SetEntries(pod, {"metadata", "labels"}, {{kQueueNameLabel, "default"}}, &ops);
//   }
//   nlohmann::json patched = pod.patch(nlohmann::json(ops));
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_JSON_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_JSON_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/shim/webhook/field_errors.h"
#include "clients/shim/webhook/webhook_context.h"
#include "clients/shim/kube/json_fields.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// ---- Reading an object's JSON ------------------------------------------------------------------

// The string at `key` of a string map, or nullopt when absent (or not a string, or `map` is not
// an object).
std::optional<std::string> Entry(const nlohmann::json& map, std::string_view key);

// Whether the array `list` holds the string `value` (`member` null) or an object whose string
// member `member` is `value` (a scheduling gate's "name"); false when `list` is no array.
bool ListHas(const nlohmann::json& list, const std::string& value, const char* member);

// Whether the controller owner reference of the metadata `meta` (the first one with controller:
// true) has the apiVersion and kind of one of `kinds`.
bool ControlledByOneOf(const nlohmann::json& meta, const std::vector<OwnerKind>& kinds);

// ---- Field paths -------------------------------------------------------------------------------

// "metadata.labels[<key>]" and "metadata.annotations[<key>]".
std::string LabelPath(const std::string& key);
std::string AnnotationPath(const std::string& key);

// ---- JSON Patch --------------------------------------------------------------------------------

// The JSON Pointer (RFC 6901) of tokens[0, n): "/t0/t1", with '~' and '/' written "~0" and "~1".
std::string PointerOf(const std::vector<std::string>& tokens, size_t n);

// What AddAt makes of an array met on its way down the path.
enum class ArrayParents {
  // A missing parent: the operation replaces it with the objects it creates.
  kReplace,
  // Walked into, the next token its index (read with std::stoul, which throws
  // std::invalid_argument for a token that is no number); an index past the end stops the walk.
  kIndex,
};

// Appends an "add" of `value` at `tokens` of `doc` to `ops`: parents that are missing (or not
// objects) are created in the same operation, whose path is then the first missing one and whose
// value is `value` wrapped in the objects named by the rest of `tokens`.
void AddAt(const nlohmann::json& doc, const std::vector<std::string>& tokens, nlohmann::json value,
           std::vector<nlohmann::json>* ops, ArrayParents arrays = ArrayParents::kReplace);

// Sets the string entries of the map at `tokens` of `doc`: one operation per entry when the map
// exists, one for the whole map otherwise; none for no entries.
void SetEntries(const nlohmann::json& doc, const std::vector<std::string>& tokens,
                const std::map<std::string, std::string>& entries,
                std::vector<nlohmann::json>* ops);

// Kueue's utilpod.GateTemplate: the elastic-job scheduling gate appended to the pod template at
// `tokens` of `doc` (object members, and indexes of the arrays on the way) unless it is there.
void GateTemplate(const nlohmann::json& doc, const nlohmann::json& pod_template,
                  std::vector<std::string> tokens, std::vector<nlohmann::json>* ops);

// Appends `items` to the list at `tokens` of `doc` (an "add" at "<list>/-" each), or adds the list
// with them when there is none; nothing for no items.
void AppendToList(const nlohmann::json& doc, const std::vector<std::string>& tokens,
                  const std::vector<nlohmann::json>& items, std::vector<nlohmann::json>* ops);

// ---- Kueue's checks ----------------------------------------------------------------------------

// Kueue's csv.Parse: the comma-separated parts of `s`, each trimmed; nothing for a blank value.
std::vector<std::string> ParseCsv(const std::string& s);

// A name-valued key must be a DNS-1123 subdomain when present (ValidateLabelAsCRDName and its
// annotation twin): one Invalid error at `path` with the problems joined by ",".
void CheckSubdomain(const std::string& path, const std::optional<std::string>& value,
                    std::vector<FieldError>* errs);

// metavalidation.ValidateLabelName: an Invalid error at `path` for each problem of `value` as a
// label key.
void AddLabelKeyErrors(const std::string& path, const std::string& value,
                       std::vector<FieldError>* errs);

// "may not be set when '<key>' is specified", the detail of a Forbidden TAS annotation.
std::string MayNot(const std::string& key);

// The kueue.x-k8s.io/max-exec-time-seconds label of the label map `labels`, when present, must be
// a number greater than 0.
void CheckMaxExecTime(const nlohmann::json& labels, std::vector<FieldError>* errs);

// The kueue.x-k8s.io/admission-gated-by annotation's value: distinct, non-empty gate names, each
// a domain-prefixed path ("acme.io/foo") of at most 63 characters.
void CheckAdmissionGatedByFormat(const std::string& value, std::vector<FieldError>* errs);

// An update of that annotation from `old_gates` to `new_gates` ("" when absent): gates may be
// removed but not added, nor the annotation added after creation; the new value's format is
// checked as above.
void CheckAdmissionGatedByUpdate(const std::string& old_gates, const std::string& new_gates,
                                 std::vector<FieldError>* errs);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_WEBHOOK_JSON_H_
