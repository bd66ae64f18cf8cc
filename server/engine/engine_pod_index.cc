// Engine: which Workload each reported pod belongs to. A group's pods share the group's
// Workload; a single pod's is the Workload it owns (found by owner reference, as Kueue finds a
// job's Workloads) or else the one named after it. Also the helpers the pod files share
// (engine_pods_internal.h) and the pod index restored after a restart.
#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/engine/engine_impl.h"
#include "server/engine/engine_pods_internal.h"
#include "server/pods/elastic_pods.h"
#include "server/pods/multikueue_pods.h"
#include "server/pods/pod_group.h"

namespace admitd::engine {

namespace pod_workloads {

std::string PodKey(const std::string& cluster, const std::string& ns, const std::string& name) {
  return absl::StrCat(cluster, "/", ns, "/", name);
}

bool IsPodWorkload(const v1::Workload& wl) {
  const auto& labels = wl.metadata().labels();
  return !labels.empty() && labels.count(kPodClusterLabel) != 0;  // no key built without labels
}

bool IsGroupWorkload(const v1::Workload& wl) {
  auto it = wl.metadata().annotations().find(kIsGroupWorkloadAnnotation);
  return it != wl.metadata().annotations().end() && it->second == "true";
}

// §14.3: whether the pods made this Workload: it is made of reported pods and, for a group, is
// a pod group Workload. Kueue never adopts another controller's Workload.
bool OwnsWorkload(const v1::Workload& wl, bool is_group) {
  return IsPodWorkload(wl) && (!is_group || IsGroupWorkload(wl));
}

// What pods do with a Workload of their name that is not theirs: they stay gated, inactive ones
// are finalized, and a group gets MatchGroupWorkload's WorkloadNameConflict event.
pods::GroupMatch NameConflict(const std::vector<v1::PodObservation>& pods, const v1::Workload& wl,
                              bool is_group, absl::Time now, const pods::PodOptions& options) {
  if (is_group) {
    // Whatever its annotations say, the Workload is foreign to these pods: match it as one.
    v1::Workload probe = wl;
    probe.mutable_metadata()->mutable_annotations()->erase(kIsGroupWorkloadAnnotation);
    absl::StatusOr<pods::GroupMatch> match =
        pods::MatchGroupWorkload(pods, probe, /*workload_finished=*/false, now, options);
    if (match.ok() && match->name_conflict) return *std::move(match);
  }
  pods::GroupMatch conflict;
  conflict.name_conflict = true;
  for (const v1::PodObservation& p : pods) {
    if (!pods::IsRunnableOrSucceeded(p) && pods::HasManagedFinalizer(p)) {
      conflict.finalize.push_back(p.name());
    }
  }
  return conflict;
}

bool IsOwnedByPod(const v1::Workload& wl, const v1::PodObservation& pod) {
  for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
    if (o.kind() == "Pod" && o.uid() == pod.uid() && o.name() == pod.name()) return true;
  }
  return false;
}

// The cluster whose pods made a pod Workload.
const std::string& ClusterOf(const v1::Workload& wl) {
  return wl.metadata().labels().at(kPodClusterLabel);
}

// Moves the pods of clusters other than `cluster` out of `pods` and returns them: a Workload is
// made of one cluster's pods, and another cluster's same-named group does not join it.
std::vector<v1::PodObservation> TakeOtherClusters(std::vector<v1::PodObservation>* pods,
                                                  const std::string& cluster) {
  std::vector<v1::PodObservation> others;
  auto own_end = std::stable_partition(pods->begin(), pods->end(), [&](const v1::PodObservation& p) {
    return p.cluster() == cluster;
  });
  std::move(own_end, pods->end(), std::back_inserter(others));
  pods->erase(own_end, pods->end());
  return others;
}

}  // namespace pod_workloads

namespace {

using pod_workloads::ClusterOf;
using pod_workloads::IsGroupWorkload;
using pod_workloads::IsOwnedByPod;
using pod_workloads::IsPodWorkload;
using pod_workloads::OwnsWorkload;
using pod_workloads::PodKey;

}  // namespace

pods::PodOptions Engine::Impl::PodOptionsNow() const {
  pods::PodOptions o;
  o.max_roles = options_.pod_group_max_roles;
  o.fast_quota_release = options_.pod_fast_quota_release;
  return o;
}

std::string Engine::Impl::PodWorkloadKey(const v1::PodObservation& pod) const {
  // A worker's pod made from a manager's copy belongs to that copy, whatever its group.
  if (pods::IsMultiKueueWorkerPod(pod)) {
    return absl::StrCat(pod.namespace_(), "/", pods::PrebuiltWorkloadName(pod));
  }
  const std::string group = pods::GroupName(pod, PodOptionsNow());
  if (!group.empty()) return absl::StrCat(pod.namespace_(), "/", group);
  if (pods::IsElasticJobPod(pod)) return ElasticPodsKey(pod);
  pods::ManagementInput input;
  input.namespace_selected =
      std::find(options_.pod_unmanaged_namespaces.begin(), options_.pod_unmanaged_namespaces.end(),
                pod.namespace_()) == options_.pod_unmanaged_namespaces.end();
  input.default_local_queue_exists =
      local_queues_.count(absl::StrCat(pod.namespace_(), "/default")) != 0;
  if (!pods::DecideManagement(pod, input).managed) return "";
  std::string generated =
      absl::StrCat(pod.namespace_(), "/", pods::SinglePodWorkloadName(pod.name(), pod.uid()));
  // Kueue finds a job's Workloads by owner reference, whatever their names: a Workload the pod
  // owns under another name (imported from a running Kueue, say) is its Workload.
  auto chain = chains_.find(absl::StrCat(pod.namespace_(), "/uid:", pod.uid()));
  if (chain == chains_.end()) return generated;
  const WorkloadEntry* owned = nullptr;
  for (const WorkloadEntry* e : chain->second) {
    if (e->key() == generated) return generated;  // the usual case, read without decoding
  }
  for (const WorkloadEntry* e : chain->second) {
    const v1::Workload& wl = e->object();
    if (!OwnsWorkload(wl, /*is_group=*/false) || IsGroupWorkload(wl) ||
        ClusterOf(wl) != pod.cluster() || !IsOwnedByPod(wl, pod)) {
      continue;
    }
    if (owned == nullptr || e->key() < owned->key()) owned = e;
  }
  return owned == nullptr ? generated : owned->key();
}

void Engine::Impl::AdoptReportedPod(const WorkloadEntry& entry, absl::Time now) {
  const v1::Workload& wl = entry.object();
  if (!IsPodWorkload(wl) || IsGroupWorkload(wl)) return;
  for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
    if (o.kind() != "Pod") continue;
    const std::string pod_key = PodKey(ClusterOf(wl), wl.metadata().namespace_(), o.name());
    auto it = pods_.find(pod_key);
    if (it == pods_.end() || it->second.obs.uid() != o.uid()) continue;
    if (workloads_.count(it->second.workload) != 0) continue;  // it has a Workload already
    if (PodWorkloadKey(it->second.obs) != entry.key()) continue;
    LinkPod(pod_key, entry.key());
    dirty_pod_workloads_.insert(entry.key());
    ReconcilePodWorkload(entry.key(), now);
  }
}

void Engine::Impl::LinkPod(const std::string& key, std::string workload_key) {
  PodEntry& entry = pods_.at(key);
  if (entry.workload == workload_key) return;
  IndexPod(key, /*add=*/false);
  entry.workload = std::move(workload_key);
  IndexPod(key, /*add=*/true);
}

void Engine::Impl::IndexPod(const std::string& key, bool add) {
  PodEntry& entry = pods_.at(key);
  if (entry.workload.empty()) return;
  if (add) {
    pods_of_workload_[entry.workload].insert(key);
    return;
  }
  auto it = pods_of_workload_.find(entry.workload);
  if (it == pods_of_workload_.end()) return;
  it->second.erase(key);
  if (it->second.empty()) pods_of_workload_.erase(it);
}

void Engine::Impl::EmitPod(const std::string& key, const v1::PodObservation& pod, bool deleted,
                           const char* reason) {
  Change c;
  c.revision = ++revision_;
  c.kind = v1::OBJECT_KIND_POD;
  c.key = key;
  c.type = deleted ? v1::WatchEvent::DELETED : v1::WatchEvent::MODIFIED;
  c.reason = deleted ? "PodDeleted" : reason;
  c.pod = std::make_shared<const v1::PodObservation>(pod);
  changes_.push_back(std::move(c));
}

std::vector<v1::PodObservation> Engine::Impl::PodsOf(const std::string& workload_key) const {
  std::vector<v1::PodObservation> out;
  auto it = pods_of_workload_.find(workload_key);
  if (it == pods_of_workload_.end()) return out;
  for (const std::string& key : it->second) out.push_back(pods_.at(key).obs);
  return out;
}

absl::Status Engine::Impl::Restore(const v1::PodObservation& pod) {
  PodEntry& entry = pods_[PodKey(pod.cluster(), pod.namespace_(), pod.name())];
  entry.obs = pod;
  return absl::OkStatus();
}

void Engine::Impl::FinishRestorePods() {
  for (auto& [key, entry] : pods_) {
    entry.workload = PodWorkloadKey(entry.obs);
    IndexPod(key, /*add=*/true);
  }
}

}  // namespace admitd::engine
