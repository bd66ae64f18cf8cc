// The YAML walker behind manifest.cc: visits mappings and lists while tracking the field path,
// and collects "where: path: problem" errors. Internal to clients/.
#ifndef ADMITD_COMMON_MANIFEST_MANIFEST_WALKER_H_
#define ADMITD_COMMON_MANIFEST_MANIFEST_WALKER_H_

#include <yaml-cpp/yaml.h>

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "admitd/v1/objects.pb.h"

namespace admitd::manifest {

// Collects errors for one document, each prefixed with where it happened.
class Walker {
 public:
  explicit Walker(std::string where) : where_(std::move(where)) {}
  void Error(const std::string& path, const std::string& what) {
    errors_.push_back(absl::StrCat(where_, ": ", path, ": ", what));
    problems_.push_back({path, what});
  }
  std::vector<std::string>& errors() { return errors_; }
  // The same problems as (field path, what is wrong).
  const std::vector<std::pair<std::string, std::string>>& problems() const { return problems_; }
  void set_where(std::string where) { where_ = std::move(where); }

  // Visits a mapping: `handlers` take known keys; `ignored` keys are accepted silently.
  using Handler = std::function<void(const YAML::Node&, const std::string&)>;
  void Map(const YAML::Node& node, const std::string& path,
           const std::map<std::string, Handler>& handlers,
           const std::set<std::string>& ignored = {}) {
    if (!node || node.IsNull()) return;
    if (!node.IsMap()) {
      Error(path, "must be a mapping");
      return;
    }
    for (const auto& kv : node) {
      // A key that is a list or a mapping ({[a]: b}) names no field; as<std::string>() would
      // throw on it.
      if (!kv.first.IsScalar()) {
        Error(path, "keys must be strings");
        continue;
      }
      const std::string key = kv.first.Scalar();
      const std::string child = path.empty() ? key : absl::StrCat(path, ".", key);
      auto it = handlers.find(key);
      if (it != handlers.end()) {
        it->second(kv.second, child);
      } else if (ignored.count(key) == 0) {
        Error(child, "unknown field");
      }
    }
  }

  void List(const YAML::Node& node, const std::string& path,
            const std::function<void(const YAML::Node&, const std::string&)>& item) {
    if (!node || node.IsNull()) return;
    if (!node.IsSequence()) {
      Error(path, "must be a list");
      return;
    }
    for (size_t i = 0; i < node.size(); ++i) item(node[i], absl::StrCat(path, "[", i, "]"));
  }

  bool Scalar(const YAML::Node& node, const std::string& path, std::string* out) {
    if (!node.IsScalar()) {
      Error(path, "must be a scalar value");
      return false;
    }
    *out = node.Scalar();
    return true;
  }
  std::string Str(const YAML::Node& node, const std::string& path) {
    std::string out;
    Scalar(node, path, &out);
    return out;
  }
  bool Int(const YAML::Node& node, const std::string& path, int64_t* out) {
    try {
      if (node.IsScalar()) {
        *out = node.as<int64_t>();
        return true;
      }
    } catch (const YAML::Exception&) {
    }
    Error(path, absl::StrCat("must be an integer"));
    return false;
  }
  // An RFC 3339 time into `out`; an error at `path` when it is not one.
  void Time(const YAML::Node& node, const std::string& path, google::protobuf::Timestamp* out) {
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, Str(node, path), &t, &err)) {
      Error(path, absl::StrCat("invalid RFC 3339 time: ", err));
      return;
    }
    const int64_t nanos = absl::ToUnixNanos(t);
    out->set_seconds(nanos / 1000000000);
    out->set_nanos(static_cast<int32_t>(nanos % 1000000000));
  }
  // An int32 API field: a value outside int32's range is an error, never truncated.
  bool Int32(const YAML::Node& node, const std::string& path, int32_t* out) {
    int64_t v;
    if (!Int(node, path, &v)) return false;
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      Error(path, absl::StrCat("must be a 32-bit integer (", v, ")"));
      return false;
    }
    *out = static_cast<int32_t>(v);
    return true;
  }
  bool Bool(const YAML::Node& node, const std::string& path, bool* out) {
    try {
      if (node.IsScalar()) {
        *out = node.as<bool>();
        return true;
      }
    } catch (const YAML::Exception&) {
    }
    Error(path, "must be true or false");
    return false;
  }
  void StringMap(const YAML::Node& node, const std::string& path,
                 google::protobuf::Map<std::string, std::string>* out) {
    if (!node || node.IsNull()) return;
    if (!node.IsMap()) {
      Error(path, "must be a mapping");
      return;
    }
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        Error(path, "keys must be strings");
        continue;
      }
      const std::string key = kv.first.Scalar();
      std::string value;
      if (Scalar(kv.second, absl::StrCat(path, ".", key), &value)) (*out)[key] = value;
    }
  }
  void StringList(const YAML::Node& node, const std::string& path,
                  google::protobuf::RepeatedPtrField<std::string>* out) {
    List(node, path, [&](const YAML::Node& n, const std::string& p) {
      std::string v;
      if (Scalar(n, p, &v)) *out->Add() = v;
    });
  }

 private:
  std::string where_;
  std::vector<std::string> errors_;
  std::vector<std::pair<std::string, std::string>> problems_;
};

// Parses a Workload's status: its admission and conditions (for import); the rest is ignored.
void WorkloadStatus(Walker& w, const YAML::Node& node, const std::string& path,
                    v1::WorkloadStatus* status);

// Parses a Workload's spec (manifest_workload.cc).
void WorkloadSpec(Walker& w, const YAML::Node& node, const std::string& path,
                  v1::WorkloadSpec* spec);

}  // namespace admitd::manifest

#endif  // ADMITD_COMMON_MANIFEST_MANIFEST_WALKER_H_
