#include "server/auth/jwt.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace admitd::auth {
namespace {

using json = nlohmann::json;

template <auto kFree>
struct OpenSslFree {
  template <typename T>
  void operator()(T* p) const {
    kFree(p);
  }
};
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslFree<BN_free>>;
using ParamBldPtr = std::unique_ptr<OSSL_PARAM_BLD, OpenSslFree<OSSL_PARAM_BLD_free>>;
using ParamsPtr = std::unique_ptr<OSSL_PARAM, OpenSslFree<OSSL_PARAM_free>>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, OpenSslFree<EVP_PKEY_CTX_free>>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, OpenSslFree<EVP_MD_CTX_free>>;
using EcdsaSigPtr = std::unique_ptr<ECDSA_SIG, OpenSslFree<ECDSA_SIG_free>>;

// Far above any real token (gRPC's default metadata limit is 8 KiB); bounds the work a caller
// can ask of the parser.
constexpr size_t kMaxTokenBytes = 64 * 1024;
// RFC 7518 §3.3 asks for 2048 bits at least; the upper bound keeps verification cheap.
constexpr int kMinRsaBits = 2048;
constexpr int kMaxRsaBits = 16384;

struct Algorithm {
  absl::string_view name;
  absl::string_view kty;
  const EVP_MD* (*digest)();
  bool pss;
  absl::string_view curve;   // EC: the curve the algorithm is defined with
  size_t coordinate_bytes;  // EC: bytes of r and of s in the signature
};

constexpr Algorithm kAlgorithms[] = {
    {"RS256", "RSA", EVP_sha256, false, "", 0},
    {"RS384", "RSA", EVP_sha384, false, "", 0},
    {"RS512", "RSA", EVP_sha512, false, "", 0},
    {"PS256", "RSA", EVP_sha256, true, "", 0},
    {"PS384", "RSA", EVP_sha384, true, "", 0},
    {"PS512", "RSA", EVP_sha512, true, "", 0},
    {"ES256", "EC", EVP_sha256, false, "P-256", 32},
    {"ES384", "EC", EVP_sha384, false, "P-384", 48},
};

struct Curve {
  absl::string_view jwk_name;
  const char* openssl_name;
  size_t coordinate_bytes;
};

constexpr Curve kCurves[] = {{"P-256", "prime256v1", 32}, {"P-384", "secp384r1", 48}};

absl::Status Unauthenticated(absl::string_view message) {
  return absl::UnauthenticatedError(message);
}

// A compact JWS taken apart; its header and claims are the signer's only once verified.
struct Jws {
  json header;  // a JSON object with a string "alg"
  json claims;  // the payload, a JSON object
  std::string alg;
  bool has_kid = false;
  std::string kid;
  std::string signing_input;  // "<base64url header>.<base64url payload>", as signed
  std::string signature;      // the decoded signature bytes
};

// RFC 4648 §5 base64url without padding, as JWS uses it: padding, characters outside the
// alphabet and impossible lengths are refused.
bool Base64UrlDecode(absl::string_view text, std::string* bytes) {
  if (text.size() % 4 == 1) return false;  // 6 bits cannot end a byte
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return absl::WebSafeBase64Unescape(text, bytes);
}

// `text` quoted for an error message: C-escaped and cut after 64 characters, so a message may
// name what a token says without carrying arbitrary bytes or lengths.
std::string QuoteForMessage(absl::string_view text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMax)), "\"...");
}

// "key \"abc\" (RSA)", "key without kid (EC P-256)": how messages name a key.
std::string Describe(const JwkSet::Key& key) {
  const std::string type = key.kty == "EC" ? absl::StrCat("EC ", key.crv) : key.kty;
  if (key.kid.empty()) return absl::StrCat("key without kid (", type, ")");
  return absl::StrCat("key ", QuoteForMessage(key.kid), " (", type, ")");
}

// The algorithm a token names, or why it is refused.
absl::StatusOr<const Algorithm*> FindAlgorithm(const std::string& name) {
  for (const Algorithm& a : kAlgorithms) {
    if (a.name == name) return &a;
  }
  if (name == "none") return Unauthenticated("unsigned tokens (alg \"none\") are refused");
  if (name.size() > 2 && name.compare(0, 2, "HS") == 0) {
    return Unauthenticated(absl::StrCat("tokens with a shared-secret signature (alg ",
                                        QuoteForMessage(name),
                                        ") are refused: only issuers' public keys are trusted"));
  }
  return Unauthenticated(
      absl::StrCat("the token's algorithm ", QuoteForMessage(name),
                   " is not supported (supported: RS256, RS384, RS512, PS256, PS384, PS512, "
                   "ES256, ES384)"));
}

// OK when `key` may verify signatures of `alg`.
absl::Status Fits(const Algorithm& alg, const JwkSet::Key& key) {
  if (key.kty != alg.kty || (key.kty == "EC" && key.crv != alg.curve)) {
    return Unauthenticated(absl::StrCat("the token's algorithm ", alg.name,
                                        " does not fit the issuer's ", Describe(key)));
  }
  return absl::OkStatus();
}

// JWS carries an ECDSA signature as r||s, fixed width; OpenSSL verifies the DER SEQUENCE.
bool EcdsaSignatureToDer(absl::string_view raw, size_t coordinate_bytes, std::string* der) {
  if (raw.size() != 2 * coordinate_bytes) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  BignumPtr r(BN_bin2bn(bytes, static_cast<int>(coordinate_bytes), nullptr));
  BignumPtr s(BN_bin2bn(bytes + coordinate_bytes, static_cast<int>(coordinate_bytes), nullptr));
  EcdsaSigPtr sig(ECDSA_SIG_new());
  if (r == nullptr || s == nullptr || sig == nullptr) return false;
  if (ECDSA_SIG_set0(sig.get(), r.get(), s.get()) != 1) return false;
  r.release();  // owned by sig now
  s.release();
  const int size = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (size <= 0) return false;
  der->resize(static_cast<size_t>(size));
  auto* out = reinterpret_cast<unsigned char*>(der->data());
  return i2d_ECDSA_SIG(sig.get(), &out) == size;
}

bool VerifyWith(const Algorithm& alg, const JwkSet::Key& key, const Jws& jws) {
  std::string der;
  absl::string_view signature = jws.signature;
  if (key.kty == "EC") {
    if (!EcdsaSignatureToDer(jws.signature, alg.coordinate_bytes, &der)) return false;
    signature = der;
  }
  MdCtxPtr ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pkey_ctx = nullptr;  // owned by ctx
  bool ok = ctx != nullptr &&
            EVP_DigestVerifyInit(ctx.get(), &pkey_ctx, alg.digest(), nullptr, key.pkey.get()) == 1;
  if (ok && alg.pss) {
    // RFC 7518 §3.5: MGF1 with the signature's hash (OpenSSL's default) and a salt as long as
    // the hash.
    ok = EVP_PKEY_CTX_set_rsa_padding(pkey_ctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pkey_ctx, RSA_PSS_SALTLEN_DIGEST) == 1;
  }
  ok = ok && EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                              signature.size(),
                              reinterpret_cast<const unsigned char*>(jws.signing_input.data()),
                              jws.signing_input.size()) == 1;
  ERR_clear_error();  // a failed verification leaves entries no caller reads
  return ok;
}

// Decodes the JSON object in one base64url part of a token.
bool DecodeJsonObject(absl::string_view part, json* out) {
  std::string bytes;
  if (part.empty() || !Base64UrlDecode(part, &bytes)) return false;
  *out = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded() && out->is_object();
}

// ---- JWKS ----

absl::Status KeyError(const std::string& at, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(at, ": ", what));
}

// An optional string member; false (with *error set) when present but not a string.
bool OptionalString(const json& key, const std::string& at, const char* name, std::string* out,
                    absl::Status* error) {
  auto it = key.find(name);
  if (it == key.end()) return true;
  if (!it->is_string()) {
    *error = KeyError(absl::StrCat(at, ".", name), "Invalid value: must be a string");
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

// A required base64url member, decoded.
absl::StatusOr<std::string> BinaryMember(const json& key, const std::string& at,
                                         const char* name) {
  auto it = key.find(name);
  const std::string field = absl::StrCat(at, ".", name);
  if (it == key.end()) return KeyError(field, "Required value");
  std::string bytes;
  if (!it->is_string() || !Base64UrlDecode(it->get<std::string>(), &bytes) || bytes.empty()) {
    return KeyError(field, "Invalid value: must be a non-empty base64url string");
  }
  return bytes;
}

BignumPtr ToBignum(const std::string& bytes) {
  return BignumPtr(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                             static_cast<int>(bytes.size()), nullptr));
}

// A public key from OpenSSL parameters built by `build`.
absl::StatusOr<std::shared_ptr<EVP_PKEY>> FromData(const char* type, OSSL_PARAM_BLD* bld,
                                                   const std::string& at) {
  ParamsPtr params(OSSL_PARAM_BLD_to_param(bld));
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* pkey = nullptr;
  if (params == nullptr || ctx == nullptr || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &pkey, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    ERR_clear_error();
    return KeyError(at, absl::StrCat("Invalid value: OpenSSL does not accept the ", type,
                                     " public key"));
  }
  std::shared_ptr<EVP_PKEY> key(pkey, EVP_PKEY_free);
  PkeyCtxPtr check(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  if (check == nullptr || EVP_PKEY_public_check(check.get()) != 1) {
    ERR_clear_error();
    return KeyError(at, absl::StrCat("Invalid value: not a valid ", type, " public key"));
  }
  return key;
}

absl::StatusOr<std::shared_ptr<EVP_PKEY>> RsaKey(const json& key, const std::string& at) {
  absl::StatusOr<std::string> n_bytes = BinaryMember(key, at, "n");
  if (!n_bytes.ok()) return n_bytes.status();
  absl::StatusOr<std::string> e_bytes = BinaryMember(key, at, "e");
  if (!e_bytes.ok()) return e_bytes.status();
  BignumPtr n = ToBignum(*n_bytes);
  BignumPtr e = ToBignum(*e_bytes);
  if (n == nullptr || e == nullptr) return absl::ResourceExhaustedError("out of memory");
  const int bits = BN_num_bits(n.get());
  if (bits < kMinRsaBits || bits > kMaxRsaBits) {
    return KeyError(at + ".n", absl::StrCat("Invalid value: an RSA modulus of ", bits,
                                            " bits (", kMinRsaBits, " to ", kMaxRsaBits,
                                            " are accepted)"));
  }
  if (!BN_is_odd(e.get()) || BN_num_bits(e.get()) < 2 || BN_num_bits(e.get()) > 64) {
    return KeyError(at + ".e", "Invalid value: not a usable RSA public exponent");
  }
  ParamBldPtr bld(OSSL_PARAM_BLD_new());
  if (bld == nullptr || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1) {
    return absl::ResourceExhaustedError("out of memory");
  }
  return FromData("RSA", bld.get(), at);
}

absl::StatusOr<std::shared_ptr<EVP_PKEY>> EcKey(const json& key, const std::string& at,
                                                const Curve& curve) {
  absl::StatusOr<std::string> x = BinaryMember(key, at, "x");
  if (!x.ok()) return x.status();
  absl::StatusOr<std::string> y = BinaryMember(key, at, "y");
  if (!y.ok()) return y.status();
  for (const auto& [name, value] : {std::pair{".x", &*x}, std::pair{".y", &*y}}) {
    if (value->size() != curve.coordinate_bytes) {
      return KeyError(at + name, absl::StrCat("Invalid value: ", value->size(),
                                              " bytes; a ", curve.jwk_name,
                                              " coordinate has ", curve.coordinate_bytes));
    }
  }
  const std::string point = absl::StrCat("\x04", *x, *y);  // uncompressed (SEC 1 §2.3.3)
  ParamBldPtr bld(OSSL_PARAM_BLD_new());
  if (bld == nullptr ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME,
                                      curve.openssl_name, 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    return absl::ResourceExhaustedError("out of memory");
  }
  return FromData("EC", bld.get(), at);
}

absl::StatusOr<Jws> ParseJws(absl::string_view token) {
  if (token.size() > kMaxTokenBytes) {
    return Unauthenticated(absl::StrCat("the token is longer than ", kMaxTokenBytes, " bytes"));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  if (parts.size() != 3) {
    return Unauthenticated("the token is not a JWS: expected 3 parts separated by '.'");
  }
  Jws jws;
  if (!DecodeJsonObject(parts[0], &jws.header)) {
    return Unauthenticated("the token's header is not a base64url-encoded JSON object");
  }
  auto alg = jws.header.find("alg");
  if (alg == jws.header.end() || !alg->is_string()) {
    return Unauthenticated("the token's header has no algorithm (alg)");
  }
  jws.alg = alg->get<std::string>();
  auto kid = jws.header.find("kid");
  if (kid != jws.header.end()) {
    if (!kid->is_string()) {
      return Unauthenticated("the token's header has a kid that is not a string");
    }
    jws.has_kid = true;
    jws.kid = kid->get<std::string>();
  }
  if (jws.header.contains("crit")) {
    return Unauthenticated("the token's header requires extensions (crit) admitd does not know");
  }
  if (!DecodeJsonObject(parts[1], &jws.claims)) {
    return Unauthenticated("the token's payload is not a base64url-encoded JSON object");
  }
  if (!Base64UrlDecode(parts[2], &jws.signature)) {
    return Unauthenticated("the token's signature is not base64url");
  }
  jws.signing_input = std::string(token.substr(0, parts[0].size() + 1 + parts[1].size()));
  return jws;
}

absl::Status VerifySignature(const Jws& jws, const JwkSet& keys) {
  absl::StatusOr<const Algorithm*> found = FindAlgorithm(jws.alg);
  if (!found.ok()) return found.status();
  const Algorithm& alg = **found;
  std::vector<const JwkSet::Key*> candidates;
  absl::Status misfit;  // why the kid's key cannot verify, if it cannot
  bool kid_found = false;
  for (const JwkSet::Key& key : keys.keys()) {
    if (jws.has_kid && key.kid != jws.kid) continue;
    kid_found = true;
    absl::Status fits = Fits(alg, key);
    if (fits.ok()) {
      candidates.push_back(&key);
    } else if (misfit.ok()) {
      misfit = fits;
    }
  }
  if (jws.has_kid && !kid_found) {
    return Unauthenticated(absl::StrCat("no key with kid ", QuoteForMessage(jws.kid),
                                        " in the issuer's keys"));
  }
  if (candidates.empty()) {
    if (jws.has_kid) return misfit;
    return Unauthenticated(absl::StrCat("none of the issuer's keys fits the token's algorithm ",
                                        alg.name));
  }
  for (const JwkSet::Key* key : candidates) {
    if (VerifyWith(alg, *key, jws)) return absl::OkStatus();
  }
  return Unauthenticated("the signature does not verify");
}

}  // namespace

absl::StatusOr<JwkSet> JwkSet::Parse(absl::string_view text) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("the key set is not a JSON object");
  }
  auto keys = doc.find("keys");
  if (keys == doc.end() || !keys->is_array()) {
    return KeyError("keys", "Required value: a list of keys");
  }
  JwkSet set;
  for (size_t i = 0; i < keys->size(); ++i) {
    const json& k = (*keys)[i];
    const std::string at = absl::StrCat("keys[", i, "]");
    if (!k.is_object()) return KeyError(at, "Invalid value: must be an object");
    Key key;
    std::string use;
    absl::Status error;
    if (!OptionalString(k, at, "kty", &key.kty, &error) ||
        !OptionalString(k, at, "kid", &key.kid, &error) ||
        !OptionalString(k, at, "use", &use, &error) ||
        !OptionalString(k, at, "crv", &key.crv, &error)) {
      return error;
    }
    if (key.kty.empty()) return KeyError(at + ".kty", "Required value");
    if (!use.empty() && use != "sig") continue;  // an encryption key signs nothing
    absl::StatusOr<std::shared_ptr<EVP_PKEY>> pkey;
    if (key.kty == "RSA") {
      key.crv.clear();
      pkey = RsaKey(k, at);
    } else if (key.kty == "EC") {
      const Curve* curve = nullptr;
      for (const Curve& c : kCurves) {
        if (c.jwk_name == key.crv) curve = &c;
      }
      if (curve == nullptr) continue;  // a curve admitd does not verify with
      pkey = EcKey(k, at, *curve);
    } else {
      continue;  // oct, OKP, ...: not for admitd
    }
    if (!pkey.ok()) return pkey.status();
    key.pkey = *std::move(pkey);
    set.keys_.push_back(std::move(key));
  }
  if (set.keys_.empty()) {
    return KeyError("keys", "Required value: no RSA or EC (P-256, P-384) signature key");
  }
  return set;
}

absl::StatusOr<nlohmann::json> PeekClaims(absl::string_view token) {
  absl::StatusOr<Jws> jws = ParseJws(token);
  if (!jws.ok()) return jws.status();
  return std::move(jws->claims);
}

absl::StatusOr<VerifiedJwt> VerifyJwt(absl::string_view token, const JwkSet& keys) {
  absl::StatusOr<Jws> jws = ParseJws(token);
  if (!jws.ok()) return jws.status();
  absl::Status verified = VerifySignature(*jws, keys);
  if (!verified.ok()) return verified;
  return VerifiedJwt{std::move(jws->header), std::move(jws->claims)};
}

}  // namespace admitd::auth
