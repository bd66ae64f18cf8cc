// An informer for the cluster shim: a local cache of one Kubernetes collection kept current by
// listing it, then watching from the list's resourceVersion (with bookmarks), re-watching from
// the last version seen when a stream ends, and listing again when that version has expired
// (410). A handler sees every change applied to the cache.
//
//   Informer pods(kube, "/api/v1/namespaces/default/pods", [](const std::string& type,
//                                                              const nlohmann::json& pod) {...});
//   std::thread t([&] { pods.Run(); });  ...  pods.Stop(); t.join();
//
// Thread safety: Run on one thread; Stop, Get, Size and the counters from any.
#ifndef ADMITD_CLIENTS_SHIM_KUBE_INFORMER_H_
#define ADMITD_CLIENTS_SHIM_KUBE_INFORMER_H_

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/shim/framework/interfaces.h"
#include "clients/shim/kube/kube_client.h"

namespace admitd::shim {

class Informer : public ObjectCache {
 public:
  // `type` is ADDED, MODIFIED or DELETED; a relist reports what it found changed that way too.
  using Handler = std::function<void(const std::string& type, const nlohmann::json& object)>;

  Informer(const KubeClient& client, std::string collection_path, Handler handler = nullptr,
           int watch_timeout_seconds = 300);

  // Lists the collection into the cache and remembers the list's resourceVersion.
  absl::Status List();
  // One watch from the last version seen, applied to the cache, until the server ends it or
  // Stop. A 410 lists again. Returns what ended it.
  absl::Status WatchOnce();
  // List, then watch again and again, until Stop; errors are retried after a backoff (1 s
  // doubling to 30 s).
  void Run();
  void Stop();

  // "namespace/name" or "name".
  std::optional<nlohmann::json> Get(const std::string& key) const override;
  // The cached objects `keep` accepts (a scan of the cache).
  std::vector<nlohmann::json> Select(
      const std::function<bool(const nlohmann::json&)>& keep) const override;
  // The cached objects whose controller owner has `uid` (an index kept with the cache).
  std::vector<nlohmann::json> ControlledBy(const std::string& uid) const override;
  // Keeps an index by label `key` (client-go's Indexers): Labelled answers from it rather than
  // by a scan. Before Run or List only.
  void IndexLabel(std::string key);
  std::vector<nlohmann::json> Labelled(const std::string& ns, const std::string& key,
                                       const std::string& value) const override;
  // The keys of every cached object.
  std::vector<std::string> Keys() const override;
  size_t Size() const;
  std::string resource_version() const;
  int lists() const { return lists_.load(); }
  // Whether the last List found no such collection (404: a custom resource whose definition is
  // not installed); Run keeps trying, so the collection is picked up once it is served.
  bool missing() const { return missing_.load(); }

 private:
  void Apply(const std::string& type, const nlohmann::json& object);
  // Adds `object` (cached under `key`) to the indexes, or removes it.
  void Index(const std::string& key, const nlohmann::json& object, bool add)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::string LabelIndexKey(const std::string& label, const std::string& ns,
                                   const std::string& value);

  const KubeClient& client_;
  const std::string path_;
  const Handler handler_;
  const int watch_timeout_seconds_;
  std::atomic<bool> stopped_{false};
  std::atomic<int> lists_{0};
  std::atomic<bool> missing_{false};
  mutable absl::Mutex mu_;
  std::map<std::string, nlohmann::json> cache_ ABSL_GUARDED_BY(mu_);
  // Controller owner uid -> the keys of the cached objects it controls.
  std::map<std::string, std::set<std::string>> by_controller_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> indexed_labels_;  // set before the cache fills
  // "<label>=<namespace>/<value>" -> the keys of the cached objects with that label value.
  std::map<std::string, std::set<std::string>> by_label_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
};

// "namespace/name", or "name" for a cluster-scoped object.
std::string ObjectKey(const nlohmann::json& object);

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_KUBE_INFORMER_H_
