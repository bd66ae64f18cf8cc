#include "server/pods/go_json.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace admitd::pods {

GoJsonValue GoJsonValue::Bool(bool b) {
  GoJsonValue v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

GoJsonValue GoJsonValue::Int(int64_t n) {
  GoJsonValue v;
  v.kind_ = Kind::kNumber;
  v.number_ = n;
  return v;
}

GoJsonValue GoJsonValue::String(absl::string_view s) {
  GoJsonValue v;
  v.kind_ = Kind::kString;
  v.string_ = std::string(s);
  return v;
}

GoJsonValue GoJsonValue::Array() {
  GoJsonValue v;
  v.kind_ = Kind::kArray;
  return v;
}

GoJsonValue GoJsonValue::Struct() {
  GoJsonValue v;
  v.kind_ = Kind::kStruct;
  return v;
}

GoJsonValue GoJsonValue::Map() {
  GoJsonValue v;
  v.kind_ = Kind::kMap;
  return v;
}

GoJsonValue& GoJsonValue::Push(GoJsonValue v) {
  elements_.push_back(std::move(v));
  return elements_.back();
}

GoJsonValue& GoJsonValue::Set(absl::string_view key, GoJsonValue v) {
  for (auto& [k, existing] : members_) {
    if (k == key) {
      existing = std::move(v);
      return existing;
    }
  }
  members_.emplace_back(std::string(key), std::move(v));
  return members_.back().second;
}

std::string GoJsonValue::Serialize() const {
  std::string out;
  AppendTo(&out);
  return out;
}

void GoJsonValue::AppendTo(std::string* out) const {
  switch (kind_) {
    case Kind::kNull:
      out->append("null");
      return;
    case Kind::kBool:
      out->append(bool_ ? "true" : "false");
      return;
    case Kind::kNumber:
      absl::StrAppend(out, number_);
      return;
    case Kind::kString:
      AppendGoJsonString(string_, out);
      return;
    case Kind::kArray: {
      out->push_back('[');
      for (size_t i = 0; i < elements_.size(); ++i) {
        if (i > 0) out->push_back(',');
        elements_[i].AppendTo(out);
      }
      out->push_back(']');
      return;
    }
    case Kind::kStruct:
    case Kind::kMap: {
      std::vector<const std::pair<std::string, GoJsonValue>*> order;
      order.reserve(members_.size());
      for (const auto& m : members_) order.push_back(&m);
      if (kind_ == Kind::kMap) {
        std::sort(order.begin(), order.end(),
                  [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out->push_back('{');
      for (size_t i = 0; i < order.size(); ++i) {
        if (i > 0) out->push_back(',');
        AppendGoJsonString(order[i]->first, out);
        out->push_back(':');
        order[i]->second.AppendTo(out);
      }
      out->push_back('}');
      return;
    }
  }
}

namespace {

constexpr char kHex[] = "0123456789abcdef";


}  // namespace

void AppendGoJsonString(absl::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\b': out->append("\\b"); break;
        case '\f': out->append("\\f"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out->append("\\u00");
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 0xF]);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    const size_t n = DecodeUtf8(s, i, &rune);
    if (n == 0) {
      out->append("\\ufffd");
      ++i;
      continue;
    }
    if (rune == 0x2028 || rune == 0x2029) {
      out->append(rune == 0x2028 ? "\\u2028" : "\\u2029");
    } else {
      out->append(s.data() + i, n);
    }
    i += n;
  }
  out->push_back('"');
}

std::string GoJsonString(absl::string_view s) {
  std::string out;
  AppendGoJsonString(s, &out);
  return out;
}

}  // namespace admitd::pods
