// The Job webhook's view of admitd and the cluster (a JobWebhookContext): whether the namespace's
// `default` LocalQueue and the `default` WorkloadPriorityClass exist and whether a LocalQueue
// feeds a MultiKueue ClusterQueue, asked of admitd's
// QueueService (Get; NOT_FOUND means no) and remembered for a few seconds so a burst of Job
// creations costs one call, and which namespaces are managed: all but an excluded list
// (`--managed-namespaces-exclude`, kube-system by default), standing in for Kueue's
// managedJobsNamespaceSelector.
//
//   AdmitdWebhookContext context(link.queues(), {.excluded_namespaces = {"kube-system"}});
//   WebhookServer server(":9443", cert_dir, context, {});
//
// An answer other than found or NOT_FOUND (admitd unreachable, a deadline) counts as "does not
// exist" and is not remembered: the Job is left as Kueue leaves it when its lookup fails.
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_CLIENTS_SHIM_WEBHOOK_ADMITD_WEBHOOK_CONTEXT_H_
#define ADMITD_CLIENTS_SHIM_WEBHOOK_ADMITD_WEBHOOK_CONTEXT_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "admitd/v1/queue_service.grpc.pb.h"
#include "clients/shim/webhook/webhook_context.h"

namespace admitd::shim {

struct AdmitdWebhookContextOptions {
  // How long an answer from admitd is reused.
  absl::Duration cache_ttl = absl::Seconds(5);
  // The deadline of one Get.
  absl::Duration rpc_timeout = absl::Seconds(2);
  // Namespaces whose Jobs are not managed.
  std::vector<std::string> excluded_namespaces = {"kube-system"};
  // The clock (tests inject one).
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

class AdmitdWebhookContext : public JobWebhookContext {
 public:
  // `queues` must outlive the context.
  explicit AdmitdWebhookContext(v1::QueueService::StubInterface& queues,
                                AdmitdWebhookContextOptions options = {});

  bool DefaultLocalQueueExists(const std::string& ns) override;
  bool DefaultPriorityClassExists() override;
  bool NamespaceManaged(const std::string& ns) override;
  // LocalQueue → ClusterQueue → its AdmissionChecks' controllers, remembered like the rest.
  bool LocalQueueUsesMultiKueue(const std::string& ns, const std::string& name) override;

  // The list of a `--managed-namespaces-exclude` flag: comma-separated names, blanks dropped.
  static std::vector<std::string> ParseNamespaceList(const std::string& flag);

 private:
  // Whether admitd has the object, from the cache when the answer is recent enough.
  bool Exists(v1::ObjectKind kind, const std::string& ns, const std::string& name);
  grpc::Status Fetch(v1::ObjectKind kind, const std::string& ns, const std::string& name,
                     v1::QueueObject* object);
  // The cached answer for `key`, if recent enough.
  std::optional<bool> Remembered(const std::tuple<int, std::string, std::string>& key);

  v1::QueueService::StubInterface& queues_;
  const AdmitdWebhookContextOptions options_;
  const std::set<std::string> excluded_;

  struct Answer {
    bool exists = false;
    absl::Time at;
  };
  absl::Mutex mu_;
  // (kind, namespace, name) -> the last answer.
  std::map<std::tuple<int, std::string, std::string>, Answer> answers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_WEBHOOK_ADMITD_WEBHOOK_CONTEXT_H_
