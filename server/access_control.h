// AccessControl: who is calling each RPC and whether the authorization policy lets them. The
// caller is the verified client certificate of the connection (its subject CN the user name,
// its O values the groups), else the bearer token of the call's `authorization` metadata
// (verified by a TokenVerifier: Kubernetes service-account and OIDC tokens), else anonymous.
// Without a policy every call is allowed (identities still name callers in the audit trail);
// with one, an anonymous call is UNAUTHENTICATED and a call the policy does not allow is
// PERMISSION_DENIED, naming the caller and the missing permission.
//
// Verified identities are cached (a certificate for as long as the connection presents it, a
// token for 10 s), so a check costs a hash lookup and the policy's decision.
//
// Thread safety: all methods may be called from any thread.
#ifndef ADMITD_SERVER_ACCESS_CONTROL_H_
#define ADMITD_SERVER_ACCESS_CONTROL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/objects.pb.h"
#include "admitd/v1/queue_service.pb.h"
#include "server/auth/authorization_policy.h"
#include "server/auth/identity.h"
#include "server/config.h"

namespace admitd {

// Verifies a bearer token: the identity it proves, or UNAUTHENTICATED saying why not.
using TokenVerifier =
    std::function<absl::StatusOr<auth::Identity>(absl::string_view token, absl::Time now)>;

// A TokenVerifier over the authentication configuration at `path`
// (server/auth/token_authenticator.h).
absl::StatusOr<TokenVerifier> LoadTokenVerifier(const std::string& path);

class AccessControl {
 public:
  // `policy` null: every call allowed. `tokens` empty: bearer tokens are refused
  // (UNAUTHENTICATED) rather than ignored, so a caller learns its token is not taken.
  AccessControl(std::shared_ptr<const auth::AuthorizationPolicy> policy, TokenVerifier tokens,
                std::function<absl::Time()> clock = [] { return absl::Now(); });

  bool enforcing() const { return enforcing_; }

  // Re-reads the policy from `path` when the file changed, checked at most once per `interval`
  // at a call. A file that does not parse keeps the policy in force (and is logged).
  void ReloadPolicyFrom(std::string path, absl::Duration interval);

  // The caller of `rpc`: UNAUTHENTICATED for a bearer token that does not verify.
  absl::StatusOr<auth::Identity> Identify(const grpc::ServerContextBase& rpc) const;
  // Identify, then the policy on `request`: the caller when allowed.
  absl::StatusOr<auth::Identity> Check(const grpc::ServerContextBase& rpc,
                                       const auth::Request& request) const;
  // The policy's decision alone, for checks that need the object first (a workload's cluster).
  absl::Status Authorize(const auth::Identity& identity, const auth::Request& request) const;
  // Where the caller may use `verb` on `resource` (everywhere without a policy).
  std::shared_ptr<const auth::Scope> ScopeOf(const auth::Identity& identity, auth::Verb verb,
                                             auth::Resource resource) const;

 private:
  absl::StatusOr<auth::Identity> FromCertificate(const std::string& pem) const;
  absl::StatusOr<auth::Identity> FromToken(absl::string_view token) const;

  // The policy in force, read again first when the check is due.
  std::shared_ptr<const auth::AuthorizationPolicy> Policy() const;

  const bool enforcing_;
  std::string policy_path_;  // set once, before calls arrive
  absl::Duration policy_interval_ = absl::Seconds(2);
  mutable std::atomic<int64_t> policy_next_check_ns_{0};
  mutable absl::Mutex policy_mu_;
  mutable std::shared_ptr<const auth::AuthorizationPolicy> policy_ ABSL_GUARDED_BY(policy_mu_);
  mutable std::string policy_stamp_ ABSL_GUARDED_BY(policy_mu_);
  const TokenVerifier tokens_;
  const std::function<absl::Time()> clock_;
  struct CachedToken {
    auth::Identity identity;
    absl::Time until;
  };
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::string, auth::Identity> certificates_ ABSL_GUARDED_BY(mu_);
  mutable absl::flat_hash_map<std::string, CachedToken> tokens_cache_ ABSL_GUARDED_BY(mu_);
};

// The server's access control from its config: the policy file (--authorization-policy, read
// again when it changes) and the token authentication (--authentication-config, read at start).
// INVALID_ARGUMENT or FAILED_PRECONDITION naming the flag and the file.
absl::StatusOr<std::unique_ptr<AccessControl>> MakeAccessControl(
    const Config& config, std::function<absl::Time()> clock);

// For a handler: the caller of `rpc` when `access` (null: none, all allowed) allows `request`,
// else the status to refuse the call with.
absl::StatusOr<auth::Identity> CheckCall(const AccessControl* access,
                                         const grpc::ServerContextBase& rpc,
                                         const auth::Request& request);

// A call on workloads that exist (named, or a job's): the caller's scope is checked on entry
// (refused at once when it may use the verb nowhere in the namespace), and on each workload in
// the sequencer, where its cluster is known.
class WorkloadGate {
 public:
  static absl::StatusOr<WorkloadGate> Open(const AccessControl* access,
                                           const grpc::ServerContextBase& rpc, auth::Verb verb,
                                           const std::string& namespace_);
  // OK when the caller may use the verb on `workload`.
  absl::Status Allows(const v1::Workload& workload) const;
  const auth::Identity& identity() const { return identity_; }

 private:
  const AccessControl* access_ = nullptr;
  auth::Identity identity_;
  auth::Verb verb_ = auth::Verb::kGet;
  std::shared_ptr<const auth::Scope> scope_;  // null: anywhere
};

// What a Watch stream of `rpc`'s caller may carry (null: everything): UNAUTHENTICATED for a
// caller without credentials under a policy, PERMISSION_DENIED for a kind `request` names that
// the caller may watch nowhere.
absl::StatusOr<std::function<bool(const v1::WatchEvent&)>> WatchVisibility(
    const AccessControl& access, const grpc::ServerContextBase& rpc,
    const v1::WatchRequest& request);

// An audit record of an admin change, for Engine::RecordAudit: reporting controller
// "admitd-audit", `reason` (Applied, Deleted, Imported, SchedulingCyclesRun), the object, and a
// note naming the caller.
v1::Event AuditEvent(const auth::Identity& who, const std::string& reason,
                     const std::string& kind, const std::string& namespace_,
                     const std::string& name, const std::string& note);

// The cluster a workload belongs to: the label its cluster's shim gives it (a Job's or a
// RayCluster's `admitd.io/job-cluster`, a pod group's `admitd.io/pod-cluster`); "" for none.
std::string ClusterOf(const v1::Workload& workload);

// The policy's resource for a queue object kind (OBJECT_KIND_WORKLOAD and OBJECT_KIND_EVENT
// too).
auth::Resource ResourceOf(v1::ObjectKind kind);

}  // namespace admitd

#endif  // ADMITD_SERVER_ACCESS_CONTROL_H_
