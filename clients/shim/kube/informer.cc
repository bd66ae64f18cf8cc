#include "clients/shim/kube/informer.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {
namespace {

// The uid of the object's controller owner reference, "" when it has none.
std::string ControllerUid(const nlohmann::json& object) {
  const nlohmann::json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (!refs.is_array()) return "";
  for (const nlohmann::json& ref : refs) {
    if (ref.is_object() && ref.value("controller", false)) return Str(ref, "uid");
  }
  return "";
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  const nlohmann::json& meta = object.value("metadata", nlohmann::json::object());
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

Informer::Informer(const KubeClient& client, std::string collection_path, Handler handler,
                   int watch_timeout_seconds)
    : client_(client),
      path_(std::move(collection_path)),
      handler_(std::move(handler)),
      watch_timeout_seconds_(watch_timeout_seconds) {}

absl::Status Informer::List() {
  absl::StatusOr<nlohmann::json> list = client_.Get(path_);
  missing_.store(!list.ok() && list.status().code() == absl::StatusCode::kNotFound);
  if (!list.ok()) return list.status();
  ++lists_;
  std::map<std::string, nlohmann::json> fresh;
  // A list's items carry no apiVersion and kind (the list has them): add them, so that cached
  // objects look the same however they arrived.
  std::string kind = list->value("kind", "");
  if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) kind.resize(kind.size() - 4);
  const std::string api_version = list->value("apiVersion", "");
  for (nlohmann::json& item : (*list)["items"]) {
    if (!item.contains("kind") && !kind.empty()) item["kind"] = kind;
    if (!item.contains("apiVersion") && !api_version.empty()) item["apiVersion"] = api_version;
    std::string key = ObjectKey(item);  // before the move (the right side is evaluated first)
    fresh[std::move(key)] = std::move(item);
  }
  std::vector<std::pair<std::string, nlohmann::json>> changes;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, obj] : cache_) {
      if (!fresh.count(key)) changes.emplace_back("DELETED", obj);
    }
    for (const auto& [key, obj] : fresh) {
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        changes.emplace_back("ADDED", obj);
      } else if (it->second != obj) {
        changes.emplace_back("MODIFIED", obj);
      }
    }
    cache_ = std::move(fresh);
    by_controller_.clear();
    for (const auto& [key, obj] : cache_) {
      if (std::string uid = ControllerUid(obj); !uid.empty()) by_controller_[uid].insert(key);
    }
    resource_version_ = list->value("metadata", nlohmann::json::object())
                            .value("resourceVersion", "");
  }
  if (handler_) {
    for (const auto& [type, obj] : changes) handler_(type, obj);
  }
  return absl::OkStatus();
}

void Informer::Apply(const std::string& type, const nlohmann::json& object) {
  const std::string rv =
      object.value("metadata", nlohmann::json::object()).value("resourceVersion", "");
  {
    absl::MutexLock lock(&mu_);
    if (!rv.empty()) resource_version_ = rv;
    if (type == "BOOKMARK") return;
    const std::string key = ObjectKey(object);
    if (auto it = cache_.find(key); it != cache_.end()) {
      if (std::string uid = ControllerUid(it->second); !uid.empty()) {
        auto entry = by_controller_.find(uid);
        entry->second.erase(key);
        if (entry->second.empty()) by_controller_.erase(entry);
      }
    }
    if (type == "DELETED") {
      cache_.erase(key);
    } else {
      cache_[key] = object;
      if (std::string uid = ControllerUid(object); !uid.empty()) by_controller_[uid].insert(key);
    }
  }
  if (handler_) handler_(type, object);
}

absl::Status Informer::WatchOnce() {
  absl::Status s = client_.Watch(path_, resource_version(), watch_timeout_seconds_,
                                 [this](const WatchEvent& e) {
                                   if (stopped_.load()) return false;
                                   Apply(e.type, e.object);
                                   return true;
                                 },
                                 &stopped_);
  if (s.code() == absl::StatusCode::kOutOfRange) return List();  // 410 Expired: start over
  return s;
}

void Informer::Run() {
  absl::Duration backoff = absl::Seconds(1);
  bool listed = lists_.load() > 0;  // a List before Run is watched from
  while (!stopped_.load()) {
    absl::Status s = listed ? WatchOnce() : List();
    if (s.ok()) {
      listed = true;
      backoff = absl::Seconds(1);
      continue;
    }
    // Sleep in short steps so that Stop is prompt.
    for (absl::Time until = absl::Now() + backoff; absl::Now() < until && !stopped_.load();) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    backoff = std::min(backoff * 2, absl::Seconds(30));
  }
}

void Informer::Stop() { stopped_.store(true); }

std::optional<nlohmann::json> Informer::Get(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<nlohmann::json> Informer::Select(
    const std::function<bool(const nlohmann::json&)>& keep) const {
  std::vector<nlohmann::json> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, obj] : cache_) {
    if (keep(obj)) out.push_back(obj);
  }
  return out;
}

std::vector<nlohmann::json> Informer::ControlledBy(const std::string& uid) const {
  std::vector<nlohmann::json> out;
  absl::MutexLock lock(&mu_);
  auto it = by_controller_.find(uid);
  if (it == by_controller_.end()) return out;
  for (const std::string& key : it->second) out.push_back(cache_.at(key));
  return out;
}

std::vector<std::string> Informer::Keys() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, obj] : cache_) out.push_back(key);
  return out;
}

size_t Informer::Size() const {
  absl::MutexLock lock(&mu_);
  return cache_.size();
}

std::string Informer::resource_version() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

}  // namespace admitd::shim
