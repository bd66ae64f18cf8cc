// Validation of the queue objects (validation.h): ResourceFlavors, Cohorts, ClusterQueues,
// LocalQueues, priority classes, admission checks, MultiKueue objects and Namespaces.
#include "server/engine/validation.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/engine/field_checks.h"
#include "server/engine/metadata_validation.h"
#include "server/engine/quantity.h"
#include "server/engine/resources.h"

namespace admitd::engine {
namespace {

constexpr int kMaxResourceGroups = 16;
constexpr int kMaxFlavorsPerGroup = 64;
constexpr int kMaxResourcesPerGroup = 64;
constexpr int kMaxResourcesPerFlavor = 64;
constexpr int kMaxFlavorsTotal = 256;

// spec.fairSharing of a ClusterQueue, a Cohort or a LocalQueue: a weight that is a quantity, not negative, and
// either 0 or above 1n (smaller ones collapse to 0 in the shares).
// `fs` is null when the spec has none.
void CheckFairSharing(Violations* out, const std::string& field, const v1::FairSharing* fs) {
  if (fs == nullptr || !fs->has_weight()) return;
  absl::StatusOr<double> weight = ParseQuantityAsDouble(fs->weight());
  if (!weight.ok()) {
    out->push_back({field + ".weight", absl::StrCat("Invalid value: ", Quote(fs->weight()), ": ",
                                                    weight.status().message())});
  } else if (*weight < 0) {
    out->push_back({field, absl::StrCat("Invalid value: ", Quote(fs->weight()),
                                        ": must be greater than or equal to 0")});
  } else if (*weight > 0 && *weight <= 1e-9) {
    out->push_back({field, absl::StrCat("Invalid value: ", Quote(fs->weight()),
                                        ": When not 0, weight must be > 10e-9")});
  }
}

// Resource groups of a ClusterQueue or Cohort.
void CheckResourceGroups(Violations* out, const std::string& field,
                         const google::protobuf::RepeatedPtrField<v1::ResourceGroup>& groups,
                         bool has_parent, const char* parent_word) {
  if (groups.size() > kMaxResourceGroups) {
    out->push_back({field, absl::StrCat("Too many: ", groups.size(), ": must have at most ",
                                        kMaxResourceGroups, " items")});
  }
  std::set<std::string> seen_resources, seen_flavors;
  int total_flavors = 0;
  for (int g = 0; g < groups.size(); ++g) {
    const v1::ResourceGroup& group = groups[g];
    const std::string gf = absl::StrCat(field, "[", g, "]");
    if (group.covered_resources().empty()) {
      out->push_back({gf + ".coveredResources", "Required value"});
    }
    if (group.covered_resources_size() > kMaxResourcesPerGroup) {
      out->push_back({gf + ".coveredResources",
                      absl::StrCat("Too many: ", group.covered_resources_size(),
                                   ": must have at most ", kMaxResourcesPerGroup, " items")});
    }
    for (int r = 0; r < group.covered_resources_size(); ++r) {
      const std::string& name = group.covered_resources(r);
      if (!seen_resources.insert(name).second) {
        out->push_back({absl::StrCat(gf, ".coveredResources[", r, "]"),
                        absl::StrCat("Duplicate value: ", Quote(name))});
      }
    }
    if (group.flavors().empty()) out->push_back({gf + ".flavors", "Required value"});
    if (group.flavors_size() > kMaxFlavorsPerGroup) {
      out->push_back({gf + ".flavors", absl::StrCat("Too many: ", group.flavors_size(),
                                                    ": must have at most ", kMaxFlavorsPerGroup,
                                                    " items")});
    }
    total_flavors += group.flavors_size();
    for (int f = 0; f < group.flavors_size(); ++f) {
      const v1::FlavorQuotas& fq = group.flavors(f);
      const std::string ff = absl::StrCat(gf, ".flavors[", f, "]");
      CheckName(out, ff + ".name", fq.name(), false);
      if (!fq.name().empty() && !seen_flavors.insert(fq.name()).second) {
        out->push_back({ff + ".name", absl::StrCat("Duplicate value: ", Quote(fq.name()))});
      }
      if (fq.resources_size() > kMaxResourcesPerFlavor) {
        out->push_back({ff + ".resources", absl::StrCat("Too many: ", fq.resources_size(),
                                                        ": must have at most ",
                                                        kMaxResourcesPerFlavor, " items")});
      }
      if (fq.resources_size() != group.covered_resources_size()) {
        out->push_back({ff + ".resources",
                        "flavors must have the same number of resources as the coveredResources"});
      }
      for (int r = 0; r < fq.resources_size(); ++r) {
        const v1::ResourceQuota& q = fq.resources(r);
        const std::string rf = absl::StrCat(ff, ".resources[", r, "]");
        if (r < group.covered_resources_size() && q.name() != group.covered_resources(r)) {
          out->push_back({rf + ".name",
                          absl::StrCat("Invalid value: ", Quote(q.name()),
                                       ": must match coveredResources[", r, "] (",
                                       Quote(group.covered_resources(r)), ")")});
        }
        if (q.nominal_quota().empty()) {
          out->push_back({rf + ".nominalQuota", "Required value"});
        } else {
          CheckQuantity(out, rf + ".nominalQuota", q.name(), q.nominal_quota());
        }
        if (q.has_borrowing_limit()) {
          CheckQuantity(out, rf + ".borrowingLimit", q.name(), q.borrowing_limit());
          if (!has_parent) {
            out->push_back({rf + ".borrowingLimit",
                            absl::StrCat("must be nil when ", parent_word, " is empty")});
          }
        }
        if (q.has_lending_limit()) {
          CheckQuantity(out, rf + ".lendingLimit", q.name(), q.lending_limit());
          if (!has_parent) {
            out->push_back({rf + ".lendingLimit",
                            absl::StrCat("must be nil when ", parent_word, " is empty")});
          } else {
            auto lend = ParseQuantity(q.name(), q.lending_limit());
            auto nominal = ParseQuantity(q.name(), q.nominal_quota());
            if (lend.ok() && nominal.ok() && *lend > *nominal) {
              out->push_back({rf + ".lendingLimit",
                              absl::StrCat("Invalid value: ", Quote(q.lending_limit()),
                                           ": must be less than or equal to the nominalQuota")});
            }
          }
        }
      }
    }
  }
  if (total_flavors > kMaxFlavorsTotal) {
    out->push_back({field, absl::StrCat("Too many: ", total_flavors,
                                        " flavors: must have at most ", kMaxFlavorsTotal)});
  }
}

}  // namespace

Violations ValidateResourceFlavor(const v1::ResourceFlavor& flavor) {
  Violations out;
  CheckName(&out, "metadata.name", flavor.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", flavor.metadata());
  for (int i = 0; i < flavor.spec().node_taints_size(); ++i) {
    const v1::Taint& t = flavor.spec().node_taints(i);
    std::string f = absl::StrCat("spec.nodeTaints[", i, "]");
    if (t.key().empty()) out.push_back({f + ".key", "Required value"});
    if (t.effect().empty()) {
      out.push_back({f + ".effect", "Required value"});
    } else {
      CheckEnum(&out, f + ".effect", t.effect(), {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    }
  }
  CheckTolerations(&out, "spec.tolerations", flavor.spec().tolerations());
  return out;
}

Violations ValidateCohort(const v1::Cohort& cohort) {
  Violations out;
  CheckName(&out, "metadata.name", cohort.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", cohort.metadata());
  if (!cohort.spec().parent_name().empty()) {
    CheckName(&out, "spec.parentName", cohort.spec().parent_name(), false);
    if (cohort.spec().parent_name() == cohort.metadata().name()) {
      out.push_back({"spec.parentName", "Invalid value: cohort cannot be its own parent"});
    }
  }
  CheckResourceGroups(&out, "spec.resourceGroups", cohort.spec().resource_groups(),
                      !cohort.spec().parent_name().empty(), "parent");
  CheckFairSharing(&out, "spec.fairSharing",
                   cohort.spec().has_fair_sharing() ? &cohort.spec().fair_sharing() : nullptr);
  return out;
}

Violations ValidateClusterQueue(const v1::ClusterQueue& cq) {
  Violations out;
  const v1::ClusterQueueSpec& spec = cq.spec();
  CheckName(&out, "metadata.name", cq.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", cq.metadata());
  if (!spec.cohort_name().empty()) CheckName(&out, "spec.cohortName", spec.cohort_name(), false);
  CheckResourceGroups(&out, "spec.resourceGroups", spec.resource_groups(),
                      !spec.cohort_name().empty(), "cohort");
  CheckEnum(&out, "spec.queueingStrategy", spec.queueing_strategy(),
            {"StrictFIFO", "BestEffortFIFO"});
  CheckEnum(&out, "spec.stopPolicy", spec.stop_policy(), {"None", "Hold", "HoldAndDrain"});
  CheckFairSharing(&out, "spec.fairSharing",
                   spec.has_fair_sharing() ? &spec.fair_sharing() : nullptr);
  if (spec.has_admission_scope()) {
    const std::string& mode = spec.admission_scope().admission_mode();
    if (mode.empty()) {
      out.push_back({"spec.admissionScope.admissionMode", "Required value"});
    } else {
      CheckEnum(&out, "spec.admissionScope.admissionMode", mode,
                {"UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"});
    }
  }
  const v1::FlavorFungibility& ff = spec.flavor_fungibility();
  CheckEnum(&out, "spec.flavorFungibility.whenCanBorrow", ff.when_can_borrow(),
            {"MayStopSearch", "TryNextFlavor"});
  CheckEnum(&out, "spec.flavorFungibility.whenCanPreempt", ff.when_can_preempt(),
            {"MayStopSearch", "TryNextFlavor"});
  CheckEnum(&out, "spec.flavorFungibility.preference", ff.preference(),
            {"BorrowingOverPreemption", "PreemptionOverBorrowing"});
  if (!ff.preference().empty() &&
      !(ff.when_can_borrow() == "TryNextFlavor" &&
        (ff.when_can_preempt().empty() || ff.when_can_preempt() == "TryNextFlavor"))) {
    out.push_back({"spec.flavorFungibility.preference",
                   "preference can only be set when whenCanBorrow and whenCanPreempt are both "
                   "TryNextFlavor"});
  }
  const v1::ClusterQueuePreemption& p = spec.preemption();
  CheckEnum(&out, "spec.preemption.withinClusterQueue", p.within_cluster_queue(),
            {"Never", "LowerPriority", "LowerOrNewerEqualPriority"});
  CheckEnum(&out, "spec.preemption.reclaimWithinCohort", p.reclaim_within_cohort(),
            {"Never", "LowerPriority", "Any"});
  CheckEnum(&out, "spec.preemption.borrowWithinCohort.policy", p.borrow_within_cohort().policy(),
            {"Never", "LowerPriority"});
  if ((p.reclaim_within_cohort().empty() || p.reclaim_within_cohort() == "Never") &&
      !p.borrow_within_cohort().policy().empty() && p.borrow_within_cohort().policy() != "Never") {
    out.push_back({"spec.preemption",
                   "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"});
  }
  if (spec.has_namespace_selector()) {
    for (int i = 0; i < spec.namespace_selector().match_expressions_size(); ++i) {
      const auto& e = spec.namespace_selector().match_expressions(i);
      std::string f = absl::StrCat("spec.namespaceSelector.matchExpressions[", i, "]");
      CheckEnum(&out, f + ".operator", e.operator_(), {"In", "NotIn", "Exists", "DoesNotExist"});
      if (e.operator_().empty()) out.push_back({f + ".operator", "Required value"});
    }
  }
  for (int i = 0; i < spec.admission_checks_strategy().admission_checks_size(); ++i) {
    CheckName(&out, absl::StrCat("spec.admissionChecksStrategy.admissionChecks[", i, "].name"),
              spec.admission_checks_strategy().admission_checks(i).name(), false);
  }
  return out;
}

Violations ValidateLocalQueue(const v1::LocalQueue& lq) {
  Violations out;
  CheckName(&out, "metadata.namespace", lq.metadata().namespace_(), true);
  CheckName(&out, "metadata.name", lq.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", lq.metadata());
  if (lq.spec().cluster_queue().empty()) {
    out.push_back({"spec.clusterQueue", "Required value"});
  } else {
    CheckName(&out, "spec.clusterQueue", lq.spec().cluster_queue(), false);
  }
  CheckEnum(&out, "spec.stopPolicy", lq.spec().stop_policy(), {"None", "Hold", "HoldAndDrain"});
  CheckFairSharing(&out, "spec.fairSharing",
                   lq.spec().has_fair_sharing() ? &lq.spec().fair_sharing() : nullptr);
  return out;
}

Violations ValidateWorkloadPriorityClass(const v1::WorkloadPriorityClass& wpc) {
  Violations out;
  CheckName(&out, "metadata.name", wpc.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", wpc.metadata());
  CheckPriority(&out, "value", wpc.value());
  return out;
}

Violations ValidateAdmissionCheck(const v1::AdmissionCheck& check) {
  Violations out;
  CheckName(&out, "metadata.name", check.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", check.metadata());
  if (check.spec().controller_name().empty()) {
    out.push_back({"spec.controllerName", "Required value"});
  }
  return out;
}

Violations ValidateMultiKueueConfig(const v1::MultiKueueConfig& config) {
  Violations out;
  CheckName(&out, "metadata.name", config.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", config.metadata());
  const auto& clusters = config.spec().clusters();
  if (clusters.empty()) {
    out.push_back({"spec.clusters", "Required value"});
  } else if (clusters.size() > 20) {
    out.push_back({"spec.clusters",
                   absl::StrCat("Too many: ", clusters.size(), ": must have at most 20 items")});
  }
  std::set<std::string> seen;
  for (int i = 0; i < clusters.size(); ++i) {
    const std::string field = absl::StrCat("spec.clusters[", i, "]");
    if (clusters[i].empty()) {
      out.push_back({field, "Required value"});
    } else if (clusters[i].size() > 256) {
      out.push_back({field, "Too long: may not be more than 256 bytes"});
    } else if (!seen.insert(clusters[i]).second) {
      out.push_back({"spec.clusters", "Invalid value: \"array\": must be unique"});
    }
  }
  // Automated derives the manager's quota from the workers' (Kueue's alpha
  // MultiKueueManagerQuotaAutomation); admitd keeps the manager's quota as configured.
  CheckEnum(&out, "spec.quotaManagement", config.spec().quota_management(), {"Manual"});
  return out;
}

Violations ValidateMultiKueueCluster(const v1::MultiKueueCluster& cluster) {
  Violations out;
  // The name labels metrics and is the cluster's name on the workers' side: a shim's cluster
  // name rule.
  CheckClusterName(&out, "metadata.name", cluster.metadata().name());
  CheckObjectMeta(&out, "metadata", cluster.metadata());
  const v1::WorkerAdmitd& w = cluster.spec().admitd();
  const std::string& address = w.address();
  if (address.empty()) {
    out.push_back({"spec.admitd.address", "Required value"});
  } else {
    const size_t colon = address.rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      out.push_back({"spec.admitd.address",
                     absl::StrCat("Invalid value: ", Quote(address),
                                  ": must be host:port with a port from 1 to 65535")});
    }
  }
  if (w.cert_file().empty() != w.key_file().empty()) {
    out.push_back({w.cert_file().empty() ? "spec.admitd.certFile" : "spec.admitd.keyFile",
                   "Required value: a client certificate needs both certFile and keyFile"});
  }
  return out;
}

Violations ValidateNamespace(const v1::Namespace& ns) {
  Violations out;
  CheckName(&out, "metadata.name", ns.metadata().name(), true);
  CheckObjectMeta(&out, "metadata", ns.metadata());
  auto name_label = ns.metadata().labels().find("kubernetes.io/metadata.name");
  if (name_label != ns.metadata().labels().end() && name_label->second != ns.metadata().name()) {
    out.push_back({"metadata.labels[kubernetes.io/metadata.name]",
                   absl::StrCat("Invalid value: ", Quote(name_label->second),
                                ": must be the namespace's name")});
  }
  return out;
}
}  // namespace admitd::engine
