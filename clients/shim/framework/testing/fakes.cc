#include "clients/shim/framework/testing/fakes.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim::testing {
namespace {

std::string StripStatus(const std::string& path) {
  return absl::EndsWith(path, "/status") ? path.substr(0, path.size() - 7) : path;
}

std::string KeyOf(const nlohmann::json& object) {
  const nlohmann::json& meta = Field(object, "metadata");
  const std::string ns = Str(meta, "namespace");
  return ns.empty() ? Str(meta, "name") : ns + "/" + Str(meta, "name");
}

}  // namespace

// --- FakeKube ---

void FakeKube::Put(const std::string& path, nlohmann::json object) {
  absl::MutexLock lock(&mu_);
  nlohmann::json& meta = object["metadata"];
  meta["resourceVersion"] = absl::StrCat(++version_);
  if (Str(meta, "uid").empty()) meta["uid"] = absl::StrCat("uid-", version_);
  objects_[path] = std::move(object);
}

std::optional<nlohmann::json> FakeKube::Object(const std::string& path) const {
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(path);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> FakeKube::Paths() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [path, object] : objects_) out.push_back(path);
  return out;
}

std::vector<FakeKube::Write> FakeKube::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

void FakeKube::ClearWrites() {
  absl::MutexLock lock(&mu_);
  writes_.clear();
}

void FakeKube::FailNext(const std::string& path, absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_[path] = std::move(status);
}

absl::Status FakeKube::Injected(const std::string& path) const {
  auto it = fail_.find(path);
  if (it == fail_.end()) return absl::OkStatus();
  absl::Status s = it->second;
  fail_.erase(it);
  return s;
}

absl::StatusOr<nlohmann::json> FakeKube::Get(const std::string& path) const {
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(path);
  if (it == objects_.end()) return absl::NotFoundError(absl::StrCat(path, " not found"));
  return it->second;
}

absl::StatusOr<nlohmann::json> FakeKube::Create(const std::string& path,
                                                const nlohmann::json& body) const {
  absl::MutexLock lock(&mu_);
  writes_.push_back({"CREATE", path, body});
  if (absl::Status s = Injected(path); !s.ok()) return s;
  const std::string at = absl::StrCat(path, "/", Str(Field(body, "metadata"), "name"));
  if (objects_.count(at)) return absl::AlreadyExistsError(absl::StrCat(at, " already exists"));
  nlohmann::json object = body;
  object["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  object["metadata"]["uid"] = absl::StrCat("uid-", version_);
  objects_[at] = object;
  return object;
}

absl::StatusOr<nlohmann::json> FakeKube::Update(const std::string& path,
                                                const nlohmann::json& body) const {
  absl::MutexLock lock(&mu_);
  writes_.push_back({"UPDATE", path, body});
  if (absl::Status s = Injected(path); !s.ok()) return s;
  auto it = objects_.find(StripStatus(path));
  if (it == objects_.end()) return absl::NotFoundError(absl::StrCat(path, " not found"));
  const std::string rv = Str(Field(body, "metadata"), "resourceVersion");
  if (!rv.empty() && rv != Str(it->second["metadata"], "resourceVersion")) {
    return absl::AbortedError("the object has been modified");
  }
  it->second = body;
  it->second["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  return it->second;
}

absl::StatusOr<nlohmann::json> FakeKube::Patch(const std::string& path,
                                               const nlohmann::json& body,
                                               const std::string& content_type) const {
  absl::MutexLock lock(&mu_);
  writes_.push_back({"PATCH", path, body});
  if (absl::Status s = Injected(path); !s.ok()) return s;
  if (content_type != "application/merge-patch+json") {
    return absl::InvalidArgumentError(absl::StrCat("unsupported patch type ", content_type));
  }
  auto it = objects_.find(StripStatus(path));
  if (it == objects_.end()) return absl::NotFoundError(absl::StrCat(path, " not found"));
  const std::string rv = Str(Field(body, "metadata"), "resourceVersion");
  if (!rv.empty() && rv != Str(it->second["metadata"], "resourceVersion")) {
    return absl::AbortedError("the object has been modified");
  }
  it->second.merge_patch(body);
  it->second["metadata"]["resourceVersion"] = absl::StrCat(++version_);
  return it->second;
}

absl::StatusOr<nlohmann::json> FakeKube::Delete(const std::string& path) const {
  return DeleteUid(path, "");
}

absl::StatusOr<nlohmann::json> FakeKube::DeleteUid(const std::string& path,
                                                   const std::string& uid,
                                                   const std::string& propagation) const {
  absl::MutexLock lock(&mu_);
  writes_.push_back({"DELETE", path, {{"uid", uid}, {"propagationPolicy", propagation}}});
  if (absl::Status s = Injected(path); !s.ok()) return s;
  auto it = objects_.find(path);
  if (it == objects_.end()) return absl::NotFoundError(absl::StrCat(path, " not found"));
  if (!uid.empty() && Str(it->second["metadata"], "uid") != uid) {
    return absl::AbortedError("the UID in the precondition does not match");
  }
  nlohmann::json gone = std::move(it->second);
  objects_.erase(it);
  return gone;
}

// --- FakeCache ---

FakeCache::FakeCache(const FakeKube& kube, std::string collection)
    : kube_(kube), collection_(std::move(collection)) {}

void FakeCache::Sync() {
  std::map<std::string, nlohmann::json> fresh;
  // The collection's objects: /<root>/namespaces/<ns>/<resource>/<name>, or with a label
  // selector, every object whose path has the collection's resource.
  const std::string prefix = collection_.substr(0, collection_.find('?'));
  const std::string resource = prefix.substr(prefix.rfind('/') + 1);
  const std::string root = prefix.substr(0, prefix.rfind('/'));
  for (const std::string& path : kube_.Paths()) {
    if (!absl::StartsWith(path, root + "/namespaces/")) continue;
    const std::string rest = path.substr(root.size() + 12);  // "<ns>/<resource>/<name>"
    const size_t a = rest.find('/'), b = rest.find('/', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    if (rest.substr(a + 1, b - a - 1) != resource || rest.find('/', b + 1) != std::string::npos) {
      continue;
    }
    std::optional<nlohmann::json> object = kube_.Object(path);
    if (!object) continue;
    std::string key = KeyOf(*object);  // before the move: `=` evaluates its right side first
    fresh[std::move(key)] = *std::move(object);
  }
  absl::MutexLock lock(&mu_);
  objects_ = std::move(fresh);
}

std::optional<nlohmann::json> FakeCache::Get(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<nlohmann::json> FakeCache::Select(
    const std::function<bool(const nlohmann::json&)>& keep) const {
  std::vector<nlohmann::json> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, object] : objects_) {
    if (keep(object)) out.push_back(object);
  }
  return out;
}

std::vector<nlohmann::json> FakeCache::ControlledBy(const std::string& uid) const {
  return Select([&](const nlohmann::json& object) {
    const nlohmann::json& refs = Field(Field(object, "metadata"), "ownerReferences");
    if (!refs.is_array()) return false;
    for (const nlohmann::json& ref : refs) {
      if (ref.value("controller", false) && Str(ref, "uid") == uid) return true;
    }
    return false;
  });
}

std::vector<std::string> FakeCache::Keys() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, object] : objects_) out.push_back(key);
  return out;
}

// --- FakeEvents ---

void FakeEvents::Record(const nlohmann::json& object, const std::string& type,
                        const std::string& reason, const std::string& message,
                        const std::string& component) {
  absl::MutexLock lock(&mu_);
  events_.push_back({KeyOf(object), type, reason, message, component});
}

std::vector<FakeEvents::Event> FakeEvents::events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

std::vector<std::string> FakeEvents::reasons() const {
  std::vector<std::string> out;
  for (const Event& e : events()) out.push_back(e.reason);
  return out;
}

void FakeEvents::Clear() {
  absl::MutexLock lock(&mu_);
  events_.clear();
}

}  // namespace admitd::shim::testing
