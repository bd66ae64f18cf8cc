// TokenAuthenticator: the identity a bearer token proves. Its configuration follows Kubernetes'
// structured authentication configuration: a list of JWT issuers, each with the audiences its
// tokens must name and the file holding its public keys (JWKS). An issuer is either a cluster's
// service-account issuer (its tokens are that cluster's service accounts) or an OIDC provider
// for people (claims mapped to a user name and groups):
//
//   apiVersion: admitd.io/v1
//   kind: AuthenticationConfiguration
//   leewaySeconds: 60          # clock skew allowed on exp, nbf and iat
//   jwksRefreshSeconds: 10     # how often a changed key file is read again
//   jwt:
//   - issuer: {url: https://kubernetes.default.svc.cluster.local, audiences: [admitd]}
//     jwksFile: c1-jwks.json   # `kubectl get --raw /openid/v1/jwks`; relative to this file
//     serviceAccountsOf: c1
//   - issuer: {url: https://login.example.com, audiences: [admitd]}
//     jwksFile: oidc-jwks.json
//     claimMappings:
//       username: {claim: email, prefix: "oidc:"}   # default: sub, no prefix
//       groups: {claim: groups, prefix: "oidc:"}
//
// Clusters usually share the default issuer URL: entries may repeat a URL when each names a
// different cluster, and the entry whose keys verify the token decides the cluster (so each
// cluster's keys must be its own).
//
// Thread safety: Authenticate may be called from any thread.
#ifndef ADMITD_SERVER_AUTH_TOKEN_AUTHENTICATOR_H_
#define ADMITD_SERVER_AUTH_TOKEN_AUTHENTICATOR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/auth/identity.h"
#include "server/auth/jwt.h"

namespace admitd::auth {

class TokenAuthenticator {
 public:
  // Reads the configuration and every key file. INVALID_ARGUMENT naming the field
  // (`jwt[1].issuer.audiences: Required value`); FAILED_PRECONDITION for a file that cannot be
  // read.
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> Load(const std::string& path);

  // The token's identity at time `now`, or UNAUTHENTICATED saying why not (never echoing the
  // token): an issuer not configured, a signature that does not verify, an audience not
  // accepted, an expired token.
  absl::StatusOr<Identity> Authenticate(absl::string_view token, absl::Time now);

 private:
  struct Issuer {
    std::string url;
    std::vector<std::string> audiences;
    std::string jwks_file;
    std::string cluster;  // set: a service-account issuer
    std::string username_claim = "sub";
    std::string username_prefix;
    std::string groups_claim;
    std::string groups_prefix;
    // The keys, read again when the file changes.
    absl::Mutex mu;
    std::shared_ptr<const JwkSet> keys ABSL_GUARDED_BY(mu);
    std::string stamp ABSL_GUARDED_BY(mu);
    absl::Time next_check ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  };
  TokenAuthenticator() = default;
  // The issuer's keys, read again first when the refresh interval passed (or `force`, at most
  // once a second) and the file changed.
  std::shared_ptr<const JwkSet> KeysOf(Issuer& issuer, absl::Time now, bool force);
  absl::StatusOr<Identity> IdentityOf(const Issuer& issuer, const nlohmann::json& claims) const;

  absl::Duration leeway_ = absl::Seconds(60);
  absl::Duration refresh_ = absl::Seconds(10);
  std::vector<std::unique_ptr<Issuer>> issuers_;
};

}  // namespace admitd::auth

#endif  // ADMITD_SERVER_AUTH_TOKEN_AUTHENTICATOR_H_
