// A minimal JSON value and writer reproducing Go's encoding/json output byte for byte for the
// shapes Kueue hashes: struct fields in declaration order, map keys sorted bytewise, nil as
// null, no whitespace, and Go's string escaping (HTML-safe: <, > and & become \u003c, \u003e,
// \u0026; U+2028/U+2029 escaped; invalid UTF-8 replaced by \ufffd).
#ifndef ADMITD_SERVER_PODS_GO_JSON_H_
#define ADMITD_SERVER_PODS_GO_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace admitd::pods {

class GoJsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kStruct, kMap };

  GoJsonValue() = default;  // null
  static GoJsonValue Null() { return GoJsonValue(); }
  static GoJsonValue Bool(bool b);
  static GoJsonValue Int(int64_t n);
  static GoJsonValue String(absl::string_view s);
  static GoJsonValue Array();
  // A Go struct: members keep the order they are added in (declaration order).
  static GoJsonValue Struct();
  // A Go map: members are written sorted by key.
  static GoJsonValue Map();

  Kind kind() const { return kind_; }
  // Appends an element to an array.
  GoJsonValue& Push(GoJsonValue v);
  // Adds a member to a struct or map.
  GoJsonValue& Set(absl::string_view key, GoJsonValue v);

  // Go's json.Marshal output.
  std::string Serialize() const;
  void AppendTo(std::string* out) const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  int64_t number_ = 0;
  std::string string_;
  std::vector<GoJsonValue> elements_;
  std::vector<std::pair<std::string, GoJsonValue>> members_;
};

// Appends `s` as a quoted JSON string escaped exactly as Go's encoding/json does.
void AppendGoJsonString(absl::string_view s, std::string* out);
std::string GoJsonString(absl::string_view s);

}  // namespace admitd::pods

#endif  // ADMITD_SERVER_PODS_GO_JSON_H_
