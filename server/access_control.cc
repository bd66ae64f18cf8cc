#include "server/access_control.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_stamp.h"
#include "common/log.h"
#include "server/auth/token_authenticator.h"

namespace admitd {
namespace {

// Caches stop growing past this; a full cache is emptied (certificates and tokens are few in
// practice: one per shim replica, person or service).
constexpr size_t kMaxCached = 4096;
constexpr absl::Duration kTokenCacheFor = absl::Seconds(10);
// How often the policy file is looked at for changes.
constexpr absl::Duration kPolicyCheckInterval = absl::Seconds(2);

std::string Text(const grpc::string_ref& ref) { return std::string(ref.data(), ref.size()); }

}  // namespace

AccessControl::AccessControl(std::shared_ptr<const auth::AuthorizationPolicy> policy,
                             TokenVerifier tokens, std::function<absl::Time()> clock)
    : enforcing_(policy != nullptr),
      policy_(std::move(policy)),
      tokens_(std::move(tokens)),
      clock_(std::move(clock)) {}

void AccessControl::ReloadPolicyFrom(std::string path, absl::Duration interval) {
  absl::MutexLock lock(&policy_mu_);
  policy_path_ = std::move(path);
  policy_interval_ = interval;
  policy_stamp_ = FileStamp(policy_path_);
  policy_next_check_ns_.store(absl::ToUnixNanos(clock_() + interval));
}

std::shared_ptr<const auth::AuthorizationPolicy> AccessControl::Policy() const {
  const absl::Time now = clock_();
  if (!policy_path_.empty() && absl::ToUnixNanos(now) >= policy_next_check_ns_.load()) {
    absl::MutexLock lock(&policy_mu_);
    if (absl::ToUnixNanos(now) >= policy_next_check_ns_.load()) {
      policy_next_check_ns_.store(absl::ToUnixNanos(now + policy_interval_));
      const std::string stamp = FileStamp(policy_path_);
      if (stamp != policy_stamp_) {
        policy_stamp_ = stamp;  // a bad file is reported once, then again when it changes
        absl::StatusOr<std::shared_ptr<const auth::AuthorizationPolicy>> loaded =
            auth::AuthorizationPolicy::Load(policy_path_);
        if (loaded.ok()) {
          policy_ = *std::move(loaded);
          ADMITD_LOG(kInfo, "authorization policy reloaded", {{"path", policy_path_}});
        } else {
          ADMITD_LOG(kError, "authorization policy not reloaded; the previous one stays in force",
                     {{"path", policy_path_}, {"error", std::string(loaded.status().message())}});
        }
      }
    }
    return policy_;
  }
  absl::ReaderMutexLock lock(&policy_mu_);
  return policy_;
}

absl::StatusOr<auth::Identity> AccessControl::FromCertificate(const std::string& pem) const {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = certificates_.find(pem); it != certificates_.end()) return it->second;
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (cert == nullptr) {
    return absl::UnauthenticatedError("the client certificate cannot be read");
  }
  auth::Identity identity;
  identity.source = auth::Identity::Source::kCertificate;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    if (nid != NID_commonName && nid != NID_organizationName) continue;
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
    if (n < 0) continue;
    std::string value(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
    if (nid == NID_commonName) {
      identity.name = std::move(value);
    } else {
      identity.groups.push_back(std::move(value));
    }
  }
  if (identity.name.empty()) {
    return absl::UnauthenticatedError("the client certificate has no subject common name");
  }
  identity.groups.push_back("system:authenticated");
  absl::MutexLock lock(&mu_);
  if (certificates_.size() >= kMaxCached) certificates_.clear();
  certificates_.emplace(pem, identity);
  return identity;
}

absl::StatusOr<auth::Identity> AccessControl::FromToken(absl::string_view token) const {
  const absl::Time now = clock_();
  {
    absl::MutexLock lock(&mu_);
    if (auto it = tokens_cache_.find(token); it != tokens_cache_.end() && it->second.until > now) {
      return it->second.identity;
    }
  }
  if (!tokens_) {
    return absl::UnauthenticatedError(
        "bearer tokens are not accepted by this server (no --authentication-config)");
  }
  absl::StatusOr<auth::Identity> identity = tokens_(token, now);
  if (!identity.ok()) return identity;
  absl::MutexLock lock(&mu_);
  if (tokens_cache_.size() >= kMaxCached) tokens_cache_.clear();
  tokens_cache_[token] = {*identity, now + kTokenCacheFor};
  return identity;
}

absl::StatusOr<auth::Identity> AccessControl::Identify(const grpc::ServerContextBase& rpc) const {
  std::shared_ptr<const grpc::AuthContext> context = rpc.auth_context();
  if (context != nullptr && context->IsPeerAuthenticated()) {
    for (const grpc::string_ref& pem : context->FindPropertyValues("x509_pem_cert")) {
      return FromCertificate(Text(pem));
    }
  }
  const auto& metadata = rpc.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    const std::string value = Text(it->second);
    if (!absl::StartsWithIgnoreCase(value, "bearer ")) {
      return absl::UnauthenticatedError("the authorization metadata is not \"Bearer <token>\"");
    }
    return FromToken(absl::string_view(value).substr(7));
  }
  return auth::Identity{};
}

absl::StatusOr<auth::Identity> AccessControl::Check(const grpc::ServerContextBase& rpc,
                                                    const auth::Request& request) const {
  absl::StatusOr<auth::Identity> identity = Identify(rpc);
  if (!identity.ok() || !enforcing_) return identity;
  if (identity->source == auth::Identity::Source::kAnonymous) {
    return absl::UnauthenticatedError(
        "the call carries no credentials: present a client certificate or a bearer token");
  }
  if (absl::Status allowed = Policy()->Authorize(*identity, request); !allowed.ok()) {
    return allowed;
  }
  return identity;
}

absl::Status AccessControl::Authorize(const auth::Identity& identity,
                                      const auth::Request& request) const {
  return enforcing_ ? Policy()->Authorize(identity, request) : absl::OkStatus();
}

std::shared_ptr<const auth::Scope> AccessControl::ScopeOf(const auth::Identity& identity,
                                                          auth::Verb verb,
                                                          auth::Resource resource) const {
  if (!enforcing_) return nullptr;
  std::shared_ptr<const auth::AuthorizationPolicy> policy = Policy();
  auto scope = std::make_shared<auth::Scope>(policy->ScopeOf(identity, verb, resource));
  scope->Hold(std::move(policy));  // the scope points into the policy's bindings
  return scope;
}

absl::StatusOr<TokenVerifier> LoadTokenVerifier(const std::string& path) {
  absl::StatusOr<std::unique_ptr<auth::TokenAuthenticator>> loaded =
      auth::TokenAuthenticator::Load(path);
  if (!loaded.ok()) return loaded.status();
  std::shared_ptr<auth::TokenAuthenticator> authenticator = *std::move(loaded);
  return TokenVerifier([authenticator](absl::string_view token, absl::Time now) {
    return authenticator->Authenticate(token, now);
  });
}

absl::StatusOr<std::unique_ptr<AccessControl>> MakeAccessControl(
    const Config& config, std::function<absl::Time()> clock) {
  std::shared_ptr<const auth::AuthorizationPolicy> policy;
  if (!config.authorization_policy.empty()) {
    absl::StatusOr<std::shared_ptr<const auth::AuthorizationPolicy>> loaded =
        auth::AuthorizationPolicy::Load(config.authorization_policy);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("--authorization-policy: ", loaded.status().message()));
    }
    policy = *std::move(loaded);
  }
  const bool watch_policy = policy != nullptr;
  TokenVerifier tokens;
  if (!config.authentication_config.empty()) {
    absl::StatusOr<TokenVerifier> verifier = LoadTokenVerifier(config.authentication_config);
    if (!verifier.ok()) {
      return absl::Status(verifier.status().code(),
                          absl::StrCat("--authentication-config: ", verifier.status().message()));
    }
    tokens = *std::move(verifier);
  }
  auto access =
      std::make_unique<AccessControl>(std::move(policy), std::move(tokens), std::move(clock));
  if (watch_policy) access->ReloadPolicyFrom(config.authorization_policy, kPolicyCheckInterval);
  return access;
}

absl::StatusOr<auth::Identity> CheckCall(const AccessControl* access,
                                         const grpc::ServerContextBase& rpc,
                                         const auth::Request& request) {
  if (access == nullptr) return auth::Identity{};
  return access->Check(rpc, request);
}

absl::StatusOr<WorkloadGate> WorkloadGate::Open(const AccessControl* access,
                                                const grpc::ServerContextBase& rpc,
                                                auth::Verb verb, const std::string& namespace_) {
  WorkloadGate gate;
  gate.access_ = access;
  gate.verb_ = verb;
  if (access == nullptr) return gate;
  absl::StatusOr<auth::Identity> identity = access->Identify(rpc);
  if (!identity.ok()) return identity.status();
  gate.identity_ = *std::move(identity);
  if (!access->enforcing()) return gate;
  if (gate.identity_.source == auth::Identity::Source::kAnonymous) {
    return absl::UnauthenticatedError(
        "the call carries no credentials: present a client certificate or a bearer token");
  }
  gate.scope_ = access->ScopeOf(gate.identity_, verb, auth::Resource::kWorkloads);
  if (!gate.scope_->AllowsNamespace(namespace_)) {
    return access->Authorize(gate.identity_, {verb, auth::Resource::kWorkloads, namespace_, ""});
  }
  return gate;
}

absl::Status WorkloadGate::Allows(const v1::Workload& workload) const {
  if (scope_ == nullptr) return absl::OkStatus();
  const std::string cluster = ClusterOf(workload);
  if (scope_->Allows(workload.metadata().namespace_(), cluster)) return absl::OkStatus();
  return access_->Authorize(identity_, {verb_, auth::Resource::kWorkloads,
                                        workload.metadata().namespace_(), cluster});
}

absl::StatusOr<std::function<bool(const v1::WatchEvent&)>> WatchVisibility(
    const AccessControl& access, const grpc::ServerContextBase& rpc,
    const v1::WatchRequest& request) {
  if (!access.enforcing()) return std::function<bool(const v1::WatchEvent&)>();
  absl::StatusOr<auth::Identity> identity = access.Identify(rpc);
  if (!identity.ok()) return identity.status();
  if (identity->source == auth::Identity::Source::kAnonymous) {
    return absl::UnauthenticatedError(
        "the call carries no credentials: present a client certificate or a bearer token");
  }
  std::array<std::shared_ptr<const auth::Scope>, auth::kResourceCount> scopes;
  bool everything = true;
  for (int r = 0; r < auth::kResourceCount; ++r) {
    scopes[r] = access.ScopeOf(*identity, auth::Verb::kWatch, static_cast<auth::Resource>(r));
    everything = everything && scopes[r]->AllowsEverything();
  }
  for (int kind : request.kinds()) {
    const auth::Resource r = ResourceOf(static_cast<v1::ObjectKind>(kind));
    if (scopes[static_cast<int>(r)]->AllowsNothing()) {
      return access.Authorize(*identity,
                              {auth::Verb::kWatch, r, request.namespace_(), request.cluster()});
    }
  }
  if (everything) return std::function<bool(const v1::WatchEvent&)>();
  return std::function<bool(const v1::WatchEvent&)>([scopes](const v1::WatchEvent& event) {
    const auto allows = [&](auth::Resource r, const std::string& ns, const std::string& cluster) {
      return scopes[static_cast<int>(r)]->Allows(ns, cluster);
    };
    if (event.has_workload()) {
      return allows(auth::Resource::kWorkloads, event.workload().metadata().namespace_(),
                    ClusterOf(event.workload()));
    }
    if (event.has_directive()) {
      const v1::PodRef& pod = event.directive().pod();
      return allows(auth::Resource::kPods, pod.namespace_(), pod.cluster());
    }
    if (event.has_event()) {
      return allows(auth::Resource::kEvents, event.event().regarding().namespace_(), "");
    }
    const v1::QueueObject& o = event.queue_object();
    const v1::ObjectKind kind = event.kind();
    std::string ns;
    if (o.has_local_queue()) ns = o.local_queue().metadata().namespace_();
    if (o.has_namespace_()) ns = o.namespace_().metadata().name();
    return allows(ResourceOf(kind), ns, "");
  });
}

v1::Event AuditEvent(const auth::Identity& who, const std::string& reason,
                     const std::string& kind, const std::string& namespace_,
                     const std::string& name, const std::string& note) {
  v1::Event event;
  v1::ObjectReference* about = event.mutable_regarding();
  about->set_api_version("kueue.x-k8s.io/v1beta2");
  about->set_kind(kind);
  about->set_namespace_(namespace_);
  about->set_name(name);
  event.set_type("Normal");
  event.set_reason(reason);
  event.set_action(reason);
  event.set_reporting_controller("admitd-audit");
  event.set_user(who.Describe());
  event.set_note(absl::StrCat(who.Describe(), " ", note));
  return event;
}

std::string ClusterOf(const v1::Workload& workload) {
  const auto& labels = workload.metadata().labels();
  for (const char* key : {"admitd.io/job-cluster", "admitd.io/pod-cluster"}) {
    if (auto it = labels.find(key); it != labels.end()) return it->second;
  }
  return "";
}

auth::Resource ResourceOf(v1::ObjectKind kind) {
  switch (kind) {
    case v1::OBJECT_KIND_RESOURCE_FLAVOR: return auth::Resource::kResourceFlavors;
    case v1::OBJECT_KIND_COHORT: return auth::Resource::kCohorts;
    case v1::OBJECT_KIND_CLUSTER_QUEUE: return auth::Resource::kClusterQueues;
    case v1::OBJECT_KIND_LOCAL_QUEUE: return auth::Resource::kLocalQueues;
    case v1::OBJECT_KIND_WORKLOAD_PRIORITY_CLASS: return auth::Resource::kWorkloadPriorityClasses;
    case v1::OBJECT_KIND_ADMISSION_CHECK: return auth::Resource::kAdmissionChecks;
    case v1::OBJECT_KIND_NAMESPACE: return auth::Resource::kNamespaces;
    case v1::OBJECT_KIND_MULTIKUEUE_CONFIG: return auth::Resource::kMultiKueueConfigs;
    case v1::OBJECT_KIND_MULTIKUEUE_CLUSTER: return auth::Resource::kMultiKueueClusters;
    case v1::OBJECT_KIND_WORKLOAD: return auth::Resource::kWorkloads;
    case v1::OBJECT_KIND_POD: return auth::Resource::kPods;
    case v1::OBJECT_KIND_POD_DIRECTIVE: return auth::Resource::kPods;
    case v1::OBJECT_KIND_EVENT: return auth::Resource::kEvents;
    default: return auth::Resource::kEvents;
  }
}

}  // namespace admitd
