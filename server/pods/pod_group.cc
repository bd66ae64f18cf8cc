#include "server/pods/pod_group.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/pods/pod_internal.h"
#include "server/pods/role_hash.h"

namespace admitd::pods {

absl::Time internal::ToTime(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void internal::SortByName(std::vector<v1::PodObservation>* pods) {
  std::stable_sort(pods->begin(), pods->end(),
                   [](const v1::PodObservation& a, const v1::PodObservation& b) {
                     if (a.name() != b.name()) return a.name() < b.name();
                     return a.uid() < b.uid();
                   });
}

std::string internal::Label(const v1::PodObservation& pod, const char* key) {
  auto it = pod.labels().find(key);
  return it == pod.labels().end() ? std::string() : it->second;
}

std::string internal::Annotation(const v1::PodObservation& pod, const char* key) {
  auto it = pod.annotations().find(key);
  return it == pod.annotations().end() ? std::string() : it->second;
}

bool internal::HasAnnotation(const v1::PodObservation& pod, const char* key) {
  return pod.annotations().find(key) != pod.annotations().end();
}

// Go's %q for the ASCII strings annotation values usually are.
std::string internal::GoQuote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string internal::LabelPath(const char* key) { return absl::StrCat("metadata.labels[", key, "]"); }
std::string internal::AnnotationPath(const char* key) { return absl::StrCat("metadata.annotations[", key, "]"); }

std::string internal::GroupNamePath(const v1::PodObservation& pod, const PodOptions& options) {
  if (options.workload_identifier_annotations && !Annotation(pod, kGroupNameAnnotation).empty()) {
    return AnnotationPath(kGroupNameAnnotation);
  }
  return LabelPath(kGroupNameLabel);
}

std::vector<std::string> internal::Names(const std::vector<v1::PodObservation>& pods) {
  std::vector<std::string> out;
  out.reserve(pods.size());
  for (const auto& p : pods) out.push_back(p.name());
  return out;
}

void internal::Partition(const std::vector<v1::PodObservation>& pods, std::vector<v1::PodObservation>* active,
               std::vector<v1::PodObservation>* inactive) {
  for (const auto& p : pods) (IsRunnableOrSucceeded(p) ? active : inactive)->push_back(p);
}

std::vector<std::string> internal::FinalizerHolders(const std::vector<v1::PodObservation>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) {
    if (HasManagedFinalizer(p)) out.push_back(p.name());
  }
  return out;
}

v1::OwnerReference internal::PodOwner(const v1::PodObservation& pod, bool controller) {
  v1::OwnerReference ref;
  ref.set_api_version("v1");
  ref.set_kind("Pod");
  ref.set_name(pod.name());
  ref.set_uid(pod.uid());
  ref.set_controller(controller);
  return ref;
}

void internal::FillWorkloadSpec(const v1::PodObservation& pod, absl::string_view queue_name, v1::Workload* wl) {
  wl->mutable_spec()->set_queue_name(std::string(queue_name));
  const std::string wpc = internal::Label(pod, kPriorityClassLabel);
  if (!wpc.empty()) {
    auto* ref = wl->mutable_spec()->mutable_priority_class_ref();
    ref->set_group("kueue.x-k8s.io");
    ref->set_kind("WorkloadPriorityClass");
    ref->set_name(wpc);
  } else if (!pod.spec().priority_class_name().empty()) {
    auto* ref = wl->mutable_spec()->mutable_priority_class_ref();
    ref->set_group("scheduling.k8s.io");
    ref->set_kind("PriorityClass");
    ref->set_name(pod.spec().priority_class_name());
  }
  // A WorkloadPriorityClass label decides the priority (its value, looked up on submission);
  // the pod's own priority (the API server always fills it) counts only without one.
  if (wpc.empty() && pod.spec().has_priority()) {
    wl->mutable_spec()->set_priority(pod.spec().priority());
  }
  if (std::string met = internal::Label(pod, kMaxExecTimeLabel); !met.empty()) {
    int32_t seconds = 0;
    if (absl::SimpleAtoi(met, &seconds) && seconds > 0) {
      wl->mutable_spec()->set_maximum_execution_time_seconds(seconds);
    }
  }
}

std::optional<int32_t> internal::MaxExecTime(const v1::PodObservation& pod) {
  std::string met = internal::Label(pod, kMaxExecTimeLabel);
  int32_t seconds = 0;
  if (met.empty() || !absl::SimpleAtoi(met, &seconds) || seconds <= 0) return std::nullopt;
  return seconds;
}

namespace {

using internal::Annotation;
using internal::AnnotationPath;
using internal::FillWorkloadSpec;
using internal::FinalizerHolders;
using internal::GoQuote;
using internal::GroupNamePath;
using internal::HasAnnotation;
using internal::Label;
using internal::LabelPath;
using internal::MaxExecTime;
using internal::Names;
using internal::Partition;
using internal::PodOwner;
using internal::SortByName;
using internal::ToTime;
using v1::PodObservation;


google::protobuf::Timestamp ToProto(absl::Time t) {
  google::protobuf::Timestamp ts;
  const int64_t ns = absl::ToUnixNanos(t);
  ts.set_seconds(ns / 1000000000);
  ts.set_nanos(static_cast<int32_t>(ns % 1000000000));
  if (ts.nanos() < 0) {
    ts.set_seconds(ts.seconds() - 1);
    ts.set_nanos(ts.nanos() + 1000000000);
  }
  return ts;
}






absl::Time Created(const PodObservation& pod) { return ToTime(pod.creation_timestamp()); }

// cmp.Compare on bools: false < true.
int CompareBool(bool a, bool b) { return a == b ? 0 : (a ? 1 : -1); }

absl::Time LastActiveTime(const PodObservation& pod, absl::Time now) {
  absl::Time last_transition = now;
  for (const v1::Condition& c : pod.conditions()) {
    if (c.type() == "ContainersReady") {
      if (c.status() == "False" && c.reason() == "Failed") {
        last_transition = ToTime(c.last_transition_time());
      }
      break;
    }
  }
  const absl::Time deletion = pod.has_deletion_timestamp() ? ToTime(pod.deletion_timestamp()) : now;
  return last_transition < deletion ? last_transition : deletion;
}

// Builds the pod sets from the pods' roles (Kueue's constructGroupPodSets).
absl::StatusOr<std::vector<v1::PodSet>> ConstructGroupPodSets(const std::vector<PodObservation>& pods) {
  std::vector<v1::PodSet> result;
  for (const auto& pod : pods) {
    if (!IsRunnableOrSucceeded(pod)) continue;
    absl::StatusOr<std::string> role = RoleHash(pod);
    if (!role.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("failed to calculate pod role hash: ", role.status().message()));
    }
    auto it = std::find_if(result.begin(), result.end(),
                           [&](const v1::PodSet& ps) { return ps.name() == *role; });
    if (it != result.end()) {
      it->set_count(it->count() + 1);
      continue;
    }
    v1::PodSet ps;
    ps.set_name(*role);
    ps.set_count(1);
    *ps.mutable_template_()->mutable_spec() = pod.spec();
    result.push_back(std::move(ps));
  }
  std::sort(result.begin(), result.end(),
            [](const v1::PodSet& a, const v1::PodSet& b) { return a.name() < b.name(); });
  return result;
}

absl::StatusOr<std::vector<v1::PodSet>> ConstructGroupPodSetsFast(const std::vector<PodObservation>& pods,
                                                                  int64_t total) {
  for (const auto& pod : pods) {
    if (!IsRunnableOrSucceeded(pod)) continue;
    absl::StatusOr<std::string> role = RoleHash(pod);
    if (!role.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("failed to calculate pod role hash: ", role.status().message()));
    }
    v1::PodSet ps;
    ps.set_name(*role);
    ps.set_count(static_cast<int32_t>(total));
    *ps.mutable_template_()->mutable_spec() = pod.spec();
    return std::vector<v1::PodSet>{std::move(ps)};
  }
  return absl::InvalidArgumentError("failed to find a runnable pod in the group");
}

bool WorkloadHasOwner(const v1::Workload& wl, const PodObservation& pod) {
  for (const auto& o : wl.metadata().owner_references()) {
    if (o.kind() == "Pod" && o.name() == pod.name() && o.uid() == pod.uid()) return true;
  }
  return false;
}

}  // namespace

absl::Status ValidateOptions(const PodOptions& options) {
  if (options.max_roles < 1 || options.max_roles > kMaxRolesLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod group role limit must be between 1 and ", kMaxRolesLimit, ", got ",
                     options.max_roles));
  }
  return absl::OkStatus();
}

// ---- Single pods --------------------------------------------------------------------------------

std::string SinglePodWorkloadName(absl::string_view pod_name, absl::string_view pod_uid) {
  const std::string input = absl::StrCat("Pod\n\n", pod_name, "\n", pod_uid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  char hex[7];
  std::snprintf(hex, sizeof(hex), "%02x%02x%02x", digest[0], digest[1], digest[2]);
  std::string prefix = absl::StrCat("pod-", pod_name);
  constexpr size_t kMaxPrefix = 253 - 1 - 5;
  if (prefix.size() > kMaxPrefix) prefix.resize(kMaxPrefix);
  return absl::StrCat(prefix, "-", std::string(hex, 5));
}

v1::Workload BuildSinglePodWorkload(const PodObservation& pod, absl::string_view queue_name) {
  v1::Workload wl;
  auto* meta = wl.mutable_metadata();
  meta->set_name(SinglePodWorkloadName(pod.name(), pod.uid()));
  meta->set_namespace_(pod.namespace_());
  *meta->add_owner_references() = PodOwner(pod, /*controller=*/true);
  FillWorkloadSpec(pod, queue_name, &wl);
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name(kDefaultPodSetName);
  ps->set_count(1);
  *ps->mutable_template_()->mutable_spec() = pod.spec();
  return wl;
}

// ---- Groups -------------------------------------------------------------------------------------

void SortActivePods(std::vector<PodObservation>* pods) {
  std::stable_sort(pods->begin(), pods->end(), [](const PodObservation& a, const PodObservation& b) {
    // Pods with the finalizer, then ungated pods, then older pods come first (are kept).
    if (int c = CompareBool(HasManagedFinalizer(b), HasManagedFinalizer(a)); c != 0) return c < 0;
    if (int c = CompareBool(IsGated(a), IsGated(b)); c != 0) return c < 0;
    return Created(a) < Created(b);
  });
}

void SortInactivePods(std::vector<PodObservation>* pods, absl::Time now) {
  std::stable_sort(pods->begin(), pods->end(), [now](const PodObservation& a, const PodObservation& b) {
    if (int c = CompareBool(HasManagedFinalizer(b), HasManagedFinalizer(a)); c != 0) return c < 0;
    const absl::Time la = LastActiveTime(a, now), lb = LastActiveTime(b, now);
    if (la != lb) return la > lb;
    return Created(a) < Created(b);
  });
}

absl::StatusOr<std::vector<v1::PodSet>> GroupPodSets(std::vector<PodObservation> pods,
                                                     const PodOptions& options) {
  SortByName(&pods);
  for (const auto& pod : pods) {
    if (!DeclaresSets(pod) || !IsRunnableOrSucceeded(pod)) continue;
    absl::StatusOr<DeclaredSets> declared = ParseDeclaredSets(pod, options);
    if (!declared.ok()) return declared.status();
    return declared->sets;
  }
  if (!pods.empty() && IsFastAdmission(pods.front())) {
    absl::StatusOr<int64_t> total = GroupTotalCount(pods.front(), options);
    if (!total.ok()) return total.status();
    return ConstructGroupPodSetsFast(pods, *total);
  }
  return ConstructGroupPodSets(pods);
}

GroupComposition ComposeGroup(std::vector<PodObservation> pods, const PodOptions& options) {
  GroupComposition out;
  SortByName(&pods);
  if (pods.empty()) {
    out.outcome = GroupComposition::Outcome::kInvalid;
    out.error = "no pods in the group";
    return out;
  }
  std::vector<PodObservation> active, inactive;
  Partition(pods, &active, &inactive);
  // Inactive pods are finalized first, whatever happens next.
  out.finalize = FinalizerHolders(inactive);

  if (std::any_of(pods.begin(), pods.end(), DeclaresSets)) {
    internal::ComposeDeclaredGroup(pods, options, &out);
    return out;
  }
  const PodObservation& ref = pods.front();
  const std::string group = GroupName(ref, options);
  const auto invalid = [&](std::string error) {
    out.outcome = GroupComposition::Outcome::kInvalid;
    out.error = std::move(error);
    return out;
  };
  if (!HasAnnotation(ref, kGroupTotalCountAnnotation) && !Label(ref, kGroupRoleLabel).empty()) {
    // A worker of a declared group reported before the pod that declares the sets.
    out.outcome = GroupComposition::Outcome::kWaiting;
    out.error = absl::StrCat("'", group, "' group has no runnable pod with the '", kGroupSetsAnnotation,
                             "' annotation");
    out.events.push_back({"Warning", "ErrWorkloadCompose", out.error, ref.name()});
    return out;
  }

  // validatePodGroupMetadata
  absl::StatusOr<int64_t> total = GroupTotalCount(ref, options);
  if (!total.ok()) return invalid(std::string(total.status().message()));
  if (auto it = ref.labels().find(kGroupPodIndexLabel); it != ref.labels().end()) {
    uint64_t index = 0;
    if (!absl::SimpleAtoi(it->second, &index) || it->second.empty() ||
        !absl::ascii_isdigit(static_cast<unsigned char>(it->second[0]))) {
      return invalid(absl::StrCat("incorrect label value ", GoQuote(it->second), " for Pod \"",
                                  ref.namespace_(), "/", ref.name(),
                                  "\": invalid unsigned integer: strconv.ParseUint: parsing ",
                                  GoQuote(it->second), ": invalid syntax"));
    }
    if (index >= static_cast<uint64_t>(*total)) {
      return invalid(absl::StrCat("incorrect label value ", GoQuote(it->second), " for Pod \"",
                                  ref.namespace_(), "/", ref.name(),
                                  "\": validation error: value should be less than ", *total));
    }
  }
  const bool fast = IsFastAdmission(ref);
  if (!fast && static_cast<int64_t>(active.size()) < *total) {
    out.outcome = GroupComposition::Outcome::kWaiting;
    out.error = absl::StrCat("'", group, "' group has fewer runnable pods than expected");
    out.events.push_back({"Warning", "ErrWorkloadCompose", out.error, ref.name()});
    return out;
  }
  const std::string queue = QueueName(ref);
  for (const auto& pod : pods) {
    if (pod.phase() == v1::POD_PHASE_FAILED) continue;
    if (std::string q = QueueName(pod); q != queue) {
      return invalid(absl::StrCat("pods '", ref.name(), "' and '", pod.name(),
                                  "' has different queue names: ", queue, "!=", q));
    }
    absl::StatusOr<int64_t> tc = GoAtoi(Annotation(pod, kGroupTotalCountAnnotation));
    if (!tc.ok()) {
      return invalid(absl::StrCat("failed to extract '", kGroupTotalCountAnnotation,
                                  "' annotation from the pod '", pod.name(), "': ",
                                  tc.status().message()));
    }
    if (*tc != *total) {
      return invalid(absl::StrCat("pods '", ref.name(), "' and '", pod.name(), "' has different '",
                                  kGroupTotalCountAnnotation, "' values: ", *total, "!=", *tc));
    }
  }

  // Excess pods: the tail of the active pods in keep-first order.
  std::vector<PodObservation> members = pods;
  if (int64_t excess = static_cast<int64_t>(active.size()) - *total; excess > 0) {
    SortActivePods(&active);
    for (size_t i = active.size() - excess; i < active.size(); ++i) {
      out.delete_excess.push_back(active[i].name());
      if (!active[i].has_deletion_timestamp()) {
        out.events.push_back({"Normal", "ExcessPodDeleted", "Excess pod deleted", active[i].name()});
      }
    }
    active.resize(active.size() - excess);
    members = active;
  }

  absl::StatusOr<std::vector<v1::PodSet>> pod_sets =
      fast ? ConstructGroupPodSetsFast(members, *total) : ConstructGroupPodSets(members);
  if (!pod_sets.ok()) return invalid(std::string(pod_sets.status().message()));
  if (static_cast<int>(pod_sets->size()) > options.max_roles) {
    return invalid(absl::StrCat("pod group can't include more than ", options.max_roles, " roles"));
  }

  v1::Workload wl;
  auto* meta = wl.mutable_metadata();
  meta->set_name(group);
  meta->set_namespace_(ref.namespace_());
  (*meta->mutable_annotations())[kIsGroupWorkloadAnnotation] = "true";
  for (const auto& pod : members) *meta->add_owner_references() = PodOwner(pod, /*controller=*/false);
  FillWorkloadSpec(ref, queue, &wl);
  for (auto& ps : *pod_sets) *wl.mutable_spec()->add_pod_sets() = std::move(ps);
  out.outcome = GroupComposition::Outcome::kCreate;
  out.events.push_back({"Normal", "CreatedWorkload",
                        absl::StrCat("Created Workload: ", ref.namespace_(), "/", group), ref.name()});
  out.workload = std::move(wl);
  return out;
}

absl::StatusOr<GroupMatch> MatchGroupWorkload(std::vector<PodObservation> pods, const v1::Workload& workload,
                                              bool workload_finished, absl::Time now,
                                              const PodOptions& options) {
  GroupMatch out;
  SortByName(&pods);
  if (pods.empty()) return out;
  const PodObservation& ref = pods.front();
  const std::string group = GroupName(ref, options);
  std::vector<PodObservation> active, inactive;
  Partition(pods, &active, &inactive);

  auto annotation = workload.metadata().annotations().find(kIsGroupWorkloadAnnotation);
  if (annotation == workload.metadata().annotations().end() || annotation->second != "true") {
    out.name_conflict = true;
    out.finalize = FinalizerHolders(inactive);
    out.events.push_back({"Warning", "WorkloadNameConflict",
                          absl::StrCat("A Workload named \"", group,
                                       "\" already exists but is not a pod group workload; this pod "
                                       "group cannot be admitted"),
                          ref.name()});
    return out;
  }
  const RoleResolver roles = RoleResolver::ForWorkload(workload);
  // A declared group's spec comes from the pod declaring the sets.
  const PodObservation* declaring = nullptr;
  for (const auto& pod : pods) {
    if (DeclaresSets(pod) && pod.phase() != v1::POD_PHASE_FAILED) {
      declaring = &pod;
      break;
    }
  }
  const PodObservation& spec_pod = roles.declared() && declaring != nullptr ? *declaring : ref;
  // A changed maximum execution time makes the Workload stale.
  const std::optional<int32_t> met = MaxExecTime(spec_pod);
  const bool wl_has_met = workload.spec().has_maximum_execution_time_seconds();
  if (wl_has_met != met.has_value() ||
      (met.has_value() && *met != workload.spec().maximum_execution_time_seconds())) {
    return out;  // not equivalent
  }

  const bool fast = IsFastAdmission(ref);
  // Each pod's role, computed once; "" is a declared group's pod of no declared set.
  std::map<std::string, std::string> role_of;
  for (const auto& pod : pods) {
    absl::StatusOr<std::string> role = roles.RoleOf(pod);
    if (!role.ok()) return role.status();
    role_of[pod.name()] = *role;
    if (role->empty()) {
      out.undeclared.push_back(pod.name());
      if (!IsRunnableOrSucceeded(pod) && HasManagedFinalizer(pod)) out.finalize.push_back(pod.name());
    }
  }
  std::vector<PodObservation> kept;
  for (const v1::PodSet& ps : workload.spec().pod_sets()) {
    std::vector<PodObservation> role_active, role_inactive;
    for (const auto* list : {&active, &inactive}) {
      for (const auto& pod : *list) {
        if (role_of[pod.name()] == ps.name()) (list == &active ? role_active : role_inactive).push_back(pod);
      }
    }
    const int n_active = static_cast<int>(role_active.size());
    if (fast) {
      out.absent_pods += (ps.count() > 0 && n_active == 0) ? 1 : 0;
    } else if (roles.declared()) {
      // Pods the driver has not created yet are not missing; failed ones are.
      out.absent_pods += std::min(static_cast<int>(role_inactive.size()), std::max(0, ps.count() - n_active));
    } else {
      out.absent_pods += std::max(0, ps.count() - n_active);
    }
    if (int excess = n_active - ps.count(); excess > 0) {
      SortActivePods(&role_active);
      for (int i = n_active - excess; i < n_active; ++i) {
        out.delete_excess.push_back(role_active[i].name());
        if (!role_active[i].has_deletion_timestamp()) {
          out.events.push_back({"Normal", "ExcessPodDeleted", "Excess pod deleted", role_active[i].name()});
        }
      }
      role_active.resize(n_active - excess);
    }
    kept.insert(kept.end(), role_active.begin(), role_active.end());
    const int n_inactive = static_cast<int>(role_inactive.size());
    if (int finalizable = std::min(n_inactive, n_inactive + n_active - ps.count()); finalizable > 0) {
      SortInactivePods(&role_inactive, now);
      for (int i = n_inactive - finalizable; i < n_inactive; ++i) {
        out.finalize.push_back(role_inactive[i].name());
      }
      role_inactive.resize(n_inactive - finalizable);
    }
    kept.insert(kept.end(), role_inactive.begin(), role_inactive.end());
  }

  // equivalentToWorkload; a declared group's Workload is equivalent while its declaration is.
  absl::StatusOr<std::vector<v1::PodSet>> job_sets =
      roles.declared() ? std::vector<v1::PodSet>() : ConstructGroupPodSets(kept);
  if (!job_sets.ok()) return job_sets.status();
  bool equivalent = !kept.empty() && workload.metadata().name() == group;
  if (roles.declared() && declaring != nullptr &&
      workload.metadata().annotations().at(kGroupSetsAnnotation) != Annotation(*declaring, kGroupSetsAnnotation)) {
    equivalent = false;
  }
  if (equivalent && !workload_finished && workload.spec().pod_sets_size() < static_cast<int>(job_sets->size())) {
    equivalent = false;
  }
  int j = -1;
  for (size_t i = 0; equivalent && i < job_sets->size(); ++i) {
    for (++j; j < workload.spec().pod_sets_size(); ++j) {
      if ((*job_sets)[i].name() == workload.spec().pod_sets(j).name()) break;
    }
    if (j == workload.spec().pod_sets_size()) {
      equivalent = false;
    } else if (!workload_finished && workload.spec().pod_sets(j).count() < (*job_sets)[i].count()) {
      equivalent = false;
    }
  }
  if (!equivalent) {
    // Kueue deletes the Workload and takes no other action on this pass.
    GroupMatch stale;
    return stale;
  }
  out.equivalent = true;
  out.kept = Names(kept);
  for (const auto& pod : kept) {
    if (!WorkloadHasOwner(workload, pod)) out.owners_to_add.push_back(pod.name());
  }
  if (!out.owners_to_add.empty()) {
    out.events.insert(out.events.begin(),
                      {"Normal", "OwnerReferencesAdded",
                       absl::StrCat("Added ", out.owners_to_add.size(), " owner reference(s)"),
                       workload.metadata().name(), /*on_workload=*/true});
  }
  return out;
}

FinishedState SinglePodFinished(const PodObservation& pod) {
  FinishedState s;
  if (!IsTerminated(pod)) return s;
  s.finished = true;
  s.success = pod.phase() == v1::POD_PHASE_SUCCEEDED;
  s.reason = s.success ? "Succeeded" : "Failed";
  s.message = pod.status_message();
  return s;
}

FinishedState GroupFinished(std::vector<PodObservation> pods, const PodOptions& options,
                            const v1::Workload* workload) {
  FinishedState s;
  SortByName(&pods);
  if (pods.empty() || IsServing(pods.front())) return s;
  const bool declared =
      workload != nullptr && workload->metadata().annotations().count(kGroupSetsAnnotation) != 0;
  absl::StatusOr<int64_t> total = absl::InvalidArgumentError("");
  if (declared) {
    int64_t sum = 0;
    for (const v1::PodSet& ps : workload->spec().pod_sets()) sum += ps.count();
    total = sum;
  } else {
    total = GroupTotalCount(pods.front(), options);
  }
  if (!total.ok()) {
    s.message = "failed to check if pod group is finished";
    return s;
  }
  int64_t succeeded = 0;
  bool running = false;
  bool unretriable = false;
  bool declaring_succeeded = false;
  for (const auto& pod : pods) {
    if (pod.phase() == v1::POD_PHASE_SUCCEEDED) ++succeeded;
    if (!IsTerminated(pod)) running = true;
    if (IsUnretriable(pod)) unretriable = true;
    if (declared && DeclaresSets(pod) && pod.phase() == v1::POD_PHASE_SUCCEEDED) declaring_succeeded = true;
  }
  if (succeeded == *total || (!running && (unretriable || declaring_succeeded))) {
    s.finished = true;
    s.reason = "Succeeded";
    s.message = absl::StrCat("Pods succeeded: ", succeeded, "/", *total, ".");
  }
  return s;
}

ConditionUpdate WaitingForReplacementPodsCondition(const v1::Workload& workload, int absent_pods,
                                                   absl::Time now) {
  ConditionUpdate out;
  const v1::Condition* existing = nullptr;
  const v1::Condition* evicted = nullptr;
  for (const auto& c : workload.status().conditions()) {
    if (c.type() == kWaitingForReplacementPods) existing = &c;
    if (c.type() == "Evicted") evicted = &c;
  }
  const bool want_true = absent_pods > 0;
  if (existing == nullptr && !want_true) return out;
  v1::Condition cond;
  if (existing == nullptr) {
    cond.set_type(kWaitingForReplacementPods);
    out.updated = true;
  } else {
    cond = *existing;
  }
  if (want_true) {
    if (evicted != nullptr && evicted->status() == "True") {
      if (cond.reason() != evicted->reason()) cond.set_reason(evicted->reason()), out.updated = true;
      if (cond.message() != evicted->message()) cond.set_message(evicted->message()), out.updated = true;
    } else if (cond.status() != "True") {
      cond.set_reason("PodsFailed");
      cond.set_message("Some Failed pods need replacement");
      out.updated = true;
    }
    if (cond.status() != "True") cond.set_status("True"), out.updated = true;
  } else if (cond.status() != "False") {
    cond.set_status("False");
    cond.set_reason("PodsReady");
    cond.set_message("No pods need replacement");
    out.updated = true;
  }
  if (out.updated) {
    cond.set_observed_generation(workload.metadata().generation());
    *cond.mutable_last_transition_time() = ToProto(now);
  }
  out.condition = std::move(cond);
  return out;
}

absl::StatusOr<std::vector<v1::ReclaimablePod>> ReclaimablePods(std::vector<PodObservation> pods,
                                                                const PodOptions& options,
                                                                const v1::Workload* workload) {
  std::vector<v1::ReclaimablePod> result;
  SortByName(&pods);
  if (pods.empty() || GroupName(pods.front(), options).empty() || IsServing(pods.front())) return result;
  const RoleResolver roles = workload != nullptr ? RoleResolver::ForWorkload(*workload) : RoleResolver();
  for (const auto& pod : pods) {
    if (pod.phase() != v1::POD_PHASE_SUCCEEDED) continue;
    absl::StatusOr<std::string> role = roles.RoleOf(pod);
    if (!role.ok()) return role.status();
    if (role->empty()) continue;
    auto it = std::find_if(result.begin(), result.end(),
                           [&](const v1::ReclaimablePod& r) { return r.name() == *role; });
    if (it != result.end()) {
      it->set_count(it->count() + 1);
    } else {
      v1::ReclaimablePod r;
      r.set_name(*role);
      r.set_count(1);
      result.push_back(std::move(r));
    }
  }
  return result;
}

}  // namespace admitd::pods
