// TokenSigner: tests' issuer of JWTs. It makes an RSA-2048 or P-256 key pair, publishes the
// public half as a JWK, and signs claims as RS256 or ES256 tokens, the way a Kubernetes API
// server or an OIDC provider does.
//
//   TokenSigner c1 = TokenSigner::Rsa("c1-key");
//   WriteFile(dir + "/c1-jwks.json", Jwks({&c1}));
//   std::string token = c1.Sign({{"iss", url}, {"aud", "admitd"}, {"sub", "..."}, {"exp", t}});
//
// Thread safety: const methods may be called concurrently.
#ifndef ADMITD_SERVER_AUTH_TESTING_TOKEN_SIGNER_H_
#define ADMITD_SERVER_AUTH_TESTING_TOKEN_SIGNER_H_

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace admitd::auth::testing {

class TokenSigner {
 public:
  static TokenSigner Rsa(const std::string& kid);
  static TokenSigner Ec(const std::string& kid);

  // The public key as a JWK object.
  nlohmann::json Jwk() const;
  // A compact JWS of `claims`, with the header {alg, typ: JWT, kid}; `alg` overrides the
  // header's algorithm (the signature stays the key's own), `kid` its key id.
  std::string Sign(const nlohmann::json& claims, const std::string& alg = "",
                   const std::string* kid = nullptr) const;

 private:
  TokenSigner(std::shared_ptr<EVP_PKEY> key, std::string kid, bool ec)
      : key_(std::move(key)), kid_(std::move(kid)), ec_(ec) {}
  std::shared_ptr<EVP_PKEY> key_;
  std::string kid_;
  bool ec_;
};

// {"keys": [...]} of the signers' public keys.
std::string Jwks(const std::vector<const TokenSigner*>& signers);

}  // namespace admitd::auth::testing

#endif  // ADMITD_SERVER_AUTH_TESTING_TOKEN_SIGNER_H_
