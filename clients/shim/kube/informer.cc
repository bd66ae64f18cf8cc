#include "clients/shim/kube/informer.h"

#include "absl/strings/str_cat.h"

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
    by_label_.clear();
    for (const auto& [key, obj] : cache_) Index(key, obj, /*add=*/true);
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
    if (auto it = cache_.find(key); it != cache_.end()) Index(key, it->second, /*add=*/false);
    if (type == "DELETED") {
      cache_.erase(key);
    } else {
      cache_[key] = object;
      Index(key, object, /*add=*/true);
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

void Informer::IndexLabel(std::string key) { indexed_labels_.push_back(std::move(key)); }

std::vector<nlohmann::json> Informer::Labelled(const std::string& ns, const std::string& key,
                                               const std::string& value) const {
  if (std::find(indexed_labels_.begin(), indexed_labels_.end(), key) == indexed_labels_.end()) {
    return ObjectCache::Labelled(ns, key, value);  // a scan
  }
  std::vector<nlohmann::json> out;
  absl::MutexLock lock(&mu_);
  auto it = by_label_.find(LabelIndexKey(key, ns, value));
  if (it == by_label_.end()) return out;
  for (const std::string& k : it->second) out.push_back(cache_.at(k));
  return out;
}

void Informer::Index(const std::string& key, const nlohmann::json& object, bool add) {
  auto update = [&](std::map<std::string, std::set<std::string>>& index, std::string value) {
    if (add) {
      index[std::move(value)].insert(key);
      return;
    }
    auto entry = index.find(value);
    if (entry == index.end()) return;
    entry->second.erase(key);
    if (entry->second.empty()) index.erase(entry);
  };
  if (std::string uid = ControllerUid(object); !uid.empty()) update(by_controller_, uid);
  if (indexed_labels_.empty()) return;
  const nlohmann::json& meta = Field(object, "metadata");
  const nlohmann::json& labels = Field(meta, "labels");
  for (const std::string& label : indexed_labels_) {
    if (std::string value = Str(labels, label); !value.empty()) {
      update(by_label_, LabelIndexKey(label, Str(meta, "namespace"), value));
    }
  }
}

std::string Informer::LabelIndexKey(const std::string& label, const std::string& ns,
                                    const std::string& value) {
  return absl::StrCat(label, "=", ns, "/", value);
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
