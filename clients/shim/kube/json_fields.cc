#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {

const nlohmann::json& Field(const nlohmann::json& obj, std::string_view key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string Str(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t IntOr(const nlohmann::json& v, int64_t fallback) {
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

nlohmann::json ObjectOr(const nlohmann::json& v) {
  return v.is_object() ? v : nlohmann::json::object();
}

nlohmann::json ArrayOr(const nlohmann::json& v) {
  return v.is_array() ? v : nlohmann::json::array();
}

}  // namespace admitd::shim
