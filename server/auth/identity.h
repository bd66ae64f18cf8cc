// Who is calling admitd: the identity an mTLS client certificate or a bearer token proves, as the
// authorizer (policy.h) and the audit trail see it. Kubernetes' conventions carry over: a
// service account is "system:serviceaccount:<namespace>:<name>" in the groups
// "system:serviceaccounts" and "system:serviceaccounts:<namespace>"; every authenticated caller
// is in "system:authenticated".
//
// Thread safety: plain values.
#ifndef ADMITD_SERVER_AUTH_IDENTITY_H_
#define ADMITD_SERVER_AUTH_IDENTITY_H_

#include <string>
#include <vector>

namespace admitd::auth {

struct Identity {
  enum class Source {
    kAnonymous,       // no credentials (only when authentication is off)
    kCertificate,     // an mTLS client certificate: name is its subject CN, groups its O values
    kServiceAccount,  // a Kubernetes service-account token of a configured cluster's issuer
    kOidc,            // an OIDC ID token of a configured issuer (people)
  };
  Source source = Source::kAnonymous;
  // The user name as bindings name it (already prefixed as the issuer's configuration says).
  std::string name;
  std::vector<std::string> groups;
  // For kServiceAccount: the name of the cluster whose issuer signed the token.
  std::string cluster;

  // "serviceaccount system:serviceaccount:admitd-system:shim (cluster c1)", "user alice",
  // "certificate shim-c1", "anonymous": how denials and the audit trail name the caller.
  std::string Describe() const;
};

}  // namespace admitd::auth

#endif  // ADMITD_SERVER_AUTH_IDENTITY_H_
