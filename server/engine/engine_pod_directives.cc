// Engine: the directives a pod shim applies (UNGATE, DELETE, REMOVE_FINALIZER). They are derived
// from the reported pods and the Workload, never stored: what the shim has not done yet is what
// its pods still say.
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/engine_pods_internal.h"
#include "server/pods/elastic_pods.h"
#include "server/pods/multikueue_pods.h"
#include "server/pods/pod_group.h"

namespace admitd::engine {

using pod_workloads::ClusterOf;
using pod_workloads::IsPodWorkload;
using pod_workloads::NameConflict;
using pod_workloads::OwnsWorkload;
using pod_workloads::PodKey;
using pod_workloads::TakeOtherClusters;

std::vector<v1::PodDirective> Engine::Impl::PodDirectivesFor(const std::string& workload_key,
                                                             absl::Time now) const {
  std::vector<v1::PodDirective> out;
  const pods::PodOptions options = PodOptionsNow();
  std::vector<v1::PodObservation> pods = PodsOf(workload_key);
  if (pods.empty()) return out;
  if (pods::IsElasticJobPod(pods.front())) return ElasticPodDirectives(pods);
  const int64_t rev = static_cast<int64_t>(revision_);
  const bool is_group = !pods::GroupName(pods.front(), options).empty();
  auto by_name = [&](const std::string& name) -> const v1::PodObservation* {
    for (const v1::PodObservation& p : pods) {
      if (p.name() == name) return &p;
    }
    return nullptr;
  };
  auto finalize = [&](const std::vector<std::string>& names) {
    for (const std::string& n : names) {
      if (const v1::PodObservation* p = by_name(n); p != nullptr && pods::HasManagedFinalizer(*p)) {
        out.push_back(pods::RemoveFinalizerDirective(*p, rev));
      }
    }
  };
  // Excess pods are finalized and deleted in the same reconcile, as Kueue does: the finalizer
  // goes first so that the deletion completes.
  auto remove = [&](const std::vector<std::string>& names) {
    for (const std::string& n : names) {
      const v1::PodObservation* p = by_name(n);
      if (p == nullptr) continue;
      if (pods::HasManagedFinalizer(*p)) out.push_back(pods::RemoveFinalizerDirective(*p, rev));
      if (!p->has_deletion_timestamp()) out.push_back(pods::DeleteDirective(*p, rev));
    }
  };
  auto wl_it = workloads_.find(workload_key);
  if (wl_it == workloads_.end() && pods::IsMultiKueueWorkerPod(pods.front())) {
    // Made from a manager's copy that is gone (withdrawn, or finished and cleaned up there).
    std::vector<std::string> names;
    for (const v1::PodObservation& p : pods) names.push_back(p.name());
    remove(names);
    return out;
  }
  if (wl_it == workloads_.end()) {
    if (is_group) {
      TakeOtherClusters(&pods, pods.front().cluster());  // as ReconcilePodWorkload composes
      pods::GroupComposition comp = pods::ComposeGroup(pods, options);
      finalize(comp.finalize);
      remove(comp.delete_excess);
    }
    return out;
  }
  const v1::Workload& wl = wl_it->second.object();
  // Pods whose Workload name is taken stay gated; inactive ones lose the finalizer so that a
  // deleted pod does not hang.
  auto finalize_refused = [&](const std::vector<v1::PodObservation>& refused) {
    for (const v1::PodObservation& p : refused) {
      if (!pods::IsRunnableOrSucceeded(p) && pods::HasManagedFinalizer(p)) {
        out.push_back(pods::RemoveFinalizerDirective(p, rev));
      }
    }
  };
  if (!OwnsWorkload(wl, is_group)) {
    finalize_refused(pods);
    return out;
  }
  if (std::vector<v1::PodObservation> others = TakeOtherClusters(&pods, ClusterOf(wl));
      !others.empty()) {
    finalize_refused(others);
    if (pods.empty()) return out;
  }
  const bool finished = IsConditionTrue(wl, kFinished);
  // The pods Kueue starts once the Workload is admitted: a group's kept members, not its excess.
  std::vector<v1::PodObservation> members = pods;
  if (is_group) {
    absl::StatusOr<pods::GroupMatch> match = pods::MatchGroupWorkload(pods, wl, finished, now, options);
    if (match.ok()) {
      finalize(match->finalize);
      remove(match->delete_excess);
      if (match->equivalent) {
        members.clear();
        for (const v1::PodObservation& p : pods) {
          if (std::find(match->kept.begin(), match->kept.end(), p.name()) != match->kept.end()) {
            members.push_back(p);
          }
        }
      }
    }
  }
  if (finished) {
    for (const v1::PodObservation& p : pods) {
      if (pods::HasManagedFinalizer(p) && (pods::IsTerminated(p) || !is_group)) {
        out.push_back(pods::RemoveFinalizerDirective(p, rev));
      }
    }
    return out;
  }
  if (const v1::Condition* evicted = FindCondition(wl, kEvicted);
      evicted != nullptr && evicted->status() == "True") {
    for (v1::PodDirective& d :
         pods::StopDirectives(pods, pods::EvictionStopReason(evicted->reason()),
                              evicted->message(), /*workload_deleted=*/false, is_group, rev)) {
      if (d.action() == v1::PodDirective::DELETE) {
        // Kueue records `Stopped` with the eviction's message on each pod it stops.
        v1::PodEvent* stopped = d.mutable_event();
        stopped->set_type(v1::PodEvent::NORMAL);
        stopped->set_reason("Stopped");
        stopped->set_message(pods::TruncateEventMessage(evicted->message()));
        *stopped->mutable_pod() = d.pod();
        stopped->set_namespace_(wl.metadata().namespace_());
        stopped->set_workload_name(wl.metadata().name());
      }
      out.push_back(std::move(d));
    }
    return out;
  }
  if (!IsConditionTrue(wl, kAdmitted) || RunsElsewhere(wl)) return out;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ungate =
      pods::PodsToUngate(members, wl, is_group);
  if (!ungate.ok()) return out;
  for (const auto& [name, pod_set] : *ungate) {
    const v1::PodObservation* p = by_name(name);
    if (p == nullptr) continue;
    pods::UngateInfo info;
    info.pod_set = pod_set;
    info.local_queue = wl.spec().queue_name();
    info.cluster_queue = wl.status().admission().cluster_queue();
    info.workload_name = wl.metadata().name();
    for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
      if (psa.name() != pod_set) continue;
      for (const auto& [resource, flavor] : psa.flavors()) {
        auto f = flavors_.find(flavor);
        if (f == flavors_.end()) continue;
        for (const auto& [k, v] : f->second.resource_flavor().spec().node_labels()) {
          info.node_selector[k] = v;
        }
      }
    }
    v1::PodDirective d = pods::UngateDirective(*p, info, rev);
    // Kueue records `Started` on each pod it ungates; the shim does once it has.
    v1::PodEvent* started = d.mutable_event();
    started->set_type(v1::PodEvent::NORMAL);
    started->set_reason("Started");
    started->set_message(absl::StrCat("Admitted by clusterQueue ", info.cluster_queue));
    *started->mutable_pod() = d.pod();
    started->set_namespace_(wl.metadata().namespace_());
    started->set_workload_name(wl.metadata().name());
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<v1::PodDirective> Engine::Impl::TakeDirectiveUpdates(absl::Time now) {
  std::vector<v1::PodDirective> out;
  for (const std::string& key : std::exchange(dirty_pod_workloads_, {})) {
    for (v1::PodDirective& d : PodDirectivesFor(key, now)) out.push_back(std::move(d));
  }
  return out;
}

v1::ListDirectivesResponse Engine::Impl::ListDirectives(const v1::ListDirectivesRequest& request,
                                                         absl::Time now) const {
  v1::ListDirectivesResponse out;
  std::set<std::string> workload_keys;
  const std::string prefix = request.cluster() + "/";
  for (auto it = pods_.lower_bound(prefix);
       it != pods_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (!it->second.workload.empty()) workload_keys.insert(it->second.workload);
  }
  for (const std::string& key : workload_keys) {
    for (v1::PodDirective& d : PodDirectivesFor(key, now)) {
      if (d.pod().cluster() == request.cluster()) *out.add_directives() = std::move(d);
    }
  }
  out.set_revision(revision_);
  return out;
}

void Engine::Impl::AddDirectivesFor(const v1::ReportPodsRequest& request, absl::Time now,
                                    v1::ReportPodsResponse* response) const {
  std::set<std::string> workload_keys;
  for (const v1::PodObservation& p : request.pods()) {
    auto it = pods_.find(PodKey(request.cluster(), p.namespace_(), p.name()));
    if (it != pods_.end() && !it->second.workload.empty()) workload_keys.insert(it->second.workload);
  }
  for (const std::string& key : workload_keys) {
    for (v1::PodDirective& d : PodDirectivesFor(key, now)) {
      if (d.pod().cluster() == request.cluster()) *response->add_directives() = std::move(d);
    }
  }
  response->set_revision(revision_);
}

// ---- Elastic Job pods (§13.5) ----------------------------------------------------------------

std::string Engine::Impl::ElasticPodsKey(const v1::PodObservation& pod) const {
  return absl::StrCat(pod.namespace_(), "/",
                      pod.annotations().at(kSliceNameAnnotation));
}

std::vector<v1::PodDirective> Engine::Impl::ElasticPodDirectives(
    const std::vector<v1::PodObservation>& pods) const {
  std::vector<v1::PodDirective> out;
  if (!options_.elastic_jobs || pods.empty()) return out;
  // The chain the pods' Job owns, as ChainKey names it: by the owner's UID, else by the origin
  // slice's name.
  const v1::PodObservation& first = pods.front();
  std::string chain;
  for (const v1::OwnerReference& o : first.owner_references()) {
    if (o.uid().empty()) continue;
    if (chain.empty() || o.controller()) chain = absl::StrCat(first.namespace_(), "/uid:", o.uid());
  }
  if (chain.empty()) {
    chain = absl::StrCat(first.namespace_(), "/name:",
                         first.annotations().at(kSliceNameAnnotation));
  }
  const WorkloadEntry* active = NewestActiveSlice(chain);
  if (active == nullptr) return out;
  const int64_t rev = static_cast<int64_t>(revision_);
  for (const std::string& name : pods::ElasticPodsToUngate(&active->object(), pods)) {
    for (const v1::PodObservation& p : pods) {
      if (p.name() == name) out.push_back(pods::ElasticUngateDirective(p, rev));
    }
  }
  return out;
}

}  // namespace admitd::engine
