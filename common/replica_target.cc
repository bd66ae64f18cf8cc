#include "common/replica_target.h"

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace admitd {
namespace {

// The methods whose repetition changes nothing: reads, declarative writes, and Submit (by uid).
constexpr const char* kRepeatable[][2] = {
    {"admitd.v1.AdmissionService", "Submit"}, {"admitd.v1.AdmissionService", "Get"},
    {"admitd.v1.AdmissionService", "List"},   {"admitd.v1.QueueService", "Apply"},
    {"admitd.v1.QueueService", "Get"},        {"admitd.v1.QueueService", "List"},
    {"admitd.v1.QueueService", "Ping"},       {"admitd.v1.PodService", "ListDirectives"},
};

std::string BuildServiceConfig() {
  std::vector<std::string> names;
  for (const auto& [service, method] : kRepeatable) {
    names.push_back(absl::StrCat(R"({"service":")", service, R"(","method":")", method, R"("})"));
  }
  return absl::StrCat(
      R"({"loadBalancingConfig":[{"round_robin":{}}],)",
      R"("healthCheckConfig":{"serviceName":""},)",
      R"("methodConfig":[)",
      // Every other call of admitd's services waits for a leader.
      R"({"name":[{"service":"admitd.v1.AdmissionService"},{"service":"admitd.v1.QueueService"},)",
      R"({"service":"admitd.v1.PodService"}],"waitForReady":true},)",
      R"({"name":[)", absl::StrJoin(names, ","), R"(],"waitForReady":true,)",
      R"("retryPolicy":{"maxAttempts":5,"initialBackoff":"0.2s","maxBackoff":"2s",)",
      R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})");
}

}  // namespace

bool IsReplicaList(const std::string& target) { return target.find(',') != std::string::npos; }

absl::StatusOr<std::string> ReplicaListTarget(const std::string& list, std::string* authority) {
  std::vector<std::string> v4, v6;
  bool first = true;
  for (absl::string_view entry : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    const size_t colon = entry.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(entry.substr(colon + 1), &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica address \"", entry, "\" is not host:port"));
    }
    std::string host(entry.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    // IPv4 first, so that "localhost" means the same on every machine.
    addrinfo* found = nullptr;
    int rc = 0;
    for (const int family : {AF_INET, AF_INET6}) {
      addrinfo hints{};
      hints.ai_family = family;
      hints.ai_socktype = SOCK_STREAM;
      rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
      if (rc == 0) break;
    }
    if (rc != 0) {
      return absl::InvalidArgumentError(absl::StrCat("replica address \"", entry,
                                                     "\" does not resolve: ", gai_strerror(rc)));
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (found->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
                sizeof(text));
      v4.push_back(absl::StrCat(text, ":", port));
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text,
                sizeof(text));
      v6.push_back(absl::StrCat("[", text, "]:", port));
    }
    freeaddrinfo(found);
    if (first) *authority = std::string(entry);
    first = false;
  }
  if (v4.empty() && v6.empty()) {
    return absl::InvalidArgumentError("the replica address list is empty");
  }
  if (!v4.empty() && !v6.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica addresses \"", list, "\" mix IPv4 and IPv6"));
  }
  return v4.empty() ? absl::StrCat("ipv6:", absl::StrJoin(v6, ","))
                    : absl::StrCat("ipv4:", absl::StrJoin(v4, ","));
}

const std::string& FollowLeaderServiceConfig() {
  static const std::string* config = new std::string(BuildServiceConfig());
  return *config;
}

}  // namespace admitd
