// Feeds admitd the cluster's namespaces and their labels (QueueService Namespace objects), so
// that ClusterQueue namespaceSelectors on labels decide as they do in Kueue: a namespace added or
// relabelled is applied, a deleted one is deleted. Applies only what changed since the last
// apply (admitd answers `unchanged` otherwise anyway); one that admitd lost while the cluster still
// has it is applied again once the caller Forgets it.
//
//   NamespaceSync sync(link, namespaces_informer);
//   absl::Status s = sync.Sync("team-a");  // error: retry later
//
// Thread safety: Sync from any thread (one name at a time per name, as a WorkQueue hands them).
#ifndef ADMITD_CLIENTS_SHIM_NAMESPACE_SYNC_H_
#define ADMITD_CLIENTS_SHIM_NAMESPACE_SYNC_H_

#include <atomic>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/informer.h"

namespace admitd::shim {

class NamespaceSync {
 public:
  NamespaceSync(AdmitdLink& admitd, const Informer& namespaces)
      : admitd_(admitd), namespaces_(namespaces) {}

  // Makes admitd's Namespace `name` what the cluster has: its labels, or gone.
  absl::Status Sync(const std::string& name);
  // Forgets what was applied for `name`, so the next Sync applies it even if the labels are the
  // same (admitd lost it: another cluster's shim deleted it).
  void Forget(const std::string& name);

  int64_t applied() const { return applied_count_.load(); }
  int64_t deleted() const { return deleted_count_.load(); }

 private:
  AdmitdLink& admitd_;
  const Informer& namespaces_;
  absl::Mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> applied_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> applied_count_{0}, deleted_count_{0};
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_NAMESPACE_SYNC_H_
