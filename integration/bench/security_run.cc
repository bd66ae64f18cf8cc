#include "integration/bench/security_run.h"

#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/connection.h"
#include "common/testing/test_ca.h"
#include "integration/bench/raw_run.h"
#include "integration/fixtures.h"
#include "server/auth/testing/token_signer.h"

namespace admitd::bench {
namespace {

constexpr char kIssuer[] = "https://kubernetes.default.svc.cluster.local";

struct SecuritySetting {
  const char* name;
  std::vector<std::string> args;        // for admitd
  ConnectionOptions client;    // target filled in per run
};

}  // namespace

int RunSecurityComparison(const std::string& admitd_binary,
                          const std::vector<std::string>& admitd_args, int clients,
                          absl::Duration duration) {
  char tmpl[] = "/tmp/admitd-bench-security-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "mkdtemp failed\n");
    return 1;
  }
  const std::string dir = tmpl;
  testing::TestCa ca("bench-ca");
  const testing::TestCertificate server = ca.Issue("admitd", {}, /*server=*/true);
  const testing::TestCertificate client = ca.Issue("bench", {}, /*server=*/false);
  testing::WriteFileAtomically(dir + "/ca.crt", ca.cert_pem());
  testing::WriteFileAtomically(dir + "/tls.crt", server.cert_pem);
  testing::WriteFileAtomically(dir + "/tls.key", server.key_pem);
  testing::WriteFileAtomically(dir + "/client.crt", client.cert_pem);
  testing::WriteFileAtomically(dir + "/client.key", client.key_pem);
  auth::testing::TokenSigner issuer = auth::testing::TokenSigner::Rsa("bench-key");
  testing::WriteFileAtomically(dir + "/jwks.json", auth::testing::Jwks({&issuer}));
  testing::WriteFileAtomically(dir + "/authn.yaml", absl::StrCat(R"(apiVersion: admitd.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: )", kIssuer, R"(, audiences: [admitd]}
  jwksFile: jwks.json
  serviceAccountsOf: bench
)"));
  // Admin for both callers, after a few bindings that do not match them, as in a real policy.
  std::string policy = "apiVersion: admitd.io/v1\nkind: AuthorizationPolicy\nbindings:\n";
  for (int i = 0; i < 50; ++i) {
    absl::StrAppend(&policy, "- {role: team, namespaces: [team-", i,
                    "], subjects: [{kind: Group, name: team-", i, "}]}\n");
  }
  absl::StrAppend(&policy,
                  "- role: admin\n  subjects:\n  - {kind: User, name: bench}\n"
                  "  - {kind: ServiceAccount, cluster: bench, namespace: bench, name: bench}\n");
  testing::WriteFileAtomically(dir + "/policy.yaml", policy);
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  const std::string token = issuer.Sign({{"iss", kIssuer},
                                         {"aud", {"admitd"}},
                                         {"sub", "system:serviceaccount:bench:bench"},
                                         {"iat", now},
                                         {"exp", now + 24 * 3600}});
  const std::vector<std::string> tls = {"--tls-cert-file", dir + "/tls.crt",
                                        "--tls-private-key-file", dir + "/tls.key"};
  const auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  ConnectionOptions verify_server;
  verify_server.ca_file = dir + "/ca.crt";
  ConnectionOptions mtls = verify_server;
  mtls.cert_file = dir + "/client.crt";
  mtls.key_file = dir + "/client.key";
  ConnectionOptions bearer = verify_server;
  bearer.token = token;
  std::vector<SecuritySetting> settings = {
      {"plaintext", {}, {}},
      {"TLS", tls, verify_server},
      {"mTLS + policy", with(tls, {"--client-ca-file", dir + "/ca.crt", "--authorization-policy",
                                   dir + "/policy.yaml"}),
       mtls},
      {"TLS + token + policy",
       with(tls, {"--authentication-config", dir + "/authn.yaml", "--authorization-policy",
                  dir + "/policy.yaml"}),
       bearer},
  };
  std::vector<RawReport> reports;
  int failed = 0;
  for (size_t i = 0; i < settings.size(); ++i) {
    SecuritySetting& setting = settings[i];
    auto process = testing::Process::Start(admitd_binary, absl::StrCat(dir, "/data-", i),
                                           with(admitd_args, setting.args));
    if (!process.ok()) {
      std::fprintf(stderr, "cannot start admitd (%s): %s\n", setting.name,
                   std::string(process.status().message()).c_str());
      std::filesystem::remove_all(dir);
      return 1;
    }
    ChannelFactory connect = [options = setting.client](const std::string& address) {
        ConnectionOptions o = options;
        o.target = address;
        // Each channel its own connection, as separate clients have.
        grpc::ChannelArguments args;
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        return *Connect(o, args);
    };
    std::printf("--- %s ---\n", setting.name);
    RawReport report = RunRaw((*process)->address(), clients, duration, "", connect,
                              (*process)->pid());
    PrintRawReport(report);
    std::fflush(stdout);
    failed += report.ok() ? 0 : 1;
    reports.push_back(report);
    (*process)->Kill(SIGTERM);
  }
  std::filesystem::remove_all(dir);
  const RawReport& base = reports[0];
  std::printf("\n%-24s %14s %8s %18s %8s %30s\n", "setting", "null RPCs/s", "ratio",
              "workload cycles/s", "ratio", "admitd CPU per cycle / per RPC");
  for (size_t i = 0; i < reports.size(); ++i) {
    const RawReport& r = reports[i];
    std::printf("%-24s %14.0f %8.3f %18.0f %8.3f %10.1f / %5.1f us (%5.2fx)\n",
                settings[i].name, r.pings_per_second,
                base.pings_per_second > 0 ? r.pings_per_second / base.pings_per_second : 0,
                r.workloads_per_second,
                base.workloads_per_second > 0 ? r.workloads_per_second / base.workloads_per_second
                                              : 0,
                r.server_cpu_per_cycle_s * 1e6, r.server_cpu_per_ping_s * 1e6,
                r.server_cpu_per_ping_s > 0 ? r.server_cpu_per_cycle_s / r.server_cpu_per_ping_s
                                            : 0);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace admitd::bench
