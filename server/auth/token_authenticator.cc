#include "server/auth/token_authenticator.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_stamp.h"

namespace admitd::auth {
namespace {

absl::StatusOr<std::shared_ptr<const JwkSet>> ReadKeys(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<JwkSet> keys = JwkSet::Parse(*text);
  if (!keys.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", keys.status().message()));
  }
  return std::make_shared<const JwkSet>(*std::move(keys));
}

std::string Rfc3339(int64_t unix_seconds) {
  return absl::FormatTime(absl::RFC3339_sec, absl::FromUnixSeconds(unix_seconds), absl::UTCTimeZone());
}

// A numeric claim; false when absent, INVALID when not a number.
absl::StatusOr<bool> NumericClaim(const nlohmann::json& claims, const char* name, int64_t* out) {
  auto it = claims.find(name);
  if (it == claims.end()) return false;
  if (!it->is_number()) {
    return absl::UnauthenticatedError(absl::StrCat("the token's ", name, " is not a number"));
  }
  *out = it->get<int64_t>();
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenAuthenticator>> TokenAuthenticator::Load(
    const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not YAML: ", e.what()));
  }
  const std::string dir = path.find('/') == std::string::npos
                              ? "."
                              : path.substr(0, path.rfind('/'));
  std::vector<std::string> errors;
  const auto bad = [&](const std::string& field, const std::string& what) {
    errors.push_back(absl::StrCat(field, ": ", what));
  };
  const auto known = [&](const YAML::Node& node, const std::string& at,
                         std::initializer_list<std::string> keys) {
    if (!node.IsMap()) {
      bad(at.empty() ? "(root)" : at, "Invalid value: must be a mapping");
      return false;
    }
    for (const auto& kv : node) {
      if (std::find(keys.begin(), keys.end(), kv.first.Scalar()) == keys.end()) {
        bad(at.empty() ? kv.first.Scalar() : absl::StrCat(at, ".", kv.first.Scalar()),
            absl::StrCat("Unsupported value: unknown field (known: ", absl::StrJoin(keys, ", "),
                         ")"));
      }
    }
    return true;
  };
  const auto scalar = [](const YAML::Node& node) {
    return node && node.IsScalar() ? node.Scalar() : std::string();
  };
  std::unique_ptr<TokenAuthenticator> out(new TokenAuthenticator());
  if (!known(root, "", {"apiVersion", "kind", "jwt", "leewaySeconds", "jwksRefreshSeconds"})) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", absl::StrJoin(errors, "; ")));
  }
  if (scalar(root["apiVersion"]) != "admitd.io/v1") {
    bad("apiVersion", "Unsupported value: supported values: \"admitd.io/v1\"");
  }
  if (scalar(root["kind"]) != "AuthenticationConfiguration") {
    bad("kind", "Unsupported value: supported values: \"AuthenticationConfiguration\"");
  }
  for (const auto& [key, target] :
       {std::pair{"leewaySeconds", &out->leeway_}, std::pair{"jwksRefreshSeconds", &out->refresh_}}) {
    if (!root[key]) continue;
    int64_t seconds = -1;
    try {
      seconds = root[key].as<int64_t>();
    } catch (const YAML::Exception&) {
    }
    if (seconds < 0 || (seconds == 0 && std::string(key) == "jwksRefreshSeconds")) {
      bad(key, "Invalid value: a number of seconds");
    } else {
      *target = absl::Seconds(seconds);
    }
  }
  const YAML::Node jwt = root["jwt"];
  if (!jwt || !jwt.IsSequence() || jwt.size() == 0) bad("jwt", "Required value: a list of issuers");
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; jwt && jwt.IsSequence() && i < jwt.size(); ++i) {
    const std::string at = absl::StrCat("jwt[", i, "]");
    if (!known(jwt[i], at, {"issuer", "jwksFile", "serviceAccountsOf", "claimMappings"})) continue;
    auto issuer = std::make_unique<Issuer>();
    const YAML::Node iss = jwt[i]["issuer"];
    if (!iss || !known(iss, at + ".issuer", {"url", "audiences"})) {
      if (!iss) bad(at + ".issuer", "Required value");
      continue;
    }
    issuer->url = scalar(iss["url"]);
    if (!absl::StartsWith(issuer->url, "https://")) {
      bad(at + ".issuer.url", "Invalid value: an https:// URL");
    }
    if (iss["audiences"] && iss["audiences"].IsSequence()) {
      for (const auto& a : iss["audiences"]) {
        if (!scalar(a).empty()) issuer->audiences.push_back(scalar(a));
      }
    }
    if (issuer->audiences.empty()) bad(at + ".issuer.audiences", "Required value");
    issuer->cluster = scalar(jwt[i]["serviceAccountsOf"]);
    if (const YAML::Node m = jwt[i]["claimMappings"]; m) {
      if (!issuer->cluster.empty()) {
        bad(at + ".claimMappings", "Forbidden: service-account tokens have fixed claims");
      } else if (known(m, at + ".claimMappings", {"username", "groups"})) {
        for (const auto& [name, claim, prefix] :
             {std::tuple{"username", &issuer->username_claim, &issuer->username_prefix},
              std::tuple{"groups", &issuer->groups_claim, &issuer->groups_prefix}}) {
          const YAML::Node c = m[name];
          if (!c) continue;
          if (!known(c, absl::StrCat(at, ".claimMappings.", name), {"claim", "prefix"})) continue;
          *claim = scalar(c["claim"]);
          *prefix = scalar(c["prefix"]);
          if (claim->empty()) {
            bad(absl::StrCat(at, ".claimMappings.", name, ".claim"), "Required value");
          }
        }
      }
    }
    if (!seen.emplace(issuer->url, issuer->cluster).second) {
      bad(at + ".issuer.url",
          absl::StrCat("Duplicate value: \"", issuer->url, "\" (with the same serviceAccountsOf)"));
    }
    std::string file = scalar(jwt[i]["jwksFile"]);
    if (file.empty()) {
      bad(at + ".jwksFile", "Required value");
      continue;
    }
    if (file.front() != '/') file = absl::StrCat(dir, "/", file);
    issuer->jwks_file = file;
    absl::StatusOr<std::shared_ptr<const JwkSet>> keys = ReadKeys(file);
    if (!keys.ok()) {
      if (keys.status().code() == absl::StatusCode::kFailedPrecondition) {
        return absl::Status(keys.status().code(),
                            absl::StrCat(path, ": ", at, ".jwksFile: ", keys.status().message()));
      }
      bad(at + ".jwksFile", std::string(keys.status().message()));
      continue;
    }
    {
      absl::MutexLock lock(&issuer->mu);
      issuer->keys = *std::move(keys);
      issuer->stamp = FileStamp(file);
    }
    out->issuers_.push_back(std::move(issuer));
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", absl::StrJoin(errors, "; ")));
  }
  return out;
}

std::shared_ptr<const JwkSet> TokenAuthenticator::KeysOf(Issuer& issuer, absl::Time now,
                                                         bool force) {
  absl::MutexLock lock(&issuer.mu);
  const bool due = now >= issuer.next_check + (force ? absl::ZeroDuration() : refresh_ - absl::Seconds(1));
  if (due) {
    issuer.next_check = now + absl::Seconds(1);
    const std::string stamp = FileStamp(issuer.jwks_file);
    if (stamp != issuer.stamp) {
      // A file that does not read keeps the keys in use; it is tried again at the next check.
      if (absl::StatusOr<std::shared_ptr<const JwkSet>> keys = ReadKeys(issuer.jwks_file);
          keys.ok()) {
        issuer.keys = *std::move(keys);
        issuer.stamp = stamp;
      }
    }
  }
  return issuer.keys;
}

absl::StatusOr<Identity> TokenAuthenticator::Authenticate(absl::string_view token,
                                                          absl::Time now) {
  absl::StatusOr<nlohmann::json> peeked = PeekClaims(token);
  if (!peeked.ok()) return peeked.status();
  const std::string iss =
      peeked->contains("iss") && (*peeked)["iss"].is_string() ? (*peeked)["iss"] : "";
  absl::Status failure =
      absl::UnauthenticatedError(absl::StrCat("token issuer \"", iss, "\" is not trusted"));
  bool tried = false;  // an issuer with the token's key refused it
  for (const std::unique_ptr<Issuer>& issuer : issuers_) {
    if (issuer->url != iss) continue;
    std::shared_ptr<const JwkSet> keys = KeysOf(*issuer, now, /*force=*/false);
    absl::StatusOr<VerifiedJwt> jwt = VerifyJwt(token, *keys);
    if (!jwt.ok() && absl::StrContains(jwt.status().message(), "no key with kid")) {
      // Perhaps the issuer rotated its keys: look at the file now.
      keys = KeysOf(*issuer, now, /*force=*/true);
      jwt = VerifyJwt(token, *keys);
    }
    if (!jwt.ok()) {
      // Of the issuers sharing the URL, the one that has the token's key says what is wrong.
      const bool no_key = absl::StrContains(jwt.status().message(), "no key with kid");
      if (!no_key || !tried) failure = jwt.status();
      tried = tried || !no_key;
      continue;
    }
    const nlohmann::json& claims = jwt->claims;
    // The audience: one of the issuer's.
    std::vector<std::string> aud;
    if (auto a = claims.find("aud"); a != claims.end()) {
      if (a->is_string()) aud.push_back(*a);
      if (a->is_array()) {
        for (const auto& x : *a) {
          if (x.is_string()) aud.push_back(x);
        }
      }
    }
    const bool audience_ok = std::any_of(aud.begin(), aud.end(), [&](const std::string& a) {
      return std::find(issuer->audiences.begin(), issuer->audiences.end(), a) !=
             issuer->audiences.end();
    });
    if (!audience_ok) {
      const auto list = [](const std::vector<std::string>& v) {
        std::vector<std::string> q;
        for (const std::string& s : v) q.push_back(absl::StrCat("\"", s, "\""));
        return absl::StrCat("[", absl::StrJoin(q, ", "), "]");
      };
      return absl::UnauthenticatedError(absl::StrCat("token audience ", list(aud),
                                                     " does not include any of ",
                                                     list(issuer->audiences)));
    }
    const int64_t at = absl::ToUnixSeconds(now), leeway = absl::ToInt64Seconds(leeway_);
    int64_t exp = 0, nbf = 0, iat = 0;
    absl::StatusOr<bool> has_exp = NumericClaim(claims, "exp", &exp);
    if (!has_exp.ok()) return has_exp.status();
    if (!*has_exp) return absl::UnauthenticatedError("the token has no expiry (exp)");
    if (at > exp + leeway) {
      return absl::UnauthenticatedError(absl::StrCat("token expired at ", Rfc3339(exp)));
    }
    absl::StatusOr<bool> has_nbf = NumericClaim(claims, "nbf", &nbf);
    if (!has_nbf.ok()) return has_nbf.status();
    if (*has_nbf && at + leeway < nbf) {
      return absl::UnauthenticatedError(absl::StrCat("token not valid before ", Rfc3339(nbf)));
    }
    absl::StatusOr<bool> has_iat = NumericClaim(claims, "iat", &iat);
    if (!has_iat.ok()) return has_iat.status();
    if (*has_iat && at + leeway < iat) {
      return absl::UnauthenticatedError(absl::StrCat("token issued in the future, at ", Rfc3339(iat)));
    }
    return IdentityOf(*issuer, claims);
  }
  return failure;
}

absl::StatusOr<Identity> TokenAuthenticator::IdentityOf(const Issuer& issuer,
                                                        const nlohmann::json& claims) const {
  Identity identity;
  const auto str = [&](const std::string& name) {
    auto it = claims.find(name);
    return it != claims.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!issuer.cluster.empty()) {
    const std::string sub = str("sub");
    std::vector<std::string> parts = absl::StrSplit(sub, ':');
    if (parts.size() != 4 || parts[0] != "system" || parts[1] != "serviceaccount" ||
        parts[2].empty() || parts[3].empty()) {
      return absl::UnauthenticatedError(
          "the token's sub is not system:serviceaccount:<namespace>:<name>");
    }
    if (auto k = claims.find("kubernetes.io"); k != claims.end() && k->is_object()) {
      const std::string ns = k->value("namespace", parts[2]);
      std::string name = parts[3];
      if (auto sa = k->find("serviceaccount"); sa != k->end() && sa->is_object()) {
        name = sa->value("name", parts[3]);
      }
      if (ns != parts[2] || name != parts[3]) {
        return absl::UnauthenticatedError(
            "the token's kubernetes.io claim does not agree with its sub");
      }
    }
    identity.source = Identity::Source::kServiceAccount;
    identity.name = sub;
    identity.cluster = issuer.cluster;
    identity.groups = {"system:serviceaccounts", absl::StrCat("system:serviceaccounts:", parts[2]),
                       "system:authenticated"};
    return identity;
  }
  const std::string user = str(issuer.username_claim);
  if (user.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat("the token has no ", issuer.username_claim, " claim for the user name"));
  }
  identity.source = Identity::Source::kOidc;
  identity.name = issuer.username_prefix + user;
  if (!issuer.groups_claim.empty()) {
    auto g = claims.find(issuer.groups_claim);
    if (g != claims.end() && g->is_string()) {
      identity.groups.push_back(issuer.groups_prefix + g->get<std::string>());
    } else if (g != claims.end() && g->is_array()) {
      for (const auto& x : *g) {
        if (x.is_string()) identity.groups.push_back(issuer.groups_prefix + x.get<std::string>());
      }
    }
  }
  identity.groups.push_back("system:authenticated");
  return identity;
}

}  // namespace admitd::auth
