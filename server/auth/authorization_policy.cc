#include "server/auth/authorization_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace admitd::auth {
namespace {

constexpr absl::string_view kVerbNames[kVerbCount] = {
    "get",     "list",    "watch",     "apply",  "delete", "submit", "resize",
    "release", "setactive", "setadmissioncheckstate", "report", "run", "import"};
constexpr absl::string_view kResourceNames[kResourceCount] = {
    "resourceflavors", "cohorts",    "clusterqueues", "localqueues", "workloadpriorityclasses",
    "admissionchecks", "namespaces", "workloads",     "pods",        "scheduler",
    "events",          "multikueueconfigs", "multikueueclusters"};

void Grant(Grants& g, std::initializer_list<Verb> verbs, std::initializer_list<Resource> resources) {
  for (Verb v : verbs) {
    for (Resource r : resources) g[static_cast<int>(v)][static_cast<int>(r)] = true;
  }
}

constexpr std::initializer_list<Resource> kQueueObjects = {
    Resource::kResourceFlavors, Resource::kCohorts, Resource::kClusterQueues,
    Resource::kLocalQueues, Resource::kWorkloadPriorityClasses, Resource::kAdmissionChecks,
    Resource::kMultiKueueConfigs, Resource::kMultiKueueClusters};
constexpr std::initializer_list<Verb> kRead = {Verb::kGet, Verb::kList, Verb::kWatch};

// The built-in roles; false when `name` is none of them.
bool BuiltIn(const std::string& name, Grants& g) {
  if (name == "admin") {
    for (auto& row : g) row.fill(true);
  } else if (name == "shim") {
    Grant(g, {Verb::kSubmit, Verb::kResize, Verb::kRelease, Verb::kDelete, Verb::kSetActive,
              Verb::kGet, Verb::kList, Verb::kWatch},
          {Resource::kWorkloads});
    Grant(g, {Verb::kReport, Verb::kGet, Verb::kList, Verb::kWatch}, {Resource::kPods});
    Grant(g, {Verb::kApply, Verb::kDelete, Verb::kGet, Verb::kList, Verb::kWatch},
          {Resource::kNamespaces});
    Grant(g, kRead, kQueueObjects);
    Grant(g, kRead, {Resource::kEvents});
  } else if (name == "team") {
    Grant(g, {Verb::kSubmit, Verb::kResize, Verb::kRelease, Verb::kDelete, Verb::kSetActive,
              Verb::kSetAdmissionCheckState, Verb::kGet, Verb::kList, Verb::kWatch},
          {Resource::kWorkloads});
    Grant(g, kRead, kQueueObjects);
    Grant(g, kRead, {Resource::kNamespaces, Resource::kEvents});
  } else if (name == "reader") {
    for (int r = 0; r < kResourceCount; ++r) {
      for (Verb v : kRead) g[static_cast<int>(v)][r] = true;
    }
  } else {
    return false;
  }
  return true;
}

// Resources whose requests carry a cluster (that clusters of a binding restrict).
bool ClusterBound(Resource r) { return r == Resource::kWorkloads || r == Resource::kPods; }

bool NamespaceMatches(const std::vector<std::string>& patterns, absl::string_view ns) {
  for (const std::string& p : patterns) {
    if (!p.empty() && p.back() == '*' ? absl::StartsWith(ns, p.substr(0, p.size() - 1))
                                      : p == ns) {
      return true;
    }
  }
  return false;
}

std::string Quoted(const std::vector<absl::string_view>& names) {
  std::vector<std::string> q;
  for (absl::string_view n : names) q.push_back(absl::StrCat("\"", n, "\""));
  std::sort(q.begin(), q.end());
  return absl::StrJoin(q, ", ");
}

// Collects errors with their field paths.
class Errors {
 public:
  void Add(const std::string& path, const std::string& what) {
    list_.push_back(absl::StrCat(path, ": ", what));
  }
  // A mapping with only `known` keys; unknown keys are errors (a typo must not change access).
  bool Mapping(const YAML::Node& node, const std::string& path,
               std::initializer_list<absl::string_view> known) {
    if (!node.IsMap()) {
      Add(path, "Invalid value: must be a mapping");
      return false;
    }
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        Add(path.empty() ? key : absl::StrCat(path, ".", key),
            absl::StrCat("Unsupported value: unknown field (known: ",
                         absl::StrJoin(known, ", "), ")"));
      }
    }
    return true;
  }
  // The string at node[key]; "" with an error when it is missing (and required) or not a string.
  std::string String(const YAML::Node& node, const std::string& path, const char* key,
                     bool required) {
    const YAML::Node v = node[key];
    const std::string at = absl::StrCat(path, path.empty() ? "" : ".", key);
    if (!v || v.IsNull()) {
      if (required) Add(at, "Required value");
      return "";
    }
    if (!v.IsScalar()) {
      Add(at, "Invalid value: must be a string");
      return "";
    }
    if (required && v.Scalar().empty()) Add(at, "Required value");
    return v.Scalar();
  }
  std::vector<std::string> Strings(const YAML::Node& node, const std::string& path,
                                   const char* key) {
    std::vector<std::string> out;
    const YAML::Node v = node[key];
    const std::string at = absl::StrCat(path, ".", key);
    if (!v || v.IsNull()) return out;
    if (!v.IsSequence()) {
      Add(at, "Invalid value: must be a list of strings");
      return out;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].IsScalar() || v[i].Scalar().empty()) {
        Add(absl::StrCat(at, "[", i, "]"), "Invalid value: must be a non-empty string");
      } else {
        out.push_back(v[i].Scalar());
      }
    }
    return out;
  }
  bool empty() const { return list_.empty(); }
  std::string Joined() const { return absl::StrJoin(list_, "; "); }

 private:
  std::vector<std::string> list_;
};

// A role's rules into `g`.
void ParseRules(const YAML::Node& rules, const std::string& path, Errors& errors, Grants& g) {
  if (!rules || !rules.IsSequence() || rules.size() == 0) {
    errors.Add(path, "Required value: a role needs rules");
    return;
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string at = absl::StrCat(path, "[", i, "]");
    if (!errors.Mapping(rules[i], at, {"verbs", "resources"})) continue;
    std::vector<std::string> verbs = errors.Strings(rules[i], at, "verbs");
    std::vector<std::string> resources = errors.Strings(rules[i], at, "resources");
    if (verbs.empty()) errors.Add(at + ".verbs", "Required value");
    if (resources.empty()) errors.Add(at + ".resources", "Required value");
    // Names -> indexes ("*": all of them), each unknown name an error.
    const auto indexes = [&](const std::vector<std::string>& names, const char* field,
                             const absl::string_view* known, int count) {
      std::vector<int> out;
      for (size_t j = 0; j < names.size(); ++j) {
        if (names[j] == "*") {
          for (int k = 0; k < count; ++k) out.push_back(k);
          continue;
        }
        const absl::string_view* it = std::find(known, known + count, names[j]);
        if (it != known + count) {
          out.push_back(static_cast<int>(it - known));
          continue;
        }
        std::vector<absl::string_view> supported(known, known + count);
        supported.push_back("*");
        errors.Add(absl::StrCat(at, ".", field, "[", j, "]"),
                   absl::StrCat("Unsupported value: \"", names[j],
                                "\": supported values: ", Quoted(supported)));
      }
      return out;
    };
    const std::vector<int> vs = indexes(verbs, "verbs", kVerbNames, kVerbCount);
    const std::vector<int> rs = indexes(resources, "resources", kResourceNames, kResourceCount);
    for (int v : vs) {
      for (int r : rs) g[v][r] = true;
    }
  }
}

}  // namespace

absl::string_view NameOf(Verb verb) { return kVerbNames[static_cast<int>(verb)]; }
absl::string_view NameOf(Resource resource) { return kResourceNames[static_cast<int>(resource)]; }

bool Scope::Allows(absl::string_view namespace_, absl::string_view cluster) const {
  for (const Grant& g : grants_) {
    if (g.namespaces != nullptr && !namespace_.empty() &&
        !NamespaceMatches(*g.namespaces, namespace_)) {
      continue;
    }
    if (g.clusters != nullptr && cluster_bound_resource_ &&
        std::find(g.clusters->begin(), g.clusters->end(), cluster) == g.clusters->end()) {
      continue;
    }
    return true;
  }
  return false;
}

bool Scope::AllowsNamespace(absl::string_view namespace_) const {
  for (const Grant& g : grants_) {
    if (g.namespaces == nullptr || namespace_.empty() ||
        NamespaceMatches(*g.namespaces, namespace_)) {
      return true;
    }
  }
  return false;
}

bool Scope::AllowsEverything() const {
  for (const Grant& g : grants_) {
    if (g.namespaces == nullptr && (g.clusters == nullptr || !cluster_bound_resource_)) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::shared_ptr<const AuthorizationPolicy>> AuthorizationPolicy::Load(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::shared_ptr<const AuthorizationPolicy>> policy = Parse(text.str());
  if (!policy.ok()) {
    return absl::Status(policy.status().code(), absl::StrCat(path, ": ", policy.status().message()));
  }
  return policy;
}

absl::StatusOr<std::shared_ptr<const AuthorizationPolicy>> AuthorizationPolicy::Parse(
    absl::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not YAML: ", e.what()));
  }
  Errors errors;
  std::shared_ptr<AuthorizationPolicy> policy(new AuthorizationPolicy());
  if (!errors.Mapping(root, "", {"apiVersion", "kind", "roles", "bindings"})) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  if (const std::string v = errors.String(root, "", "apiVersion", true);
      !v.empty() && v != "admitd.io/v1") {
    errors.Add("apiVersion", absl::StrCat("Unsupported value: \"", v,
                                          "\": supported values: \"admitd.io/v1\""));
  }
  if (const std::string k = errors.String(root, "", "kind", true);
      !k.empty() && k != "AuthorizationPolicy") {
    errors.Add("kind", absl::StrCat("Unsupported value: \"", k,
                                    "\": supported values: \"AuthorizationPolicy\""));
  }
  // Custom roles.
  std::map<std::string, std::shared_ptr<Grants>> roles;
  if (const YAML::Node list = root["roles"]; list && !list.IsNull()) {
    if (!list.IsSequence()) errors.Add("roles", "Invalid value: must be a list");
    for (size_t i = 0; list.IsSequence() && i < list.size(); ++i) {
      const std::string at = absl::StrCat("roles[", i, "]");
      if (!errors.Mapping(list[i], at, {"name", "rules"})) continue;
      const std::string name = errors.String(list[i], at, "name", true);
      auto grants = std::make_shared<Grants>();
      Grants scratch = {};
      if (!name.empty() && BuiltIn(name, scratch)) {
        errors.Add(at + ".name", absl::StrCat("Invalid value: \"", name,
                                              "\": a built-in role cannot be redefined"));
      } else if (!name.empty() && roles.count(name) > 0) {
        errors.Add(at + ".name", absl::StrCat("Duplicate value: \"", name, "\""));
      }
      ParseRules(list[i]["rules"], at + ".rules", errors, *grants);
      if (!name.empty()) roles.emplace(name, grants);
    }
  }
  const YAML::Node bindings = root["bindings"];
  if (!bindings || !bindings.IsSequence()) {
    errors.Add("bindings", "Required value: a list of bindings");
  }
  for (size_t i = 0; bindings && bindings.IsSequence() && i < bindings.size(); ++i) {
    const std::string at = absl::StrCat("bindings[", i, "]");
    const YAML::Node b = bindings[i];
    if (!errors.Mapping(b, at, {"name", "role", "namespaces", "clusters", "subjects"})) continue;
    Binding binding;
    binding.role = errors.String(b, at, "role", true);
    binding.name = errors.String(b, at, "name", false);
    if (binding.name.empty()) binding.name = absl::StrCat(at, " (", binding.role, ")");
    if (!binding.role.empty() && !BuiltIn(binding.role, binding.allowed)) {
      auto custom = roles.find(binding.role);
      if (custom == roles.end()) {
        errors.Add(at + ".role", absl::StrCat("Not found: \"", binding.role, "\""));
      } else {
        binding.allowed = *custom->second;
      }
    }
    binding.namespaces = errors.Strings(b, at, "namespaces");
    binding.clusters = errors.Strings(b, at, "clusters");
    if (binding.role == "shim" && binding.clusters.empty()) {
      errors.Add(at + ".clusters", "Required value: the role shim is bound to clusters");
    }
    if (binding.role == "team" && binding.namespaces.empty()) {
      errors.Add(at + ".namespaces", "Required value: the role team is bound to namespaces");
    }
    const size_t index = policy->bindings_.size();
    const YAML::Node subjects = b["subjects"];
    if (!subjects || !subjects.IsSequence() || subjects.size() == 0) {
      errors.Add(at + ".subjects", "Required value: at least one subject");
    }
    for (size_t j = 0; subjects && subjects.IsSequence() && j < subjects.size(); ++j) {
      const std::string sat = absl::StrCat(at, ".subjects[", j, "]");
      if (!errors.Mapping(subjects[j], sat, {"kind", "name", "namespace", "cluster"})) continue;
      const std::string kind = errors.String(subjects[j], sat, "kind", true);
      const std::string name = errors.String(subjects[j], sat, "name", true);
      const std::string ns = errors.String(subjects[j], sat, "namespace", kind == "ServiceAccount");
      const std::string cluster = errors.String(subjects[j], sat, "cluster", false);
      if (kind == "User" || kind == "Group") {
        if (!ns.empty()) errors.Add(sat + ".namespace", "Forbidden: only for a ServiceAccount");
        if (!cluster.empty()) errors.Add(sat + ".cluster", "Forbidden: only for a ServiceAccount");
        (kind == "User" ? policy->by_user_ : policy->by_group_).emplace(name, index);
      } else if (kind == "ServiceAccount") {
        policy->by_service_account_.emplace(
            absl::StrCat(cluster, "/system:serviceaccount:", ns, ":", name), index);
      } else if (!kind.empty()) {
        errors.Add(sat + ".kind",
                   absl::StrCat("Unsupported value: \"", kind,
                                "\": supported values: \"Group\", \"ServiceAccount\", \"User\""));
      }
    }
    policy->bindings_.push_back(std::move(binding));
  }
  if (!errors.empty()) return absl::InvalidArgumentError(errors.Joined());
  return std::shared_ptr<const AuthorizationPolicy>(std::move(policy));
}

absl::InlinedVector<size_t, 8> AuthorizationPolicy::Matching(const Identity& identity) const {
  absl::InlinedVector<size_t, 8> found;
  if (identity.source == Identity::Source::kAnonymous) return found;
  auto add = [&](const std::multimap<std::string, size_t>& index, const std::string& key) {
    for (auto [it, end] = index.equal_range(key); it != end; ++it) found.push_back(it->second);
  };
  add(by_user_, identity.name);
  for (const std::string& group : identity.groups) add(by_group_, group);
  if (identity.source == Identity::Source::kServiceAccount) {
    add(by_service_account_, absl::StrCat(identity.cluster, "/", identity.name));
    add(by_service_account_, absl::StrCat("/", identity.name));
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

Scope AuthorizationPolicy::ScopeOf(const Identity& identity, Verb verb, Resource resource) const {
  Scope scope;
  scope.cluster_bound_resource_ = ClusterBound(resource);
  for (size_t i : Matching(identity)) {
    const Binding& b = bindings_[i];
    if (!b.allowed[static_cast<int>(verb)][static_cast<int>(resource)]) continue;
    scope.grants_.push_back({b.namespaces.empty() ? nullptr : &b.namespaces,
                             b.clusters.empty() ? nullptr : &b.clusters});
  }
  return scope;
}

absl::Status AuthorizationPolicy::Authorize(const Identity& identity,
                                            const Request& request) const {
  if (ScopeOf(identity, request.verb, request.resource)
          .Allows(request.namespace_, request.cluster)) {
    return absl::OkStatus();
  }
  std::string what = absl::StrCat(identity.Describe(), " may not ", NameOf(request.verb), " ",
                                  NameOf(request.resource));
  if (ClusterBound(request.resource) && !request.cluster.empty()) {
    absl::StrAppend(&what, " of cluster ", request.cluster);
  }
  if (!request.namespace_.empty()) absl::StrAppend(&what, " in namespace ", request.namespace_);
  return absl::PermissionDeniedError(what);
}

std::vector<std::string> AuthorizationPolicy::BindingsOf(const Identity& identity) const {
  std::vector<std::string> out;
  for (size_t i : Matching(identity)) out.push_back(bindings_[i].name);
  return out;
}

}  // namespace admitd::auth
