#include "server/auth/identity.h"

#include "absl/strings/str_cat.h"

namespace admitd::auth {

std::string Identity::Describe() const {
  switch (source) {
    case Source::kAnonymous:
      return "anonymous";
    case Source::kCertificate:
      return absl::StrCat("certificate ", name);
    case Source::kServiceAccount:
      return absl::StrCat("serviceaccount ", name, " (cluster ", cluster, ")");
    case Source::kOidc:
      return absl::StrCat("user ", name);
  }
  return name;
}

}  // namespace admitd::auth
