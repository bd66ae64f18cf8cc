#include "server/engine/validation.h"

#include <map>
#include <set>

#include "absl/functional/function_ref.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
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

constexpr char kSubdomainError[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kLabelError[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

bool IsAlnum(char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); }

bool IsLabelChars(absl::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-') return false;
  }
  return true;
}

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// Checks a name field: required, length, and format.
// `field` is built only for a violation (most names are valid).
void CheckName(Violations* out, absl::FunctionRef<std::string()> field, const std::string& name,
               bool label) {
  if (name.empty()) {
    out->push_back({field(), "Required value: name is required"});
    return;
  }
  const size_t max = label ? 63 : 253;
  if (name.size() > max) {
    out->push_back({field(), absl::StrCat("Invalid value: ", Quote(name.substr(0, 16)),
                                          "...: must be no more than ", max, " characters")});
    return;
  }
  if (label ? !IsDnsLabel(name) : !IsDnsSubdomain(name)) {
    out->push_back({field(), absl::StrCat("Invalid value: ", Quote(name), ": ",
                                          label ? kLabelError : kSubdomainError)});
  }
}

void CheckName(Violations* out, absl::string_view field, const std::string& name, bool label) {
  CheckName(out, [field] { return std::string(field); }, name, label);
}

void CheckEnum(Violations* out, const std::string& field, const std::string& value,
               const std::vector<std::string>& allowed) {
  if (value.empty()) return;  // defaulted
  for (const std::string& a : allowed) {
    if (value == a) return;
  }
  std::vector<std::string> quoted;
  for (const std::string& a : allowed) quoted.push_back(Quote(a));
  out->push_back({field, absl::StrCat("Unsupported value: ", Quote(value),
                                      ": supported values: ", absl::StrJoin(quoted, ", "))});
}

// Parses a quantity that must be >= 0; reports either failure.
void CheckQuantity(Violations* out, const std::string& field, const std::string& resource,
                   const std::string& text) {
  absl::StatusOr<int64_t> v = ParseQuantity(resource, text);
  if (!v.ok()) {
    out->push_back({field, absl::StrCat("Invalid value: ", Quote(text), ": ", v.status().message())});
  } else if (*v < 0) {
    out->push_back({field, absl::StrCat("Invalid value: ", Quote(text),
                                        ": must be greater than or equal to 0")});
  }
}

// spec.fairSharing of a ClusterQueue or a Cohort: a weight that is a quantity, not negative, and
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

// `field` names the list; it is called only when there is something to report.
void CheckResourceList(Violations* out, absl::FunctionRef<std::string()> field,
                       const google::protobuf::Map<std::string, std::string>& list) {
  bool valid = true;
  for (const auto& [name, text] : list) {
    const absl::StatusOr<int64_t> v = ParseQuantity(name, text);
    if (!v.ok() || *v < 0) {
      valid = false;
      break;
    }
  }
  if (valid) return;  // the common case: no names built, nothing sorted
  const std::string base = field();
  std::map<std::string, std::string> sorted(list.begin(), list.end());
  for (const auto& [name, text] : sorted) {
    CheckQuantity(out, absl::StrCat(base, "[", name, "]"), name, text);
  }
}

void CheckTolerations(Violations* out, const std::string& field,
                      const google::protobuf::RepeatedPtrField<v1::Toleration>& tolerations) {
  for (int i = 0; i < tolerations.size(); ++i) {
    const v1::Toleration& t = tolerations[i];
    std::string f = absl::StrCat(field, "[", i, "]");
    CheckEnum(out, f + ".operator", t.operator_(), {"Equal", "Exists"});
    CheckEnum(out, f + ".effect", t.effect(), {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    if (t.operator_() == "Exists" && !t.value().empty()) {
      out->push_back({f + ".operator",
                      "Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'"});
    }
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

// Kubernetes' pod priorities end at system-node-critical's 2000001000; admitd holds workload
// priorities to the same range on both sides, so no priority arithmetic can overflow.
void CheckPriority(Violations* out, const std::string& field, int64_t priority) {
  constexpr int64_t kMaxPriority = 2000001000;
  if (priority > kMaxPriority || priority < -kMaxPriority) {
    out->push_back({field, absl::StrCat("Invalid value: ", priority, ": must be between -",
                                        kMaxPriority, " and ", kMaxPriority)});
  }
}

}  // namespace

bool IsDnsLabel(const std::string& name) { return name.size() <= 63 && IsLabelChars(name); }

bool IsDnsSubdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    absl::string_view part(name.data() + start,
                           (dot == std::string::npos ? name.size() : dot) - start);
    if (!IsLabelChars(part)) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

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

Violations ValidateWorkload(const v1::Workload& workload, int max_pod_sets,
                            std::vector<ResourceAmounts>* per_pod) {
  Violations out;
  if (per_pod != nullptr) per_pod->clear();
  const v1::WorkloadSpec& spec = workload.spec();
  CheckName(&out, "metadata.namespace", workload.metadata().namespace_(), true);
  CheckName(&out, "metadata.name", workload.metadata().name(), false);
  CheckObjectMeta(&out, "metadata", workload.metadata());
  if (workload.spec().has_priority()) CheckPriority(&out, "spec.priority", workload.spec().priority());
  if (spec.queue_name().empty()) {
    out.push_back({"spec.queueName", "Required value: the LocalQueue to queue in"});
  } else {
    CheckName(&out, "spec.queueName", spec.queue_name(), false);
  }
  if (spec.pod_sets().empty()) {
    out.push_back({"spec.podSets", "Required value: at least one pod set"});
  } else if (spec.pod_sets_size() > max_pod_sets) {
    out.push_back({"spec.podSets", absl::StrCat("Too many: ", spec.pod_sets_size(),
                                                ": must have at most ", max_pod_sets, " items")});
  }
  if (spec.has_maximum_execution_time_seconds() && spec.maximum_execution_time_seconds() < 1) {
    out.push_back({"spec.maximumExecutionTimeSeconds",
                   absl::StrCat("Invalid value: ", spec.maximum_execution_time_seconds(),
                                ": must be greater than or equal to 1")});
  }
  std::set<std::string> names;
  int min_counts = 0;
  for (int i = 0; i < spec.pod_sets_size(); ++i) {
    const v1::PodSet& ps = spec.pod_sets(i);
    // The pod set's field path, built only for what there is to report.
    auto f = [i] { return absl::StrCat("spec.podSets[", i, "]"); };
    const std::string name = ps.name().empty() ? "main" : ps.name();
    CheckName(&out, [&] { return f() + ".name"; }, name, true);
    if (!names.insert(name).second) {
      out.push_back({f() + ".name", absl::StrCat("Duplicate value: ", Quote(name))});
    }
    if (ps.count() < 0) {
      out.push_back({f() + ".count", absl::StrCat("Invalid value: ", ps.count(),
                                                ": must be greater than or equal to 0")});
    }
    if (ps.has_min_count()) {
      ++min_counts;
      if (ps.min_count() < 1 || ps.min_count() > ps.count()) {
        out.push_back({f() + ".minCount",
                       absl::StrCat("Invalid value: ", ps.min_count(),
                                    ": must be between 1 and the pod set's count (", ps.count(),
                                    ")")});
      }
    }
    const v1::PodSpec& pod = ps.template_().spec();
    // Field names are built only for what there is to report.
    auto check_container = [&](absl::string_view list, int index, const v1::Container& c) {
      auto cf = [&] { return absl::StrCat(f(), ".template.spec.", list, "[", index, "]"); };
      CheckResourceList(&out, [&] { return cf() + ".resources.requests"; },
                        c.resources().requests());
      CheckResourceList(&out, [&] { return cf() + ".resources.limits"; }, c.resources().limits());
      if (c.resources().requests().count("pods") || c.resources().limits().count("pods")) {
        out.push_back({cf() + ".resources[pods]",
                       "Invalid value: \"pods\": the key is reserved for internal kueue use"});
      }
      if (c.resources().limits().empty()) return;
      // Sorted, so the violations come out in the same order every time (protobuf maps are not).
      const std::map<std::string, std::string> requests(c.resources().requests().begin(),
                                                        c.resources().requests().end());
      for (const auto& [res, text] : requests) {
        auto it = c.resources().limits().find(res);
        if (it == c.resources().limits().end()) continue;
        auto req = ParseQuantity(res, text);
        auto lim = ParseQuantity(res, it->second);
        if (req.ok() && lim.ok() && *req > *lim) {
          out.push_back({absl::StrCat(cf(), ".resources.requests[", res, "]"),
                         absl::StrCat("Invalid value: ", Quote(text),
                                      ": must be less than or equal to ", res, " limit of ",
                                      it->second)});
        }
      }
    };
    for (int c = 0; c < pod.containers_size(); ++c) {
      check_container("containers", c, pod.containers(c));
    }
    for (int c = 0; c < pod.init_containers_size(); ++c) {
      check_container("initContainers", c, pod.init_containers(c));
    }
    CheckResourceList(&out, [&] { return f() + ".template.spec.overhead"; }, pod.overhead());
    CheckResourceList(&out, [&] { return f() + ".template.spec.resources.requests"; },
                      pod.resources().requests());
    CheckResourceList(&out, [&] { return f() + ".template.spec.resources.limits"; },
                      pod.resources().limits());
    if (!pod.tolerations().empty()) {
      CheckTolerations(&out, f() + ".template.spec.tolerations", pod.tolerations());
    }
    if (pod.has_priority()) CheckPriority(&out, f() + ".template.spec.priority", pod.priority());
    if (!ps.template_().labels().empty()) {
      CheckLabels(&out, f() + ".template.labels", ps.template_().labels());
    }
    if (!ps.template_().annotations().empty()) {
      CheckAnnotations(&out, f() + ".template.annotations", ps.template_().annotations());
    }
  }
  if (min_counts > 1) out.push_back({"spec.podSets", "at most one podSet can use minCount"});
  CheckRemoteJobDocument(&out, "remoteJob.manifest", workload.remote_job().manifest());
  CheckRemoteJobDocument(&out, "remoteJob.status", workload.remote_job().status());
  if (out.empty()) {
    for (FieldViolation& v : ValidateWorkloadTotals(spec, per_pod)) out.push_back(std::move(v));
  }
  return out;
}

void CheckRemoteJobDocument(Violations* out, absl::string_view field, const std::string& text) {
  constexpr size_t kMaxBytes = 1 << 20;
  if (text.empty()) return;
  if (text.size() > kMaxBytes) {
    out->push_back({std::string(field), absl::StrCat("Too long: may not be more than ", kMaxBytes, " bytes")});
    return;
  }
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    out->push_back({std::string(field), "Invalid value: must be a JSON object (it does not parse)"});
  } else if (!doc.is_object()) {
    out->push_back({std::string(field), absl::StrCat("Invalid value: must be a JSON object, not ",
                                        doc.type_name())});
  }
}

Violations ValidateWorkloadTotals(const v1::WorkloadSpec& spec,
                                  std::vector<ResourceAmounts>* per_pod) {
  Violations out;
  if (per_pod != nullptr) {
    per_pod->clear();
    per_pod->reserve(spec.pod_sets_size());
  }
  static constexpr absl::string_view largest =
      "the largest quantity is 2^63-1 (9223372036854775807) units";
  ResourceAmounts workload;
  for (int i = 0; i < spec.pod_sets_size(); ++i) {
    const v1::PodSet& ps = spec.pod_sets(i);
    auto f = [i] { return absl::StrCat("spec.podSets[", i, "]"); };  // only for a violation
    ResourceAmounts requests = PodRequestsExact(ps.template_().spec());
    for (const auto& [resource, per_pod] : requests) {
      if (!IsQuantity(per_pod)) {
        out.push_back({f() + ".template.spec",
                       absl::StrCat("Invalid value: the request of one pod for ", resource,
                                    " (", FormatQuantity(resource, per_pod), ") is too large: ",
                                    largest)});
        continue;
      }
      const Amount total = per_pod * ps.count();
      if (!IsQuantity(total)) {
        out.push_back({f() + ".count",
                       absl::StrCat("Invalid value: ", ps.count(), ": ", ps.count(), " pods of ",
                                    FormatQuantity(resource, per_pod), " ", resource, " request ",
                                    FormatQuantity(resource, total), ": ", largest)});
        continue;
      }
      workload[resource] += total;
    }
    if (per_pod != nullptr) per_pod->push_back(std::move(requests));
  }
  for (const auto& [resource, total] : workload) {
    if (out.empty() && !IsQuantity(total)) {
      out.push_back({"spec.podSets",
                     absl::StrCat("Invalid value: the pod sets together request ",
                                  FormatQuantity(resource, total), " ", resource, ": ", largest)});
    }
  }
  if (per_pod != nullptr && !out.empty()) per_pod->clear();
  return out;
}

}  // namespace admitd::engine
