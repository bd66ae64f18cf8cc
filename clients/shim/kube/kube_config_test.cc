// Reading a kubeconfig: what the shim takes from its current context, and what it refuses.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "clients/shim/kube/kube_client.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + (dir.back() == '/' ? "" : "/") + name;
  std::ofstream(path) << text;
  return path;
}

TEST(KubeConfig, TheCurrentContextsClusterAndUser) {
  const std::string path = Write("kubeconfig-a", R"(apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: dev
  context: {cluster: dev, user: dev}
- name: prod
  context: {cluster: prod, user: admin}
clusters:
- name: dev
  cluster: {server: "https://dev:6443"}
- name: prod
  cluster:
    server: https://prod:6443
    certificate-authority-data: )" + absl::Base64Escape("CA PEM") + R"(
users:
- name: dev
  user: {token: dev-token}
- name: admin
  user:
    tokenFile: tokens/admin
    client-certificate-data: )" + absl::Base64Escape("CERT PEM") + R"(
    client-key: keys/admin.key
)");
  absl::StatusOr<KubeConfig> c = KubeConfig::FromKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://prod:6443");
  EXPECT_EQ(c->ca_data, "CA PEM");
  EXPECT_EQ(c->client_cert_data, "CERT PEM");
  EXPECT_EQ(c->token, "");
  // Relative paths are the kubeconfig's directory's.
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  EXPECT_EQ(c->token_file, dir + "tokens/admin");
  EXPECT_EQ(c->client_key_file, dir + "keys/admin.key");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST(KubeConfig, WhatItCannotUseIsAnError) {
  const std::string exec = Write("kubeconfig-b", R"(current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://c"}}]
users: [{name: u, user: {exec: {command: gke-auth}}}]
)");
  EXPECT_EQ(KubeConfig::FromKubeconfig(exec).status().message(),
            exec + ": user \"u\" authenticates with exec, which admitd-shim does not support "
                   "(use a token or a client certificate)");
  const std::string no_context = Write("kubeconfig-c", "current-context: x\ncontexts: []\n");
  EXPECT_EQ(KubeConfig::FromKubeconfig(no_context).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string bad_data = Write("kubeconfig-d", R"(current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://c", certificate-authority-data: "%%%"}}]
users: [{name: u, user: {token: t}}]
)");
  EXPECT_EQ(KubeConfig::FromKubeconfig(bad_data).status().message(),
            bad_data + ": certificate-authority-data is not base64");
}

TEST(KubeConfig, InClusterNeedsTheServiceEnvironment) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(KubeConfig::InCluster("/nonexistent").status().code(),
            absl::StatusCode::kFailedPrecondition);
  const std::string token = Write("token", "abc\n");
  const std::string dir = token.substr(0, token.rfind('/'));
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<KubeConfig> c = KubeConfig::InCluster(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->token_file, dir + "/token");
  EXPECT_EQ(c->ca_file, dir + "/ca.crt");
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

}  // namespace
}  // namespace admitd::shim
