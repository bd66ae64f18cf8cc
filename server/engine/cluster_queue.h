// The engine's runtime view of one ClusterQueue: its resource groups and nominal quota parsed
// from the spec, the usage of the workloads holding reservations in it, and its queue of pending
// workloads ordered as Kueue orders them (§5.2: priority, then queue-order time, then UID).
//
// Thread safety: none; owned by the Engine.
#ifndef ADMITD_SERVER_ENGINE_CLUSTER_QUEUE_H_
#define ADMITD_SERVER_ENGINE_CLUSTER_QUEUE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "admitd/v1/queue_service.pb.h"
#include "server/engine/pending_queue.h"
#include "server/engine/resources.h"

namespace admitd::engine {

struct WorkloadEntry;

struct ResourceGroupQuota {
  std::vector<std::string> resources;  // covered, in spec order
  std::vector<std::string> flavors;    // tried in this order
};

struct ClusterQueueState {
  v1::QueueObject object;  // the stored ClusterQueue (status is computed on read)

  // Derived from the spec by Rebuild().
  std::vector<ResourceGroupQuota> groups;
  std::map<std::string, int> group_of;  // resource -> index in groups
  FlavorResourceQuantities nominal;
  bool strict_fifo = false;

  // Why the queue cannot admit (reason for the Active condition); empty when active.
  std::string inactive_reason;
  std::string inactive_message;

  // Usage of the workloads holding a reservation here (what lands in the cohort is in the
  // QuotaTree).
  FlavorResourceAmounts usage;
  int reserving = 0;
  int admitted = 0;
  // Workloads holding a reservation here, in namespace/name order, keyed by the entry's own key
  // (entries of the engine's workload map and their keys never move): no key is copied.
  struct ByKeyText {
    bool operator()(const std::string* a, const std::string* b) const { return *a < *b; }
  };
  std::map<const std::string*, WorkloadEntry*, ByKeyText> reserved;

  // Pending workloads: active ones give heads; inadmissible ones wait for a requeue event.
  PendingQueue pending;
  // BestEffortFIFO: the workload that issued preemptions stays the head until it leaves the
  // queue (§5.2), so workloads skipped meanwhile cannot overtake it.
  std::string sticky;
  // Pending workloads waiting out a requeue backoff (namespace/name): outside the heap, but
  // pending here all the same.
  std::set<std::string> backing_off;

  const v1::ClusterQueue& spec_object() const { return object.cluster_queue(); }
  const std::string& name() const { return object.cluster_queue().metadata().name(); }
  bool active() const { return inactive_reason.empty(); }

  // Re-derives groups and quotas from the spec (quantities must be valid).
  void Rebuild();
  // Whether a namespace with these labels passes spec.namespaceSelector, as Kubernetes evaluates
  // a label selector: matchLabels and every matchExpression must hold (NotIn also holds for a
  // missing key); an empty selector selects every namespace, an unset one none.
  bool SelectsNamespace(const google::protobuf::Map<std::string, std::string>& labels) const;
  // Whether spec.namespaceSelector is set and empty: every namespace passes, whatever its labels.
  bool SelectsEveryNamespace() const {
    const v1::ClusterQueueSpec& spec = object.cluster_queue().spec();
    return spec.has_namespace_selector() && spec.namespace_selector().match_labels().empty() &&
           spec.namespace_selector().match_expressions().empty();
  }
};

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_CLUSTER_QUEUE_H_
