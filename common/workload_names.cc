#include "common/workload_names.h"

#include <openssl/sha.h>

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace admitd {

std::string GeneratedWorkloadName(const std::string& kind, const std::string& group,
                                  const std::string& owner_name, const std::string& owner_uid,
                                  const std::string& extra) {
  std::string input = absl::StrCat(kind, "\n", group, "\n", owner_name, "\n", owner_uid);
  if (!extra.empty()) absl::StrAppend(&input, "\n", extra);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  char hex[7];
  std::snprintf(hex, sizeof(hex), "%02x%02x%02x", digest[0], digest[1], digest[2]);
  std::string prefix = absl::StrCat(absl::AsciiStrToLower(kind), "-", owner_name);
  constexpr size_t kMaxName = 253;
  if (prefix.size() > kMaxName - 6) prefix.resize(kMaxName - 6);
  return absl::StrCat(prefix, "-", std::string(hex, 5));
}

}  // namespace admitd
