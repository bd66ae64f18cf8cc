// Pod groups that declare their pod sets up front (KEP-976 "groups of pods where driver generates
// workers"): parsing and checking kueue.x-k8s.io/pod-group-sets, which pod belongs to which set,
// and composing the Workload from the declaration.
#include <algorithm>
#include <map>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/manifest/manifest.h"
#include "common/utf8.h"
#include "server/pods/pod_group.h"
#include "server/pods/pod_internal.h"
#include "server/pods/role_hash.h"

namespace admitd::pods {
namespace {

using internal::Annotation;
using internal::HasAnnotation;
using internal::Label;
using internal::Partition;
using v1::PodObservation;

bool HasTemplate(const v1::PodSet& set) {
  return set.has_template_() && set.template_().spec().containers_size() > 0;
}

bool IsDNS1123Label(const std::string& value) {
  static const std::regex kRe("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return value.size() <= 63 && std::regex_match(value, kRe);
}

// The name of the one set without a template ("" when every set has one).
std::string UntemplatedSet(const std::vector<v1::PodSet>& sets) {
  for (const v1::PodSet& s : sets) {
    if (!HasTemplate(s)) return s.name();
  }
  return "";
}

}  // namespace

int64_t DeclaredSets::Total() const {
  int64_t total = 0;
  for (const v1::PodSet& s : sets) total += s.count();
  return total;
}

bool DeclaresSets(const PodObservation& pod) { return HasAnnotation(pod, kGroupSetsAnnotation); }

namespace {

absl::StatusOr<DeclaredSets> ParseDeclaredSetsQuoting(const PodObservation& pod,
                                                      const PodOptions& options) {
  absl::StatusOr<std::vector<v1::PodSet>> parsed =
      manifest::ParsePodSets(Annotation(pod, kGroupSetsAnnotation));
  if (!parsed.ok()) return parsed.status();
  DeclaredSets out;
  out.sets = *std::move(parsed);
  if (out.sets.empty()) return absl::InvalidArgumentError("at least one pod set is required");
  if (static_cast<int>(out.sets.size()) > options.max_roles) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod group can't include more than ", options.max_roles, " roles"));
  }
  std::vector<std::string> errors;
  std::vector<std::string> untemplated;
  for (size_t i = 0; i < out.sets.size(); ++i) {
    const v1::PodSet& s = out.sets[i];
    if (s.name().empty()) {
      errors.push_back(absl::StrCat("[", i, "].name: Required value"));
    } else if (!IsDNS1123Label(s.name())) {
      errors.push_back(absl::StrCat("[", i, "].name: Invalid value: \"", s.name(),
                                    "\": must be a lowercase RFC 1123 label"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (!s.name().empty() && out.sets[j].name() == s.name()) {
        errors.push_back(absl::StrCat("[", i, "].name: Duplicate value: \"", s.name(), "\""));
      }
    }
    if (s.count() < 1) {
      errors.push_back(absl::StrCat("[", i, "].count: Invalid value: ", s.count(),
                                    ": must be greater than or equal to 1"));
    }
    if (s.has_min_count()) {
      errors.push_back(absl::StrCat("[", i, "].minCount: Forbidden: pod groups are not partially admitted"));
    }
    if (!HasTemplate(s)) untemplated.push_back(s.name());
  }
  if (untemplated.size() > 1) {
    errors.push_back(absl::StrCat("only one pod set may leave its template empty to take the pod's "
                                  "own spec, not ", absl::StrJoin(untemplated, ", ")));
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));

  if (std::string role = Label(pod, kGroupRoleLabel); !role.empty()) {
    if (std::none_of(out.sets.begin(), out.sets.end(), [&](const v1::PodSet& s) { return s.name() == role; })) {
      return absl::InvalidArgumentError(absl::StrCat("the pod's '", kGroupRoleLabel, "' label \"", role,
                                                     "\" names none of the pod sets"));
    }
    out.own_set = role;
  } else if (!untemplated.empty()) {
    out.own_set = untemplated.front();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "the pod belongs to no pod set: give it the '", kGroupRoleLabel,
        "' label or leave one pod set's template empty"));
  }
  out.untemplated_set = untemplated.empty() ? "" : untemplated.front();
  for (v1::PodSet& s : out.sets) {
    if (!HasTemplate(s)) *s.mutable_template_()->mutable_spec() = pod.spec();
  }
  if (HasAnnotation(pod, kGroupTotalCountAnnotation)) {
    absl::StatusOr<int64_t> total = GoAtoi(Annotation(pod, kGroupTotalCountAnnotation));
    if (total.ok() && *total != out.Total()) {
      return absl::InvalidArgumentError(absl::StrCat("the '", kGroupTotalCountAnnotation, "' annotation (",
                                                     *total, ") differs from the pod sets' total count (",
                                                     out.Total(), ")"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<DeclaredSets> ParseDeclaredSets(const PodObservation& pod, const PodOptions& options) {
  absl::StatusOr<DeclaredSets> parsed = ParseDeclaredSetsQuoting(pod, options);
  // Its errors quote the annotation (and the YAML parser's view of it), which may not be UTF-8;
  // they end up in protobuf strings (report errors, events, conditions).
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(), ToValidUtf8(parsed.status().message()));
  }
  return parsed;
}

RoleResolver::RoleResolver(const std::vector<v1::PodSet>& sets, const std::string& untemplated)
    : declared_(true), untemplated_(untemplated) {
  for (const v1::PodSet& s : sets) {
    names_.push_back(s.name());
    std::string hash;
    if (s.name() != untemplated) {
      absl::StatusOr<std::string> h = ComputeRoleHash(s.template_().spec());
      if (h.ok()) hash = *h;
    }
    template_hashes_.push_back(std::move(hash));
  }
}

RoleResolver RoleResolver::ForDeclaration(const DeclaredSets& declared) {
  return RoleResolver(declared.sets, declared.untemplated_set);
}

RoleResolver RoleResolver::ForWorkload(const v1::Workload& workload) {
  auto it = workload.metadata().annotations().find(kGroupSetsAnnotation);
  if (it == workload.metadata().annotations().end()) return RoleResolver();
  std::vector<v1::PodSet> sets(workload.spec().pod_sets().begin(), workload.spec().pod_sets().end());
  absl::StatusOr<std::vector<v1::PodSet>> declared = manifest::ParsePodSets(it->second);
  return RoleResolver(sets, declared.ok() ? UntemplatedSet(*declared) : "");
}

absl::StatusOr<std::string> RoleResolver::RoleOf(const PodObservation& pod) const {
  if (!declared_) {
    absl::StatusOr<std::string> role = RoleHash(pod);
    if (!role.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("failed to calculate pod role hash: ", role.status().message()));
    }
    return role;
  }
  const auto known = [&](const std::string& name) {
    return std::find(names_.begin(), names_.end(), name) != names_.end();
  };
  if (std::string role = Label(pod, kGroupRoleLabel); !role.empty()) {
    return known(role) ? role : std::string();
  }
  if (DeclaresSets(pod)) return known(untemplated_) ? untemplated_ : std::string();
  absl::StatusOr<std::string> hash = RoleHash(pod);
  if (!hash.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("failed to calculate pod role hash: ", hash.status().message()));
  }
  for (size_t i = 0; i < names_.size(); ++i) {
    if (!template_hashes_[i].empty() && template_hashes_[i] == *hash) return names_[i];
  }
  return std::string();
}

std::string UndeclaredRoleMessage(const PodObservation& pod) {
  if (std::string role = Label(pod, kGroupRoleLabel); !role.empty()) {
    return absl::StrCat("pod '", pod.name(), "' has the role \"", role, "\", which is none of the pod sets in '",
                        kGroupSetsAnnotation, "': it stays gated");
  }
  return absl::StrCat("pod '", pod.name(), "' matches the template of none of the pod sets in '",
                      kGroupSetsAnnotation, "' and has no '", kGroupRoleLabel, "' label: it stays gated");
}

void internal::ComposeDeclaredGroup(const std::vector<PodObservation>& pods, const PodOptions& options,
                                    GroupComposition* out) {
  std::vector<PodObservation> active, inactive;
  Partition(pods, &active, &inactive);
  const std::string group = GroupName(pods.front(), options);
  const auto invalid = [&](std::string error) {
    out->outcome = GroupComposition::Outcome::kInvalid;
    out->error = std::move(error);
  };
  auto source = std::find_if(active.begin(), active.end(), DeclaresSets);
  if (source == active.end()) {
    out->outcome = GroupComposition::Outcome::kWaiting;
    out->error = absl::StrCat("'", group, "' group has no runnable pod with the '", kGroupSetsAnnotation,
                              "' annotation");
    out->events.push_back({"Warning", "ErrWorkloadCompose", out->error, pods.front().name()});
    return;
  }
  const PodObservation& ref = *source;
  absl::StatusOr<DeclaredSets> declared = ParseDeclaredSets(ref, options);
  if (!declared.ok()) {
    return invalid(absl::StrCat("invalid '", kGroupSetsAnnotation, "' annotation on pod '", ref.name(),
                                "': ", declared.status().message()));
  }
  const std::string queue = QueueName(ref);
  const std::string declaration = Annotation(ref, kGroupSetsAnnotation);
  for (const PodObservation& pod : pods) {
    if (pod.phase() == v1::POD_PHASE_FAILED) continue;
    if (std::string q = QueueName(pod); q != queue) {
      return invalid(absl::StrCat("pods '", ref.name(), "' and '", pod.name(),
                                  "' has different queue names: ", queue, "!=", q));
    }
    if (DeclaresSets(pod) && Annotation(pod, kGroupSetsAnnotation) != declaration) {
      return invalid(absl::StrCat("pods '", ref.name(), "' and '", pod.name(), "' has different '",
                                  kGroupSetsAnnotation, "' values"));
    }
    if (HasAnnotation(pod, kGroupTotalCountAnnotation)) {
      absl::StatusOr<int64_t> tc = GoAtoi(Annotation(pod, kGroupTotalCountAnnotation));
      if (!tc.ok()) {
        return invalid(absl::StrCat("failed to extract '", kGroupTotalCountAnnotation,
                                    "' annotation from the pod '", pod.name(), "': ", tc.status().message()));
      }
      if (*tc != declared->Total()) {
        return invalid(absl::StrCat("pods '", ref.name(), "' and '", pod.name(), "' has different '",
                                    kGroupTotalCountAnnotation, "' values: ", declared->Total(), "!=", *tc));
      }
    }
  }

  const RoleResolver roles = RoleResolver::ForDeclaration(*declared);
  std::map<std::string, std::vector<PodObservation>> by_set;
  for (const PodObservation& pod : active) {
    absl::StatusOr<std::string> role = roles.RoleOf(pod);
    if (!role.ok()) return invalid(std::string(role.status().message()));
    if (role->empty()) {
      out->undeclared.push_back(pod.name());
      out->events.push_back({"Warning", "ErrWorkloadCompose", UndeclaredRoleMessage(pod), pod.name()});
      continue;
    }
    by_set[*role].push_back(pod);
  }
  std::vector<PodObservation> members;
  for (const v1::PodSet& set : declared->sets) {
    std::vector<PodObservation>& role_pods = by_set[set.name()];
    if (int excess = static_cast<int>(role_pods.size()) - set.count(); excess > 0) {
      SortActivePods(&role_pods);
      for (size_t i = role_pods.size() - excess; i < role_pods.size(); ++i) {
        out->delete_excess.push_back(role_pods[i].name());
        if (!role_pods[i].has_deletion_timestamp()) {
          out->events.push_back({"Normal", "ExcessPodDeleted", "Excess pod deleted", role_pods[i].name()});
        }
      }
      role_pods.resize(role_pods.size() - excess);
    }
    members.insert(members.end(), role_pods.begin(), role_pods.end());
  }
  internal::SortByName(&members);

  v1::Workload wl;
  auto* meta = wl.mutable_metadata();
  meta->set_name(group);
  meta->set_namespace_(ref.namespace_());
  (*meta->mutable_annotations())[kIsGroupWorkloadAnnotation] = "true";
  (*meta->mutable_annotations())[kGroupSetsAnnotation] = declaration;
  for (const PodObservation& pod : members) *meta->add_owner_references() = internal::PodOwner(pod, false);
  internal::FillWorkloadSpec(ref, queue, &wl);
  for (const v1::PodSet& set : declared->sets) *wl.mutable_spec()->add_pod_sets() = set;
  out->outcome = GroupComposition::Outcome::kCreate;
  out->events.push_back({"Normal", "CreatedWorkload",
                         absl::StrCat("Created Workload: ", ref.namespace_(), "/", group), ref.name()});
  out->workload = std::move(wl);
}

}  // namespace admitd::pods
