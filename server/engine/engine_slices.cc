// Engine: elastic workloads (KEP-77, §13 of the semantics). Resize updates a job's workload in
// place or queues a new workload slice that replaces the admitted one when it is admitted; a
// slice is scheduled for the pods it adds only, in the flavors the old slice holds.

#include <algorithm>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/pods/elastic_pods.h"
#include "server/engine/quantity.h"
#include "server/engine/validation.h"

namespace admitd::engine {
namespace {

const v1::OwnerReference* OwnerOf(const v1::Workload& wl) {
  const auto& owners = wl.metadata().owner_references();
  for (const v1::OwnerReference& o : owners) {
    if (o.controller()) return &o;
  }
  return owners.empty() ? nullptr : &owners[0];
}

std::string GroupOf(const std::string& api_version) {
  const size_t slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

// The annotation's value, or an empty string; a reference into `wl` (or to a static empty one).
const std::string& Annotation(const v1::Workload& wl, const char* key) {
  static const std::string* const kNone = new std::string();
  if (wl.metadata().annotations().empty()) return *kNone;  // most workloads: no hashing
  auto it = wl.metadata().annotations().find(key);
  return it == wl.metadata().annotations().end() ? *kNone : it->second;
}

bool Before(const WorkloadEntry* a, const WorkloadEntry* b) {
  const absl::Time ta = FromProto(a->object().metadata().creation_timestamp());
  const absl::Time tb = FromProto(b->object().metadata().creation_timestamp());
  if (ta != tb) return ta < tb;
  return a->object().metadata().uid() < b->object().metadata().uid();
}

}  // namespace

bool IsElastic(const v1::Workload& wl) {
  return Annotation(wl, kElasticJobAnnotation) == "true";
}

std::string Engine::Impl::ChainKey(const v1::Workload& wl) const {
  const std::string& ns = wl.metadata().namespace_();
  if (const v1::OwnerReference* owner = OwnerOf(wl); owner != nullptr && !owner->uid().empty()) {
    return absl::StrCat(ns, "/uid:", owner->uid());
  }
  std::string origin = Annotation(wl, kSliceNameAnnotation);
  if (origin.empty()) origin = wl.metadata().name();
  return absl::StrCat(ns, "/name:", origin);
}

void Engine::Impl::IndexChain(WorkloadEntry& entry, bool add) {
  std::string chain = ChainKey(entry.object());
  if (add) {
    auto& members = chains_[std::move(chain)];
    if (std::find(members.begin(), members.end(), &entry) == members.end()) {
      members.push_back(&entry);
    }
    return;
  }
  auto it = chains_.find(chain);
  if (it == chains_.end()) return;
  auto& members = it->second;
  members.erase(std::remove(members.begin(), members.end(), &entry), members.end());
  if (members.empty()) chains_.erase(it);
}

std::vector<WorkloadEntry*> Engine::Impl::ChainOf(const std::string& chain) {
  std::vector<WorkloadEntry*> out;
  auto it = chains_.find(chain);
  if (it == chains_.end()) return out;
  out.assign(it->second.begin(), it->second.end());
  std::sort(out.begin(), out.end(), Before);
  return out;
}

WorkloadEntry* Engine::Impl::ReplacedSlice(const WorkloadEntry& entry,
                                           const ClusterQueueState& cq) {
  if (!options_.elastic_jobs) return nullptr;
  const std::string target = Annotation(entry.object(), kReplacementForAnnotation);
  if (target.empty()) return nullptr;
  auto it = workloads_.find(target);
  if (it == workloads_.end()) return nullptr;
  WorkloadEntry& old = it->second;
  // Only an admitted, not evicted slice of the same queue lends its flavors and quota; an
  // evicted one is on its way out and the new slice has to fit in full.
  if (!HoldsReservation(old.object()) || IsConditionTrue(old.object(), kEvicted) ||
      old.cluster_queue != cq.name()) {
    return nullptr;
  }
  return &old;
}

SliceBase Engine::Impl::SliceBaseOf(const WorkloadEntry& old) const {
  SliceBase base;
  const v1::Admission& admission = old.object().status().admission();
  base.pod_sets.resize(admission.pod_set_assignments_size());
  for (int i = 0; i < admission.pod_set_assignments_size(); ++i) {
    const v1::PodSetAssignment& psa = admission.pod_set_assignments(i);
    for (const auto& [resource, flavor] : psa.flavors()) {
      int64_t total = 0;
      if (auto u = psa.resource_usage().find(resource); u != psa.resource_usage().end()) {
        auto q = ParseQuantity(resource, u->second);
        if (q.ok()) total = *q;
      }
      base.pod_sets[i][resource] = {flavor, total};
    }
  }
  return base;
}

void Engine::Impl::FinishSlice(WorkloadEntry& old, const std::string& reason,
                               const std::string& message, absl::Time now) {
  if (IsConditionTrue(old.object(), kFinished)) return;
  const bool reserved = HoldsReservation(old.object());
  if (reserved) {
    ChargeUsage(old, -1);
    old.ClearUsage();
  }
  Dequeue(old);
  SetCondition(&old.mutable_object(), kFinished, true, reason, message, now);
  EmitWorkload(old, v1::WatchEvent::MODIFIED, reason, message);
  PruneSliceHistory(ChainKey(old.object()), now);
}

void Engine::Impl::PruneSliceHistory(const std::string& chain, absl::Time now) {
  std::vector<WorkloadEntry*> finished;
  for (WorkloadEntry* e : ChainOf(chain)) {
    if (IsConditionTrue(e->object(), kFinished) && IsElastic(e->object())) finished.push_back(e);
  }
  const int limit = std::max(0, options_.slice_history_limit);
  for (size_t i = 0; i + limit < finished.size(); ++i) {
    DeleteEntry(*finished[i], now, "Deleted", "finished slice beyond the history limit");
  }
}

void Engine::Impl::DeleteEntry(WorkloadEntry& entry, absl::Time /*now*/, const std::string& reason,
                               const std::string& message) {
  const bool reserved = HoldsReservation(entry.object());
  if (reserved) ChargeUsage(entry, -1);
  Dequeue(entry);
  IndexChain(entry, /*add=*/false);
  EmitWorkload(entry, v1::WatchEvent::DELETED, reason, message);
  const std::string cq_name = entry.cluster_queue;
  const std::string key = entry.key();
  workloads_.erase(key);
  if (reserved) {
    if (auto it = cluster_queues_.find(cq_name); it != cluster_queues_.end()) {
      RequeueInadmissible(it->second);
    }
  }
}

void Engine::Impl::OnSliceAdmitted(WorkloadEntry& entry, absl::Time now) {
  const std::string target = Annotation(entry.object(), kReplacementForAnnotation);
  if (target.empty()) return;
  auto it = workloads_.find(target);
  if (it == workloads_.end()) return;
  auto job_uid = entry.object().metadata().labels().find("kueue.x-k8s.io/job-uid");
  const std::string uid = entry.object().metadata().uid();
  const std::string message = absl::StrCat(
      "Replaced to accommodate a workload (UID: ", uid.empty() ? "UNKNOWN" : uid, ", JobUID: ",
      job_uid == entry.object().metadata().labels().end() ? "UNKNOWN" : job_uid->second,
      ") due to workload slice aggregation");
  if (IsConditionTrue(it->second.object(), kFinished)) return;
  // MultiKueue: the replacement runs where its predecessor runs (Kueue's scheduler copies
  // clusterName on reservation).
  if (const std::string& cluster = it->second.object().status().cluster_name(); !cluster.empty()) {
    entry.mutable_object().mutable_status()->set_cluster_name(cluster);
  }
  // Recorded first: finishing may delete the old slice (the slice history limit).
  RecordEvent(it->second, EventType::kNormal, kReasonWorkloadSliceReplaced, "Replaced", message,
              now);
  FinishSlice(it->second, kReasonWorkloadSliceReplaced, message, now);
}

bool Engine::Impl::FinishIfReplacedWhileEvicted(WorkloadEntry& entry, absl::Time now) {
  if (!options_.elastic_jobs || !IsElastic(entry.object())) return false;
  const std::string self = entry.key();
  for (WorkloadEntry* e : ChainOf(ChainKey(entry.object()))) {
    if (e == &entry || IsConditionTrue(e->object(), kFinished)) continue;
    if (Annotation(e->object(), kReplacementForAnnotation) == self) {
      FinishSlice(entry, kReasonWorkloadSliceReplaced,
                  "Replaced to accommodate a new workload slice", now);
      return true;
    }
  }
  return false;
}

void Engine::Impl::UpdateCountsInPlace(WorkloadEntry& entry,
                                       const std::map<std::string, int32_t>& counts,
                                       absl::Time now) {
  v1::Workload& wl = entry.mutable_object();
  for (v1::PodSet& ps : *wl.mutable_spec()->mutable_pod_sets()) ps.set_count(counts.at(ps.name()));
  wl.mutable_metadata()->set_generation(wl.metadata().generation() + 1);
  entry.ParsePodSets();
  entry.scheduling_hash = 0;
  entry.last_assignment.reset();
  std::string message = absl::StrCat("pod counts: ", absl::StrJoin(counts, ", ", absl::PairFormatter("=")));
  if (HoldsReservation(wl)) {
    // Usage follows min(admitted count, spec count) (§2.4): a scale-down gives quota back now.
    ChargeUsage(entry, -1);
    entry.SetUsage(UsageFromAdmission(entry));
    ChargeUsage(entry, +1);
    EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Resized", message);
    if (auto it = cluster_queues_.find(entry.cluster_queue); it != cluster_queues_.end()) {
      RequeueInadmissible(it->second);
    }
    return;
  }
  RefreshResourceRequests(entry);
  if (entry.where == WorkloadEntry::Where::kQueued) {
    Dequeue(entry);
    Enqueue(entry, now, /*emit_reason_change=*/false);
  }
  EmitWorkload(entry, v1::WatchEvent::MODIFIED, "Resized", message);
}

void Engine::Impl::RefreshResourceRequests(WorkloadEntry& entry) {
  entry.mutable_object().mutable_status()->clear_resource_requests();
  const std::string cq_name =
      ClusterQueueOf(entry.object().metadata().namespace_(), entry.object().spec().queue_name());
  auto it = cluster_queues_.find(cq_name);
  if (it == cluster_queues_.end()) return;
  for (const PodSetRequest& ps : entry.pod_sets()) {
    v1::PodSetRequest* rr = entry.mutable_object().mutable_status()->add_resource_requests();
    rr->set_name(ps.name);
    RenderResourceList(PodSetTotal(it->second, ps), rr->mutable_resources());
  }
}

std::vector<const v1::Workload*> Engine::Impl::ResizeTargets(const v1::ResizeRequest& request) {
  std::string chain;
  if (!request.job().uid().empty()) {
    chain = absl::StrCat(request.namespace_(), "/uid:", request.job().uid());
    if (chains_.count(chain) == 0) return {};
  } else {
    WorkloadEntry* named = FindWorkload(request.namespace_(), request.name());
    if (named == nullptr) return {};
    chain = ChainKey(named->object());
  }
  std::vector<const v1::Workload*> out;
  for (WorkloadEntry* e : ChainOf(chain)) out.push_back(&e->object());
  return out;
}

absl::StatusOr<v1::ResizeResponse> Engine::Impl::Resize(const v1::ResizeRequest& request,
                                                        absl::Time now) {
  Violations violations;
  if (request.namespace_().empty()) violations.push_back({"namespace", "Required value"});
  const bool by_job = !request.job().uid().empty();
  if (by_job == !request.name().empty()) {
    violations.push_back({"job.uid", "Required value: exactly one of job.uid and name"});
  }
  if (request.pod_sets().empty()) violations.push_back({"pod_sets", "Required value"});
  if (request.generation() < 0) {
    violations.push_back({"generation", absl::StrCat("Invalid value: ", request.generation(),
                                                     ": must be greater than or equal to 0")});
  }
  std::map<std::string, int32_t> counts;
  for (int i = 0; i < request.pod_sets_size(); ++i) {
    const v1::PodSetCount& ps = request.pod_sets(i);
    const std::string f = absl::StrCat("pod_sets[", i, "]");
    if (ps.count() < 0) {
      violations.push_back({f + ".count", absl::StrCat("Invalid value: ", ps.count(),
                                                       ": must be greater than or equal to 0")});
    }
    if (!counts.emplace(ps.name(), ps.count()).second) {
      violations.push_back({f + ".name", absl::StrCat("Duplicate value: \"", ps.name(), "\"")});
    }
  }
  if (!violations.empty()) return InvalidArgument(violations);

  // The job's workloads, oldest first.
  std::string chain;
  if (by_job) {
    chain = absl::StrCat(request.namespace_(), "/uid:", request.job().uid());
    if (chains_.count(chain) == 0) {
      return NotFound("Workload", absl::StrCat("owned by ", request.job().kind(), " ",
                                               request.namespace_(), "/", request.job().name(),
                                               " (uid ", request.job().uid(), ")"),
                      "job.uid");
    }
  } else {
    WorkloadEntry* named = FindWorkload(request.namespace_(), request.name());
    if (named == nullptr) {
      return NotFound("Workload", absl::StrCat(request.namespace_(), "/", request.name()), "name");
    }
    chain = ChainKey(named->object());
  }
  std::vector<WorkloadEntry*> live;
  for (WorkloadEntry* e : ChainOf(chain)) {
    if (!IsConditionTrue(e->object(), kFinished)) live.push_back(e);
  }
  if (live.empty()) {
    return ErrorWithReason(absl::StatusCode::kFailedPrecondition, "NO_LIVE_WORKLOAD",
                           "every workload of the job has finished; submit a new one");
  }
  // The pod sets must be the workload's, all of them.
  {
    std::vector<std::string> have;
    for (const v1::PodSet& ps : live.back()->object().spec().pod_sets()) have.push_back(ps.name());
    std::vector<std::string> sorted_have = have;
    std::sort(sorted_have.begin(), sorted_have.end());
    std::vector<std::string> want;
    for (const auto& [name, count] : counts) want.push_back(name);
    if (want != sorted_have) {
      return InvalidArgument({{"pod_sets", absl::StrCat("Invalid value: the workload's pod sets are [",
                                                        absl::StrJoin(have, ", "),
                                                        "]; give the count of each")}});
    }
  }
  {
    v1::WorkloadSpec resized = live.back()->object().spec();
    for (v1::PodSet& ps : *resized.mutable_pod_sets()) ps.set_count(counts.at(ps.name()));
    // Reported against the request's fields: the workload's pod set i is the request's entry
    // of the same name.
    std::map<std::string, int> request_index;
    for (int j = 0; j < request.pod_sets_size(); ++j) request_index[request.pod_sets(j).name()] = j;
    Violations too_large;
    for (const FieldViolation& v : ValidateWorkloadTotals(resized)) {
      std::string field = "pod_sets";
      for (int i = 0; i < resized.pod_sets_size(); ++i) {
        if (absl::StartsWith(v.field, absl::StrCat("spec.podSets[", i, "]"))) {
          field = absl::StrCat("pod_sets[", request_index[resized.pod_sets(i).name()], "].count");
        }
      }
      too_large.push_back({field, v.description});
    }
    if (!too_large.empty()) return InvalidArgument(too_large);
  }
  auto counts_of = [](const WorkloadEntry& e) {
    std::map<std::string, int32_t> out;
    for (const v1::PodSet& ps : e.object().spec().pod_sets()) out[ps.name()] = ps.count();
    return out;
  };
  auto respond = [&](v1::ResizeResponse::Outcome outcome) {
    v1::ResizeResponse response;
    response.set_outcome(outcome);
    for (WorkloadEntry* e : ChainOf(chain)) {
      if (!IsConditionTrue(e->object(), kFinished)) *response.add_workloads() = e->object();
    }
    return response;
  };

  const bool elastic = options_.elastic_jobs && IsElastic(live.back()->object());
  if (!elastic) {
    // Classic path (Kueue recreates the workload of a job whose shape changed): the workload
    // gives its quota back and queues again with the new counts.
    WorkloadEntry& w = *live.back();
    if (counts_of(w) == counts) return respond(v1::ResizeResponse::UNCHANGED);
    const bool reserved = HoldsReservation(w.object());
    if (reserved) {
      ChargeUsage(w, -1);
      w.ClearUsage();
    }
    Dequeue(w);
    v1::Workload& wl = w.mutable_object();
    for (v1::PodSet& ps : *wl.mutable_spec()->mutable_pod_sets()) ps.set_count(counts.at(ps.name()));
    wl.mutable_metadata()->set_generation(wl.metadata().generation() + 1);
    wl.mutable_metadata()->set_uid(NewUid());
    *wl.mutable_metadata()->mutable_creation_timestamp() = ToProtoTime(now);
    wl.clear_status();
    w.ParsePodSets();
    w.scheduling_hash = 0;
    w.last_assignment.reset();
    RefreshResourceRequests(w);
    Enqueue(w, now, /*emit_reason_change=*/false);
    EmitWorkload(w, v1::WatchEvent::MODIFIED, "Replaced",
                 "the pod counts changed: the workload queues again");
    if (reserved) {
      if (auto it = cluster_queues_.find(w.cluster_queue); it != cluster_queues_.end()) {
        RequeueInadmissible(it->second);
      }
    }
    return respond(v1::ResizeResponse::REPLACED);
  }

  // §13.2: normalize to at most two live slices, the admitted one and its pending replacement.
  WorkloadEntry* kept = nullptr;
  WorkloadEntry* replacement = nullptr;
  if (live.size() == 1) {
    kept = live[0];
  } else {
    std::vector<WorkloadEntry*> candidates;
    for (WorkloadEntry* e : live) {
      if (!IsConditionTrue(e->object(), kEvicted)) candidates.push_back(e);
    }
    auto replaced_by_admitted = [&](const WorkloadEntry* e) {
      for (WorkloadEntry* other : candidates) {
        if (other != e && HoldsReservation(other->object()) &&
            Annotation(other->object(), kReplacementForAnnotation) == e->key()) {
          return true;
        }
      }
      return false;
    };
    for (auto it = candidates.rbegin(); it != candidates.rend() && kept == nullptr; ++it) {
      if (HoldsReservation((*it)->object()) && !replaced_by_admitted(*it)) kept = *it;
    }
    if (kept != nullptr) {
      for (WorkloadEntry* e : candidates) {
        if (!HoldsReservation(e->object()) &&
            Annotation(e->object(), kReplacementForAnnotation) == kept->key()) {
          replacement = e;
        }
      }
    } else if (!candidates.empty()) {
      kept = candidates.back();
    } else {
      kept = live.back();
    }
    for (WorkloadEntry* e : live) {
      if (e == kept || e == replacement) continue;
      bool replaced = false;
      for (WorkloadEntry* other : live) {
        replaced = replaced || Annotation(other->object(), kReplacementForAnnotation) == e->key();
      }
      if (replaced) {
        FinishSlice(*e, kReasonWorkloadSliceReplaced, "Replaced to accommodate a new workload slice",
                    now);
      } else {
        FinishSlice(*e, kReasonOutOfSync, "The workload slice is out of sync with its parent job",
                    now);
      }
    }
    if (replacement != nullptr) kept = replacement;
  }

  const std::map<std::string, int32_t> current = counts_of(*kept);
  if (current == counts) return respond(v1::ResizeResponse::UNCHANGED);
  bool grows = false;
  for (const auto& [name, count] : counts) grows = grows || count > current.at(name);
  if (!HoldsReservation(kept->object()) || !grows) {
    UpdateCountsInPlace(*kept, counts, now);
    return respond(v1::ResizeResponse::UPDATED_IN_PLACE);
  }

  // Scale-up of an admitted slice: a new slice with the full new counts (§13.2).
  if (request.generation() <= 0) {
    return InvalidArgument({{"generation", "Required value: the job's metadata.generation names "
                                           "the new workload slice"}});
  }
  const v1::Workload& base = kept->object();
  std::string name;
  if (const v1::OwnerReference* owner = OwnerOf(base); owner != nullptr && !owner->uid().empty()) {
    name = GeneratedWorkloadName(owner->kind(), GroupOf(owner->api_version()), owner->name(),
                                 owner->uid(), absl::StrCat(request.generation()));
  } else if (by_job) {
    name = GeneratedWorkloadName(request.job().kind(), GroupOf(request.job().api_version()),
                                 request.job().name(), request.job().uid(),
                                 absl::StrCat(request.generation()));
  } else {
    std::string origin = Annotation(base, kSliceNameAnnotation);
    if (origin.empty()) origin = base.metadata().name();
    name = GeneratedWorkloadName("Workload", "kueue.x-k8s.io", origin, "",
                                 absl::StrCat(request.generation()));
  }
  const std::string key = absl::StrCat(base.metadata().namespace_(), "/", name);
  if (workloads_.count(key) != 0) {
    return ErrorWithReason(
        absl::StatusCode::kFailedPrecondition, "GENERATION_REUSED",
        absl::StrCat("generation ", request.generation(), " already named workload slice \"",
                     key, "\", which no longer has these counts; resize with the job's new "
                          "metadata.generation"));
  }
  v1::Workload slice;
  *slice.mutable_metadata() = base.metadata();
  slice.mutable_metadata()->set_name(name);
  slice.mutable_metadata()->set_uid(NewUid());
  slice.mutable_metadata()->set_resource_version(0);
  slice.mutable_metadata()->set_generation(1);
  *slice.mutable_metadata()->mutable_creation_timestamp() = ToProtoTime(now);
  auto& annotations = *slice.mutable_metadata()->mutable_annotations();
  if (annotations.count(kSliceNameAnnotation) == 0) {
    annotations[kSliceNameAnnotation] = base.metadata().name();
  }
  annotations[kReplacementForAnnotation] = kept->key();
  *slice.mutable_spec() = base.spec();
  *slice.mutable_remote_job() = base.remote_job();  // a MultiKueue job goes on with its slices
  for (v1::PodSet& ps : *slice.mutable_spec()->mutable_pod_sets()) ps.set_count(counts.at(ps.name()));
  WorkloadEntry& entry = EntryFor(key);
  entry.set_object(std::move(slice));
  entry.ParsePodSets();
  RefreshResourceRequests(entry);
  IndexChain(entry, /*add=*/true);
  Enqueue(entry, now, /*emit_reason_change=*/false);
  EmitWorkload(entry, v1::WatchEvent::ADDED, "SliceCreated",
               absl::StrCat("replaces ", kept->key()));
  return respond(v1::ResizeResponse::SLICE_CREATED);
}

const WorkloadEntry* Engine::Impl::NewestActiveSlice(const std::string& chain) const {
  auto it = chains_.find(chain);
  if (it == chains_.end()) return nullptr;
  const WorkloadEntry* active = nullptr;
  for (const WorkloadEntry* member : it->second) {
    if (!pods::IsActiveSlice(member->object())) continue;
    if (active == nullptr || Before(active, member)) active = member;
  }
  return active;
}

void Engine::Impl::MarkElasticPodsDirty(const v1::Workload& slice) {
  if (Annotation(slice, kElasticJobAnnotation) != "true") return;
  std::string origin = Annotation(slice, kSliceNameAnnotation);
  if (origin.empty()) origin = slice.metadata().name();
  const std::string key = absl::StrCat(slice.metadata().namespace_(), "/", origin);
  if (pods_of_workload_.count(key) != 0) dirty_pod_workloads_.insert(key);
}

}  // namespace admitd::engine
