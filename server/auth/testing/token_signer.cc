#include "server/auth/testing/token_signer.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace admitd::auth::testing {
namespace {

std::string B64(const std::string& bytes) {
  std::string out;
  absl::WebSafeBase64Escape(bytes, &out);  // unpadded
  return out;
}

std::string BnBytes(const BIGNUM* bn, int size = 0) {
  std::string out(static_cast<size_t>(size > 0 ? size : BN_num_bytes(bn)), '\0');
  BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
  return out;
}

}  // namespace

TokenSigner TokenSigner::Rsa(const std::string& kid) {
  return TokenSigner(std::shared_ptr<EVP_PKEY>(EVP_RSA_gen(2048), EVP_PKEY_free), kid, false);
}

TokenSigner TokenSigner::Ec(const std::string& kid) {
  return TokenSigner(std::shared_ptr<EVP_PKEY>(EVP_EC_gen("P-256"), EVP_PKEY_free), kid, true);
}

nlohmann::json TokenSigner::Jwk() const {
  if (ec_) {
    unsigned char point[65];
    size_t n = 0;
    EVP_PKEY_get_octet_string_param(key_.get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point), &n);
    const std::string raw(reinterpret_cast<char*>(point), n);
    return {{"kty", "EC"}, {"crv", "P-256"}, {"use", "sig"}, {"kid", kid_},
            {"x", B64(raw.substr(1, 32))}, {"y", B64(raw.substr(33, 32))}};
  }
  BIGNUM* n = nullptr;
  BIGNUM* e = nullptr;
  EVP_PKEY_get_bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_N, &n);
  EVP_PKEY_get_bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_E, &e);
  nlohmann::json jwk = {{"kty", "RSA"}, {"use", "sig"}, {"alg", "RS256"}, {"kid", kid_},
                        {"n", B64(BnBytes(n))}, {"e", B64(BnBytes(e))}};
  BN_free(n);
  BN_free(e);
  return jwk;
}

std::string TokenSigner::Sign(const nlohmann::json& claims, const std::string& alg,
                              const std::string* kid) const {
  nlohmann::json header = {{"alg", alg.empty() ? (ec_ ? "ES256" : "RS256") : alg},
                           {"typ", "JWT"}};
  const std::string& key_id = kid != nullptr ? *kid : kid_;
  if (!key_id.empty()) header["kid"] = key_id;
  const std::string signed_part = absl::StrCat(B64(header.dump()), ".", B64(claims.dump()));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_.get());
  size_t len = 0;
  EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(signed_part.data()),
                 signed_part.size());
  std::string sig(len, '\0');
  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                 reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size());
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  if (ec_) {
    // DER ECDSA-Sig-Value -> r || s.
    const unsigned char* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* parsed = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    sig = BnBytes(ECDSA_SIG_get0_r(parsed), 32) + BnBytes(ECDSA_SIG_get0_s(parsed), 32);
    ECDSA_SIG_free(parsed);
  }
  return absl::StrCat(signed_part, ".", B64(sig));
}

std::string Jwks(const std::vector<const TokenSigner*>& signers) {
  nlohmann::json keys = nlohmann::json::array();
  for (const TokenSigner* s : signers) keys.push_back(s->Jwk());
  return nlohmann::json{{"keys", keys}}.dump();
}

}  // namespace admitd::auth::testing
