#include "clients/shim/integrations/raycluster/ray_spec_rules.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/kube/json_fields.h"
#include "clients/shim/webhook/webhook_json.h"
#include "common/kueue_keys.h"

namespace admitd::shim {
namespace {

constexpr char kHead[] = "head";
// jobframework.MaxPodSets: the head and at most 17 worker groups.
constexpr size_t kMaxPodSets = 18;

// What the TAS checks know of one pod set.
struct TasPodSet {
  std::string name;
  int64_t count = 0;
  std::string meta_path;  // "<...>.template.metadata"
  nlohmann::json annotations;
  std::optional<std::string> required, preferred, group;
};

// NewPodSetTopologyRequest(...).Build()'s error for these annotations, "" when it builds.
std::string BuildError(const nlohmann::json& a, const JobWebhookOptions& options) {
  const std::optional<std::string> unconstrained = Entry(a, kUnconstrainedTopology);
  const bool required = Entry(a, kRequiredTopology).has_value(),
             preferred = Entry(a, kPreferredTopology).has_value();
  const std::optional<std::string> constraints = Entry(a, kSliceConstraints);
  const std::optional<std::string> slice_required = Entry(a, kSliceRequiredTopology);
  const std::optional<std::string> slice_size = Entry(a, kSliceSize);
  std::string error;
  if (!required && !preferred) {
    if (unconstrained) {
      if (!GoParseBool(*unconstrained, &error)) return error;
    } else if (!((slice_required && slice_size) || constraints)) {
      return "";
    }
  }
  if (options.tas_multi_layer_topology && constraints) {
    const nlohmann::json layers = nlohmann::json::parse(*constraints, nullptr, false);
    if (!layers.is_array()) {
      return "failed to parse multi-layer topology constraints annotation";
    }
    if (layers.empty() || layers.size() > 3) {
      return absl::StrCat("topology constraints must contain between 1 and 3 entries: got ",
                          layers.size());
    }
  } else if (slice_required && slice_size && !GoParseInt32(*slice_size)) {
    return absl::StrCat("strconv.ParseInt: parsing ", GoQuote(*slice_size), ": invalid syntax");
  }
  return "";
}

// jobframework.ValidateSliceSizeAnnotationUpperBound.
void CheckSliceBound(const TasPodSet& ps, std::vector<FieldError>* errs) {
  const std::string path = ps.meta_path + ".annotations";
  if (std::optional<std::string> size = Entry(ps.annotations, kSliceSize)) {
    const std::optional<int32_t> v = GoParseInt32(*size);
    if (!v) {
      errs->push_back(FieldError::Invalid(absl::StrCat(path, "[", kSliceSize, "]"), GoQuote(*size),
                                          "must be a numeric value"));
      return;
    }
    if (*v > ps.count) {
      errs->push_back(
          FieldError::Invalid(absl::StrCat(path, "[", kSliceSize, "]"), GoQuote(*size),
                              absl::StrCat("must not be greater than pod set count ", ps.count)));
    }
  }
  if (std::optional<std::string> text = Entry(ps.annotations, kSliceConstraints)) {
    const nlohmann::json layers = nlohmann::json::parse(*text, nullptr, false);
    if (layers.is_array() && !layers.empty() && layers[0].is_object() &&
        Field(layers[0], "size").is_number_integer()) {
      const int64_t first = layers[0]["size"].get<int64_t>();
      if (first > ps.count) {
        errs->push_back(
            FieldError::Invalid(absl::StrCat(path, "[", kSliceConstraints, "]"), absl::StrCat(first),
                                absl::StrCat("must not be greater than pod set count ", ps.count)));
      }
    }
  }
}

// jobframework.ValidatePodSetGroupingTopology: pod sets named in one group come in pairs, one of
// them of a single pod, with the same required or preferred topology.
void CheckGroups(const std::vector<TasPodSet>& pod_sets, std::vector<FieldError>* errs) {
  std::vector<std::pair<std::string, std::vector<const TasPodSet*>>> groups;  // in order
  for (const TasPodSet& ps : pod_sets) {
    if (!ps.group) continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == *ps.group; });
    if (it == groups.end()) {
      groups.push_back({*ps.group, {&ps}});
    } else {
      it->second.push_back(&ps);
    }
  }
  const auto key = [](const TasPodSet& ps) {
    return absl::StrCat(ps.meta_path, ".annotations[", kPodSetGroupName, "]");
  };
  for (const auto& [name, members] : groups) {
    if (members.size() != 2) {
      for (const TasPodSet* ps : members) {
        errs->push_back(FieldError::Invalid(
            key(*ps), GoQuote(name),
            absl::StrCat("can only define groups of exactly 2 pod sets, got: ", members.size(),
                         " pod set(s)")));
      }
      continue;
    }
    const TasPodSet& a = *members[0];
    const TasPodSet& b = *members[1];
    if (a.count != 1 && b.count != 1) {
      const std::string detail = absl::StrCat(
          "can only define groups where at least one pod set has only 1 replica, got: ", a.count,
          " replica(s) and ", b.count, " replica(s) in the group");
      errs->push_back(FieldError::Invalid(key(a), GoQuote(name), detail));
      errs->push_back(FieldError::Invalid(key(b), GoQuote(name), detail));
    }
    const bool valid = (a.required || a.preferred) && (b.required || b.preferred) &&
                       a.required == b.required && a.preferred == b.preferred;
    if (!valid) {
      const std::string group = name;  // a structured binding cannot be captured (C++17)
      const auto detail = [&](const TasPodSet& other) {
        return absl::StrCat("must specify '", kRequiredTopology, "' or '", kPreferredTopology,
                            "' topology consistent with '", other.meta_path,
                            ".annotations' in group '", group, "'");
      };
      errs->push_back(FieldError::Invalid(a.meta_path + ".annotations", "", detail(b)));
      errs->push_back(FieldError::Invalid(b.meta_path + ".annotations", "", detail(a)));
    }
  }
}

}  // namespace

const nlohmann::json& RayWorkerGroups(const nlohmann::json& spec) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& groups = Field(spec, "workerGroupSpecs");
  return groups.is_array() ? groups : kEmpty;
}

std::string RayWorkerPath(const std::string& prefix, size_t i) {
  return absl::StrCat(prefix, ".workerGroupSpecs[", i, "]");
}

void CheckRayGroups(const nlohmann::json& spec, const std::string& prefix,
                    std::vector<FieldError>* errs) {
  const nlohmann::json& groups = RayWorkerGroups(spec);
  if (const size_t pod_sets = groups.size() + 1; pod_sets > kMaxPodSets) {
    errs->push_back(FieldError{prefix + ".workerGroupSpecs", "Too many", absl::StrCat(pod_sets),
                               absl::StrCat("must have at most ", kMaxPodSets, " items")});
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    if (Entry(groups[i], "groupName") == std::optional<std::string>(kHead)) {
      errs->push_back(
          FieldError::Forbidden(RayWorkerPath(prefix, i) + ".groupName",
                                absl::StrCat(GoQuote(kHead), " is reserved for the head group")));
    }
  }
}

void CheckRayTopology(const nlohmann::json& spec, const std::string& prefix,
                      const JobWebhookOptions& options, std::vector<FieldError>* errs,
                      std::string* denial) {
  const std::string head_meta = prefix + ".headGroupSpec.template.metadata";
  std::vector<TasPodSet> pod_sets;
  auto add = [&](std::string name, int64_t count, std::string meta_path,
                 const nlohmann::json& pod_template) {
    TasPodSet ps{std::move(name), count, std::move(meta_path),
                 Field(Field(pod_template, "metadata"), "annotations")};
    // Build takes the required topology before the preferred one.
    ps.required = Entry(ps.annotations, kRequiredTopology);
    if (!ps.required) ps.preferred = Entry(ps.annotations, kPreferredTopology);
    if (ps.required || ps.preferred) ps.group = Entry(ps.annotations, kPodSetGroupName);
    pod_sets.push_back(std::move(ps));
  };
  add(kHead, 1, head_meta, Field(Field(spec, "headGroupSpec"), "template"));
  const nlohmann::json& groups = RayWorkerGroups(spec);
  for (size_t i = 0; i < groups.size(); ++i) {
    const nlohmann::json& replicas = Field(groups[i], "replicas");
    const nlohmann::json& hosts = Field(groups[i], "numOfHosts");
    int64_t count = replicas.is_number_integer() ? replicas.get<int64_t>() : 1;
    if (hosts.is_number_integer() && hosts.get<int64_t>() > 1) count *= hosts.get<int64_t>();
    add(absl::AsciiStrToLower(Entry(groups[i], "groupName").value_or("")), count,
        RayWorkerPath(prefix, i) + ".template.metadata", Field(groups[i], "template"));
  }
  std::string build_error;
  for (const TasPodSet& ps : pod_sets) {
    if (build_error.empty()) build_error = BuildError(ps.annotations, options);
  }
  std::vector<FieldError> found =
      TasPodSetRequestErrors(head_meta, pod_sets[0].annotations, options.tas_multi_layer_topology);
  if (build_error.empty()) {
    CheckGroups(pod_sets, &found);
    for (size_t i = 0; i < pod_sets.size(); ++i) {
      if (i > 0) {
        std::vector<FieldError> tas = TasPodSetRequestErrors(
            pod_sets[i].meta_path, pod_sets[i].annotations, options.tas_multi_layer_topology);
        found.insert(found.end(), tas.begin(), tas.end());
      }
      CheckSliceBound(pod_sets[i], &found);
    }
  }
  if (found.empty() && !build_error.empty() && denial->empty()) *denial = build_error;
  errs->insert(errs->end(), found.begin(), found.end());
}


}  // namespace admitd::shim
