#include "server/auth/token_authenticator.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/auth/jwt.h"
#include "server/auth/testing/token_signer.h"

namespace admitd::auth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Jwks;
using testing::TokenSigner;

constexpr char kClusterIssuer[] = "https://kubernetes.default.svc.cluster.local";
constexpr char kOidcIssuer[] = "https://login.example.com";
const absl::Time kNow = absl::FromUnixSeconds(1800000000);

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

class TokenAuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tokens_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    Write(dir_ + "/c1.json", Jwks({&c1_}));
    Write(dir_ + "/c2.json", Jwks({&c2_}));
    Write(dir_ + "/oidc.json", Jwks({&oidc_}));
    Write(dir_ + "/authn.yaml", absl::StrCat(R"(apiVersion: admitd.io/v1
kind: AuthenticationConfiguration
jwksRefreshSeconds: 10
jwt:
- issuer: {url: )", kClusterIssuer, R"(, audiences: [admitd]}
  jwksFile: c1.json
  serviceAccountsOf: c1
- issuer: {url: )", kClusterIssuer, R"(, audiences: [admitd]}
  jwksFile: c2.json
  serviceAccountsOf: c2
- issuer: {url: )", kOidcIssuer, R"(, audiences: [admitd, other]}
  jwksFile: oidc.json
  claimMappings:
    username: {claim: email, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
)"));
    auto loaded = TokenAuthenticator::Load(dir_ + "/authn.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    authn_ = *std::move(loaded);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nlohmann::json ShimClaims() {
    const int64_t now = absl::ToUnixSeconds(kNow);
    return {{"iss", kClusterIssuer}, {"aud", {"admitd"}}, {"sub", "system:serviceaccount:admitd-system:shim"},
            {"iat", now - 10}, {"nbf", now - 10}, {"exp", now + 3600},
            {"kubernetes.io", {{"namespace", "admitd-system"},
                               {"serviceaccount", {{"name", "shim"}, {"uid", "u1"}}}}}};
  }
  absl::StatusOr<Identity> Auth(const std::string& token, absl::Time now = kNow) {
    return authn_->Authenticate(token, now);
  }

  std::string dir_;
  TokenSigner c1_ = TokenSigner::Rsa("c1-key");
  TokenSigner c2_ = TokenSigner::Rsa("c2-key");
  TokenSigner oidc_ = TokenSigner::Ec("oidc-key");
  std::unique_ptr<TokenAuthenticator> authn_;
};

TEST_F(TokenAuthenticatorTest, AServiceAccountTokenIsItsClustersServiceAccount) {
  absl::StatusOr<Identity> id = Auth(c1_.Sign(ShimClaims()));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->source, Identity::Source::kServiceAccount);
  EXPECT_EQ(id->name, "system:serviceaccount:admitd-system:shim");
  EXPECT_EQ(id->cluster, "c1");
  EXPECT_THAT(id->groups, ElementsAre("system:serviceaccounts",
                                      "system:serviceaccounts:admitd-system",
                                      "system:authenticated"));
  // The same issuer URL, another cluster's keys: that cluster's service account.
  id = Auth(c2_.Sign(ShimClaims()));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->cluster, "c2");
  EXPECT_EQ(id->Describe(), "serviceaccount system:serviceaccount:admitd-system:shim (cluster c2)");
}

TEST_F(TokenAuthenticatorTest, WrongAudienceIssuerOrTimeIsRefused) {
  nlohmann::json claims = ShimClaims();
  claims["aud"] = {"kubernetes"};
  absl::Status s = Auth(c1_.Sign(claims)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(s.message(), "token audience [\"kubernetes\"] does not include any of [\"admitd\"]");
  claims = ShimClaims();
  claims["iss"] = "https://evil.example.com";
  EXPECT_EQ(Auth(c1_.Sign(claims)).status().message(),
            "token issuer \"https://evil.example.com\" is not trusted");
  claims = ShimClaims();
  claims["exp"] = absl::ToUnixSeconds(kNow) - 61;
  EXPECT_THAT(Auth(c1_.Sign(claims)).status().message(), HasSubstr("token expired at 2027-01-15"));
  claims["exp"] = absl::ToUnixSeconds(kNow) - 30;  // within the leeway
  EXPECT_TRUE(Auth(c1_.Sign(claims)).ok());
  claims = ShimClaims();
  claims.erase("exp");
  EXPECT_THAT(Auth(c1_.Sign(claims)).status().message(), HasSubstr("no expiry"));
  claims = ShimClaims();
  claims["nbf"] = absl::ToUnixSeconds(kNow) + 120;
  EXPECT_THAT(Auth(c1_.Sign(claims)).status().message(), HasSubstr("not valid before"));
  claims = ShimClaims();
  claims["iat"] = absl::ToUnixSeconds(kNow) + 120;
  EXPECT_THAT(Auth(c1_.Sign(claims)).status().message(), HasSubstr("issued in the future"));
  claims = ShimClaims();
  claims["kubernetes.io"]["namespace"] = "other";
  EXPECT_THAT(Auth(c1_.Sign(claims)).status().message(), HasSubstr("does not agree"));
  claims["sub"] = "alice";
  EXPECT_THAT(Auth(c1_.Sign(claims)).status().message(),
              HasSubstr("not system:serviceaccount:<namespace>:<name>"));
}

TEST_F(TokenAuthenticatorTest, SignaturesAndAlgorithmsAreChecked) {
  // Signed by a key the issuer does not have, under a kid it does.
  TokenSigner stranger = TokenSigner::Rsa("c1-key");
  EXPECT_EQ(Auth(stranger.Sign(ShimClaims())).status().message(),
            "the signature does not verify");
  TokenSigner unknown = TokenSigner::Rsa("who");
  EXPECT_THAT(Auth(unknown.Sign(ShimClaims())).status().message(),
              HasSubstr("no key with kid \"who\""));
  EXPECT_THAT(Auth(c1_.Sign(ShimClaims(), "HS256")).status().message(),
              HasSubstr("shared-secret signature"));
  EXPECT_THAT(Auth(c1_.Sign(ShimClaims(), "none")).status().message(),
              HasSubstr("unsigned tokens (alg \"none\") are refused"));
  // An RSA signature presented as ES256 finds no EC key of that kid.
  EXPECT_FALSE(Auth(c1_.Sign(ShimClaims(), "ES256")).ok());
  // Tampered claims.
  const std::string token = c1_.Sign(ShimClaims());
  const size_t dot = token.find('.');
  std::string payload;
  nlohmann::json changed = ShimClaims();
  changed["sub"] = "system:serviceaccount:admitd-system:admin";
  absl::WebSafeBase64Escape(changed.dump(), &payload);
  const std::string forged =
      token.substr(0, dot + 1) + payload + token.substr(token.find('.', dot + 1));
  EXPECT_EQ(Auth(forged).status().message(), "the signature does not verify");
  for (const char* bad : {"abc", "a.b", "a.b.c.d", "!!.e30.sig", "e30.!!.sig"}) {
    EXPECT_EQ(Auth(bad).status().code(), absl::StatusCode::kUnauthenticated) << bad;
  }
}

TEST_F(TokenAuthenticatorTest, OidcClaimsMapToAUserAndGroups) {
  const int64_t now = absl::ToUnixSeconds(kNow);
  absl::StatusOr<Identity> id =
      Auth(oidc_.Sign({{"iss", kOidcIssuer}, {"aud", "other"}, {"sub", "1234"},
                       {"email", "bob@example.com"}, {"groups", {"team-a", "ops"}},
                       {"exp", now + 600}}));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->source, Identity::Source::kOidc);
  EXPECT_EQ(id->name, "oidc:bob@example.com");
  EXPECT_THAT(id->groups, ElementsAre("oidc:team-a", "oidc:ops", "system:authenticated"));
  EXPECT_EQ(id->Describe(), "user oidc:bob@example.com");
  EXPECT_THAT(Auth(oidc_.Sign({{"iss", kOidcIssuer}, {"aud", "admitd"}, {"sub", "1234"},
                               {"exp", now + 600}}))
                  .status()
                  .message(),
              HasSubstr("no email claim"));
}

TEST_F(TokenAuthenticatorTest, RotatedKeysAreReadAfterTheRefreshInterval) {
  TokenSigner next = TokenSigner::Rsa("c1-key-2");
  ASSERT_FALSE(Auth(next.Sign(ShimClaims())).ok());
  Write(dir_ + "/c1.json", Jwks({&c1_, &next}));
  // An unknown kid looks at the file at once (at most once a second).
  EXPECT_TRUE(Auth(next.Sign(ShimClaims()), kNow + absl::Seconds(1)).ok());
  // A key dropped from the file is gone after the refresh interval.
  TokenSigner third = TokenSigner::Rsa("c1-key");  // reuses the old kid
  Write(dir_ + "/c1.json", Jwks({&third}));
  EXPECT_TRUE(Auth(c1_.Sign(ShimClaims()), kNow + absl::Seconds(2)).ok());
  EXPECT_FALSE(Auth(c1_.Sign(ShimClaims()), kNow + absl::Seconds(12)).ok());
  EXPECT_TRUE(Auth(third.Sign(ShimClaims()), kNow + absl::Seconds(12)).ok());
  // A broken rewrite keeps the keys in use.
  Write(dir_ + "/c1.json", "{not json");
  EXPECT_TRUE(Auth(third.Sign(ShimClaims()), kNow + absl::Seconds(30)).ok());
}

TEST_F(TokenAuthenticatorTest, BadConfigurationsNameTheField) {
  Write(dir_ + "/bad.yaml", absl::StrCat(R"(apiVersion: admitd.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: http://plain.example.com}
  jwksFile: c1.json
- issuer: {url: https://x.example.com, audiences: [a]}
  jwksFile: c1.json
  serviceAccountsOf: c9
  claimMappings: {username: {claim: email}}
- issuer: {url: https://y.example.com, audiences: [a]}
  jwksFile: c1.json
  extra: 1
)"));
  absl::Status s = TokenAuthenticator::Load(dir_ + "/bad.yaml").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("jwt[0].issuer.url: Invalid value: an https:// URL"));
  EXPECT_THAT(s.message(), HasSubstr("jwt[0].issuer.audiences: Required value"));
  EXPECT_THAT(s.message(), HasSubstr("jwt[1].claimMappings: Forbidden"));
  EXPECT_THAT(s.message(), HasSubstr("jwt[2].extra: Unsupported value: unknown field"));
  Write(dir_ + "/missing.yaml", R"(apiVersion: admitd.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://x.example.com, audiences: [a]}
  jwksFile: nope.json
)");
  s = TokenAuthenticator::Load(dir_ + "/missing.yaml").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("nope.json"));
  Write(dir_ + "/notjwks.json", "{\"keys\": [{\"kty\": \"RSA\", \"kid\": \"k\"}]}");
  Write(dir_ + "/badkeys.yaml", R"(apiVersion: admitd.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: https://x.example.com, audiences: [a]}
  jwksFile: notjwks.json
)");
  EXPECT_THAT(TokenAuthenticator::Load(dir_ + "/badkeys.yaml").status().message(),
              HasSubstr("keys[0].n: Required value"));
}

}  // namespace
}  // namespace admitd::auth
