// Reading a field of a Kubernetes object (nlohmann JSON) without throwing on a missing, null or
// mistyped one: what every part of the shim that looks into an object it was handed uses.
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_KUBE_JSON_FIELDS_H_
#define ADMITD_CLIENTS_SHIM_KUBE_JSON_FIELDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace admitd::shim {

// obj[key] when obj is an object that has it; a null otherwise.
const nlohmann::json& Field(const nlohmann::json& obj, std::string_view key);
// obj[key] when obj is an object and that is a string; "" otherwise.
std::string Str(const nlohmann::json& obj, std::string_view key);
// v when it is an integer; `fallback` otherwise (missing, null, another type).
int64_t IntOr(const nlohmann::json& v, int64_t fallback);
// v when it is an object (an array); an empty one otherwise.
nlohmann::json ObjectOr(const nlohmann::json& v);
nlohmann::json ArrayOr(const nlohmann::json& v);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_JSON_FIELDS_H_
