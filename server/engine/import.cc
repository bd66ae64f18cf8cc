// Engine: importing workloads that already hold an admission in a running Kueue.
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/engine/conditions.h"
#include "server/engine/engine_impl.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/quantity.h"
#include "server/engine/validation.h"

namespace admitd::engine {
namespace {

// Whether Kueue made the workload for a pod group or a single pod: an owner reference to a Pod.
bool IsPodOwned(const v1::Workload& wl) {
  for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
    if (o.kind() == "Pod" && o.api_version() == "v1") return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<v1::ImportResponse> Engine::Impl::Import(const v1::ImportRequest& request,
                                                        absl::Time now) {
  // Everything is checked before anything changes: one bad workload refuses the request.
  Violations violations;
  for (int i = 0; i < request.workloads_size(); ++i) {
    const v1::Workload& wl = request.workloads(i);
    const std::string f = absl::StrCat("workloads[", i, "]");
    for (FieldViolation v : ValidateWorkload(wl, options_.max_pod_sets)) {
      violations.push_back({absl::StrCat(f, ".", v.field), v.description});
    }
    CheckObjectSize(&violations, f, "workload", wl.ByteSizeLong(), options_.max_object_bytes);
    const std::string& ns = wl.metadata().namespace_();
    if (local_queues_.count(absl::StrCat(ns, "/", wl.spec().queue_name())) == 0) {
      violations.push_back({f + ".spec.queueName",
                            absl::StrCat("LocalQueue \"", ns, "/", wl.spec().queue_name(),
                                         "\" not found")});
    }
    const v1::Admission& admission = wl.status().admission();
    auto cq = cluster_queues_.find(admission.cluster_queue());
    if (admission.cluster_queue().empty()) {
      violations.push_back({f + ".status.admission.clusterQueue", "Required value"});
    } else if (cq == cluster_queues_.end()) {
      violations.push_back({f + ".status.admission.clusterQueue",
                            absl::StrCat("ClusterQueue \"", admission.cluster_queue(),
                                         "\" not found")});
    }
    if (admission.pod_set_assignments_size() != wl.spec().pod_sets_size()) {
      violations.push_back({f + ".status.admission.podSetAssignments",
                            "must have as many entries as spec.podSets"});
      continue;
    }
    FlavorResourceAmounts admitted;  // the workload's usage, which must be a quantity
    for (int j = 0; j < admission.pod_set_assignments_size(); ++j) {
      const v1::PodSetAssignment& psa = admission.pod_set_assignments(j);
      const std::string pf = absl::StrCat(f, ".status.admission.podSetAssignments[", j, "]");
      const std::string name = wl.spec().pod_sets(j).name().empty() ? "main"
                                                                    : wl.spec().pod_sets(j).name();
      if (psa.name() != name) {
        violations.push_back({pf + ".name", absl::StrCat("must be \"", name, "\"")});
      }
      if (psa.count() < 0 || psa.count() > wl.spec().pod_sets(j).count()) {
        violations.push_back({pf + ".count", "must be between 0 and the pod set's count"});
      }
      for (const auto& [resource, flavor] : psa.flavors()) {
        if (flavors_.count(flavor) == 0) {
          violations.push_back({absl::StrCat(pf, ".flavors[", resource, "]"),
                                absl::StrCat("ResourceFlavor \"", flavor, "\" not found")});
        } else if (cq != cluster_queues_.end() &&
                   cq->second.nominal.count({flavor, resource}) == 0) {
          violations.push_back({absl::StrCat(pf, ".flavors[", resource, "]"),
                                absl::StrCat("ClusterQueue \"", admission.cluster_queue(),
                                             "\" has no quota for ", resource, " in flavor ",
                                             flavor)});
        }
      }
      for (const auto& [resource, quantity] : psa.resource_usage()) {
        auto v = ParseQuantity(resource, quantity);
        if (!v.ok() || *v < 0) {
          violations.push_back({absl::StrCat(pf, ".resourceUsage[", resource, "]"),
                                absl::StrCat("Invalid value: \"", quantity, "\"")});
        } else if (auto flavor = psa.flavors().find(resource); flavor != psa.flavors().end()) {
          admitted[{flavor->second, resource}] += *v;
        }
      }
    }
    for (const auto& [fr, total] : admitted) {
      if (!IsQuantity(total)) {
        violations.push_back(
            {f + ".status.admission.podSetAssignments",
             absl::StrCat("Invalid value: the pod sets together use ",
                          FormatQuantity(fr.second, total), " ", fr.second, " in flavor ",
                          fr.first, ": the largest quantity is 2^63-1 (9223372036854775807) units")});
      }
    }
    if (IsConditionTrue(wl, kFinished)) {
      violations.push_back({f + ".status.conditions",
                            "a finished workload holds no quota: it is not imported"});
    }
    if (IsPodOwned(wl)) CheckClusterName(&violations, "cluster", request.cluster());
    auto existing = workloads_.find(absl::StrCat(ns, "/", wl.metadata().name()));
    if (existing != workloads_.end() && !wl.metadata().uid().empty() &&
        existing->second.object().metadata().uid() != wl.metadata().uid()) {
      violations.push_back({f + ".metadata.uid",
                            absl::StrCat("workload \"", existing->first,
                                         "\" already exists with another uid")});
    }
  }
  if (!violations.empty()) return InvalidArgument(violations);

  v1::ImportResponse response;
  for (const v1::Workload& in : request.workloads()) {
    const std::string key = absl::StrCat(in.metadata().namespace_(), "/", in.metadata().name());
    if (auto it = workloads_.find(key); it != workloads_.end()) {
      response.set_unchanged(response.unchanged() + 1);
      *response.add_workloads() = it->second.object();
      continue;
    }
    WorkloadEntry& entry = EntryFor(key);
    entry.set_object(in);
    v1::Workload& wl = entry.mutable_object();
    for (v1::PodSet& ps : *wl.mutable_spec()->mutable_pod_sets()) {
      if (ps.name().empty()) ps.set_name("main");
    }
    if (wl.metadata().uid().empty()) wl.mutable_metadata()->set_uid(NewUid());
    if (!wl.metadata().has_creation_timestamp()) {
      *wl.mutable_metadata()->mutable_creation_timestamp() = ToProtoTime(now);
    }
    wl.mutable_metadata()->set_generation(1);
    // The status stays as Kueue wrote it (every condition, requeue state, scheduling stats,
    // checks); only what a reservation needs is added when missing.
    wl.mutable_status()->clear_pending_position();
    const std::string cq = wl.status().admission().cluster_queue();
    absl::Time reserved_at = now;
    if (const v1::Condition* c = FindCondition(wl, kQuotaReserved);
        c != nullptr && c->has_last_transition_time()) {
      reserved_at = FromProto(c->last_transition_time());
    }
    if (!IsConditionTrue(wl, kQuotaReserved)) {
      SetCondition(&wl, kQuotaReserved, true, "QuotaReserved",
                   absl::StrCat("Quota reserved in ClusterQueue ", cq), reserved_at);
    }
    if (FindCondition(wl, kAdmitted) == nullptr) {
      SetCondition(&wl, kAdmitted, true, "Admitted", "The workload is admitted", reserved_at);
    }
    if (IsPodOwned(wl)) (*wl.mutable_metadata()->mutable_labels())[kPodClusterLabel] = request.cluster();
    entry.ParsePodSets();
    IndexChain(entry, /*add=*/true);
    entry.cluster_queue = cq;
    entry.queue_key.priority = wl.spec().priority();
    entry.queue_key.timestamp = FromProto(wl.metadata().creation_timestamp());
    entry.queue_key.uid = wl.metadata().uid();
    entry.queue_key.key = key;
    entry.queue_key.entry = &entry;
    entry.SetUsage(UsageFromAdmission(entry));
    ChargeUsage(entry, +1);  // may exceed quota, as after a quota cut in Kueue
    EmitWorkload(entry, v1::WatchEvent::ADDED, "Imported",
                 absl::StrCat("Quota reserved in ClusterQueue ", cq));
    AdoptReportedPod(entry, now);
    response.set_imported(response.imported() + 1);
    *response.add_workloads() = wl;
  }
  return response;
}

}  // namespace admitd::engine
