// JSON Web Tokens as Kubernetes service-account tokens and OIDC ID tokens are: a compact JWS
// (header.payload.signature) signed with RS256/384/512, PS256/384/512 or ES256/384, checked
// against the issuer's public keys (a JWKS document). OpenSSL does every signature check;
// `alg: none`, HMAC and any algorithm that does not fit the key are refused.
//
//   ADMITD_ASSIGN_OR_RETURN(JwkSet keys, JwkSet::Parse(jwks_json));
//   ADMITD_ASSIGN_OR_RETURN(VerifiedJwt jwt, VerifyJwt(token, keys));
//   jwt.claims["sub"] ...
//
// Thread safety: a JwkSet is immutable after Parse; VerifyJwt may run concurrently.
#ifndef ADMITD_SERVER_AUTH_JWT_H_
#define ADMITD_SERVER_AUTH_JWT_H_

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace admitd::auth {

// An issuer's public signing keys.
class JwkSet {
 public:
  // INVALID_ARGUMENT for a document that is not a JWKS ({"keys": [...]}) or a key that cannot
  // be read; keys of other types (and encryption keys) are skipped.
  static absl::StatusOr<JwkSet> Parse(absl::string_view json);
  size_t size() const { return keys_.size(); }

  struct Key {
    std::string kid;
    std::string kty;  // "RSA" or "EC"
    std::string crv;  // EC: "P-256" or "P-384"
    std::shared_ptr<EVP_PKEY> pkey;
  };
  const std::vector<Key>& keys() const { return keys_; }

 private:
  std::vector<Key> keys_;
};

struct VerifiedJwt {
  nlohmann::json header;
  nlohmann::json claims;
};

// The token's claims without checking anything (to pick the issuer's keys); UNAUTHENTICATED
// for a token that is not a JWS with a JSON object as payload.
absl::StatusOr<nlohmann::json> PeekClaims(absl::string_view token);

// Checks the signature with the key the header's kid names (every key of the fitting type
// without one). UNAUTHENTICATED saying what is wrong; claims are not checked here.
absl::StatusOr<VerifiedJwt> VerifyJwt(absl::string_view token, const JwkSet& keys);

}  // namespace admitd::auth

#endif  // ADMITD_SERVER_AUTH_JWT_H_
