// AuthorizationPolicy: what each caller of admitd may do, in Kubernetes RBAC's spirit. A policy
// file binds roles to subjects (users, groups, service accounts of a cluster), each binding
// optionally narrowed to namespaces and to clusters:
//
//   apiVersion: admitd.io/v1
//   kind: AuthorizationPolicy
//   roles:                          # optional, beside the built-in ones
//   - name: auditor
//     rules: [{verbs: [get, list, watch], resources: [events, workloads]}]
//   bindings:
//   - name: shim-c1                 # optional, for messages
//     role: shim
//     clusters: [c1]                # only workloads and pods of these clusters
//     subjects:
//     - {kind: ServiceAccount, cluster: c1, namespace: admitd-system, name: admitd-shim}
//     - {kind: User, name: shim-c1}   # a client certificate's CN
//   - role: team
//     namespaces: [team-a, team-a-*]  # only these namespaces (a trailing * is a prefix)
//     subjects: [{kind: Group, name: team-a}]
//
// Built-in roles:
//   admin   every verb on every resource.
//   shim    workloads: submit, resize, release, delete, setactive, get, list, watch; pods:
//           report, get, list, watch; namespaces: apply, delete, get, list, watch; get, list
//           and watch on the queue objects and events. Needs `clusters`.
//   team    workloads: submit, resize, release, delete, setactive, setadmissioncheckstate, get,
//           list, watch; get, list and watch on the queue objects, namespaces and events.
//           Needs `namespaces`.
//   reader  get, list and watch on everything.
//
// Scopes: a binding's namespaces restrict requests that have a namespace (a request about a
// cluster-scoped object is decided by the role alone); its clusters restrict requests about
// workloads and pods, whose cluster must be listed (a workload that belongs to no cluster is
// outside every cluster-bound binding). A request is allowed when any binding of the caller
// allows it.
//
// Thread safety: immutable after Parse; const methods may be called from any thread.
#ifndef ADMITD_SERVER_AUTH_AUTHORIZATION_POLICY_H_
#define ADMITD_SERVER_AUTH_AUTHORIZATION_POLICY_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/auth/identity.h"

namespace admitd::auth {

enum class Verb : uint8_t {
  kGet, kList, kWatch, kApply, kDelete, kSubmit, kResize, kRelease, kSetActive,
  kSetAdmissionCheckState, kReport, kRun, kImport,
};
enum class Resource : uint8_t {
  kResourceFlavors, kCohorts, kClusterQueues, kLocalQueues, kWorkloadPriorityClasses,
  kAdmissionChecks, kNamespaces, kWorkloads, kPods, kScheduler, kEvents, kMultiKueueConfigs,
  kMultiKueueClusters,
};
inline constexpr int kVerbCount = 13;
inline constexpr int kResourceCount = 13;
// grants[verb][resource]
using Grants = std::array<std::array<bool, kResourceCount>, kVerbCount>;

// "get", "setadmissioncheckstate", "clusterqueues", ...: the names the policy file uses.
absl::string_view NameOf(Verb verb);
absl::string_view NameOf(Resource resource);

// One call as the policy sees it.
struct Request {
  Verb verb = Verb::kGet;
  Resource resource = Resource::kWorkloads;
  std::string namespace_;  // empty: a cluster-scoped object (or every namespace, for list/watch)
  std::string cluster;     // the workload's or pods' cluster; empty: none
};

// Where an identity may use one verb on one resource: the union of its bindings' scopes.
class Scope {
 public:
  bool Allows(absl::string_view namespace_, absl::string_view cluster) const;
  // Some binding allows the namespace for at least one cluster (or without a cluster).
  bool AllowsNamespace(absl::string_view namespace_) const;
  bool AllowsEverything() const;
  bool AllowsNothing() const { return grants_.empty(); }
  // Keeps `owner` (the policy the grants point into) alive as long as this scope.
  void Hold(std::shared_ptr<const void> owner) { owner_ = std::move(owner); }

 private:
  friend class AuthorizationPolicy;
  struct Grant {
    const std::vector<std::string>* namespaces;  // null: any
    const std::vector<std::string>* clusters;    // null: any
  };
  std::vector<Grant> grants_;
  bool cluster_bound_resource_ = false;
  std::shared_ptr<const void> owner_;
};

class AuthorizationPolicy {
 public:
  // INVALID_ARGUMENT naming each bad field in Kubernetes' style, e.g.
  // `bindings[2].subjects[0].kind: Unsupported value: "Robot": supported values: "Group",
  // "ServiceAccount", "User"`; several errors joined with "; ".
  static absl::StatusOr<std::shared_ptr<const AuthorizationPolicy>> Parse(absl::string_view yaml);
  // Parse of the file's text; FAILED_PRECONDITION when it cannot be read.
  static absl::StatusOr<std::shared_ptr<const AuthorizationPolicy>> Load(const std::string& path);

  // OK, or PERMISSION_DENIED naming the caller and what it may not do, e.g. `serviceaccount
  // system:serviceaccount:admitd-system:admitd-shim (cluster c1) may not release workloads of
  // cluster c2 in namespace team-a`.
  absl::Status Authorize(const Identity& identity, const Request& request) const;
  // Where `identity` may use `verb` on `resource` (to filter lists and watches).
  Scope ScopeOf(const Identity& identity, Verb verb, Resource resource) const;
  // The names of the bindings that apply to `identity` (for logs).
  std::vector<std::string> BindingsOf(const Identity& identity) const;

  struct Binding {
    std::string name;
    std::string role;
    Grants allowed = {};
    std::vector<std::string> namespaces;  // empty: any
    std::vector<std::string> clusters;    // empty: any
  };

 private:
  AuthorizationPolicy() = default;
  // Indexes (into bindings_, in policy order) of the bindings whose subjects match `identity`.
  // Asked on every call: no allocation for up to eight matching bindings.
  absl::InlinedVector<size_t, 8> Matching(const Identity& identity) const;

  std::vector<Binding> bindings_;
  // Subject -> indexes into bindings_.
  std::multimap<std::string, size_t> by_user_;
  std::multimap<std::string, size_t> by_group_;
  // "<cluster>/<sa user name>"; cluster "" for a subject without one (any cluster).
  std::multimap<std::string, size_t> by_service_account_;
};

}  // namespace admitd::auth

#endif  // ADMITD_SERVER_AUTH_AUTHORIZATION_POLICY_H_
