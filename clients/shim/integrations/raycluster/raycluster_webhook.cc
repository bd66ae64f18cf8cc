#include "clients/shim/integrations/raycluster/raycluster_webhook.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/framework/tas_rules.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

constexpr char kHead[] = "head";
constexpr int kMaxPodSets = 18;
constexpr char kHeadMeta[] = "spec.headGroupSpec.template.metadata";

const nlohmann::json& Groups(const nlohmann::json& rc) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& groups = Field(Field(rc, "spec"), "workerGroupSpecs");
  return groups.is_array() ? groups : kEmpty;
}

const nlohmann::json& HeadTemplate(const nlohmann::json& rc) {
  return Field(Field(Field(rc, "spec"), "headGroupSpec"), "template");
}

std::string WorkerPath(size_t i) { return absl::StrCat("spec.workerGroupSpecs[", i, "]"); }

bool Managed(const nlohmann::json& rc, const JobWebhookOptions& options) {
  return options.manage_jobs_without_queue_name ||
         !Entry(Field(Field(rc, "metadata"), "labels"), kQueueNameLabel).value_or("").empty();
}

bool Elastic(const nlohmann::json& rc, const JobWebhookOptions& options) {
  return options.elastic_jobs && Entry(Field(Field(rc, "metadata"), "annotations"),
                                       kElasticJobAnnotation) == std::optional<std::string>("true");
}

// utilpod.GateTemplate: the elastic gate appended to the template at `tokens` of `doc` (object
// members, and indexes of the arrays on the way) unless there.
void Gate(const nlohmann::json& doc, const nlohmann::json& pod_template,
          std::vector<std::string> tokens, std::vector<nlohmann::json>* ops) {
  const nlohmann::json& gates = Field(Field(pod_template, "spec"), "schedulingGates");
  const nlohmann::json gate = {{"name", kElasticJobAnnotation}};
  for (const char* t : {"spec", "schedulingGates"}) tokens.push_back(t);
  if (!gates.is_array()) {
    AddAt(doc, tokens, nlohmann::json::array({gate}), ops, ArrayParents::kIndex);
    return;
  }
  if (ListHas(gates, kElasticJobAnnotation, "name")) return;
  ops->push_back(
      {{"op", "add"}, {"path", PointerOf(tokens, tokens.size()) + "/-"}, {"value", gate}});
}

// ---- Validation ----------------------------------------------------------------------------

// A template's scheduling gates as Go prints a []PodSchedulingGate value: JSON, null when unset.
std::string GatesText(const nlohmann::json& pod_template) {
  const nlohmann::json& gates = Field(Field(pod_template, "spec"), "schedulingGates");
  if (!gates.is_array()) return "null";
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& g : gates) out.push_back({{"name", Entry(g, "name").value_or("")}});
  return out.dump();
}

bool HasElasticGate(const nlohmann::json& pod_template) {
  return ListHas(Field(Field(pod_template, "spec"), "schedulingGates"), kElasticJobAnnotation, "name");
}

void CheckElastic(const nlohmann::json& rc, std::vector<FieldError>* errs) {
  const nlohmann::json& groups = Groups(rc);
  for (size_t i = 0; i < groups.size(); ++i) {
    const nlohmann::json& t = Field(groups[i], "template");
    if (!HasElasticGate(t)) {
      errs->push_back(FieldError::Invalid(WorkerPath(i) + ".template.spec.schedulingGates",
                                          GatesText(t),
                                          "an elastic job must have the ElasticJobSchedulingGate"));
    }
  }
  if (!HasElasticGate(HeadTemplate(rc))) {
    errs->push_back(FieldError::Invalid("spec.headGroupSpec.template.spec.schedulingGates",
                                        GatesText(HeadTemplate(rc)),
                                        "an elastic job must have the ElasticJobSchedulingGate"));
  }
  const nlohmann::json& spec = Field(rc, "spec");
  if (Field(spec, "enableInTreeAutoscaling") == true &&
      Entry(spec, "managedBy") == std::optional<std::string>(kMultiKueueControllerName)) {
    errs->push_back(FieldError::Forbidden(
        "spec.enableInTreeAutoscaling",
        "in-tree autoscaling is not supported for a MultiKueue-managed elastic RayCluster"));
  }
}

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

// The RayCluster webhook's validateTopologyRequest.
void CheckTopology(const nlohmann::json& rc, const JobWebhookOptions& options,
                   std::vector<FieldError>* errs, std::string* denial) {
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
  add(kHead, 1, kHeadMeta, HeadTemplate(rc));
  const nlohmann::json& groups = Groups(rc);
  for (size_t i = 0; i < groups.size(); ++i) {
    const nlohmann::json& replicas = Field(groups[i], "replicas");
    const nlohmann::json& hosts = Field(groups[i], "numOfHosts");
    int64_t count = replicas.is_number_integer() ? replicas.get<int64_t>() : 1;
    if (hosts.is_number_integer() && hosts.get<int64_t>() > 1) count *= hosts.get<int64_t>();
    add(absl::AsciiStrToLower(Entry(groups[i], "groupName").value_or("")), count,
        WorkerPath(i) + ".template.metadata", Field(groups[i], "template"));
  }
  std::string build_error;
  for (const TasPodSet& ps : pod_sets) {
    if (build_error.empty()) build_error = BuildError(ps.annotations, options);
  }
  std::vector<FieldError> found =
      TasPodSetRequestErrors(kHeadMeta, pod_sets[0].annotations, options.tas_multi_layer_topology);
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

}  // namespace

std::vector<nlohmann::json> DefaultRayCluster(const nlohmann::json& rc, JobWebhookContext& context,
                                              const JobWebhookOptions& options) {
  // §1.3 steps 1 to 3 (the managedBy default for MultiKueue, step 4, is not done here).
  std::vector<nlohmann::json> ops = DefaultFramework(rc, context, options);
  // Every pod of an elastic cluster, the head's too, starts gated until its slice is admitted.
  if (Elastic(rc, options)) {
    Gate(rc, HeadTemplate(rc), {"spec", "headGroupSpec", "template"}, &ops);
    const nlohmann::json& groups = Groups(rc);
    for (size_t i = 0; i < groups.size(); ++i) {
      Gate(rc, Field(groups[i], "template"),
           {"spec", "workerGroupSpecs", absl::StrCat(i), "template"}, &ops);
    }
  }
  return ops;
}

std::vector<FieldError> ValidateRayClusterCreate(const nlohmann::json& rc,
                                                 const JobWebhookOptions& options,
                                                 std::string* denial) {
  std::vector<FieldError> errs;
  if (Managed(rc, options)) {
    const nlohmann::json& spec = Field(rc, "spec");
    if (Elastic(rc, options)) {
      CheckElastic(rc, &errs);
    } else if (Field(spec, "enableInTreeAutoscaling") == true) {
      errs.push_back(FieldError::Invalid(
          "spec.enableInTreeAutoscaling", "true",
          absl::StrCat("a kueue-managed RayCluster can use autoscaling only as an elastic job: "
                       "enable the ElasticJobsViaWorkloadSlices feature gate and set the ",
                       GoQuote(kElasticJobAnnotation), ": ", GoQuote("true"), " annotation")));
    }
    const nlohmann::json& groups = Groups(rc);
    if (const size_t pod_sets = groups.size() + 1; pod_sets > kMaxPodSets) {
      errs.push_back(FieldError{"spec.workerGroupSpecs", "Too many", absl::StrCat(pod_sets),
                                absl::StrCat("must have at most ", kMaxPodSets, " items")});
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      if (Entry(groups[i], "groupName") == std::optional<std::string>(kHead)) {
        errs.push_back(
            FieldError::Forbidden(WorkerPath(i) + ".groupName",
                                  absl::StrCat(GoQuote(kHead), " is reserved for the head group")));
      }
    }
  }
  std::vector<FieldError> common = ValidateFrameworkCreate(rc, options);
  errs.insert(errs.end(), common.begin(), common.end());
  if (options.topology_aware_scheduling) CheckTopology(rc, options, &errs, denial);
  return errs;
}

std::vector<FieldError> ValidateRayClusterUpdate(const nlohmann::json& old_rc,
                                                 const nlohmann::json& new_rc,
                                                 JobWebhookContext& context,
                                                 const JobWebhookOptions& options,
                                                 std::string* denial) {
  // ShouldValidateRayOrSparkJobOnUpdate (ValidateRayAndSparkJobUpdates on): a cluster that is or
  // was managed.
  if (!Managed(new_rc, options) && !Managed(old_rc, options)) return {};
  std::vector<FieldError> errs = ValidateFrameworkUpdate(old_rc, new_rc, context, options);
  std::vector<FieldError> create = ValidateRayClusterCreate(new_rc, options, denial);
  errs.insert(errs.end(), create.begin(), create.end());
  return errs;
}

KindWebhook RayClusterWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                              bool enabled) {
  KindWebhook webhook{.kind = "RayCluster",
                      .mutate_path = "/mutate-ray-io-v1-raycluster",
                      .validate_path = "/validate-ray-io-v1-raycluster",
                      .enabled = enabled};
  webhook.default_create = [&context, options](const nlohmann::json& rc) {
    return DefaultRayCluster(rc, context, options);
  };
  webhook.validate = [&context, options](const nlohmann::json* old_rc, const nlohmann::json& rc,
                                         std::vector<std::string>*, std::string* denial) {
    return old_rc == nullptr ? ValidateRayClusterCreate(rc, options, denial)
                             : ValidateRayClusterUpdate(*old_rc, rc, context, options, denial);
  };
  return webhook;
}

WebhookReply AnswerRayClusterReview(const std::string& path, const std::string& body,
                                    JobWebhookContext& context, const JobWebhookOptions& options,
                                    bool enabled) {
  return AnswerReview(RayClusterWebhook(context, options, enabled), path, body);
}

}  // namespace admitd::shim
