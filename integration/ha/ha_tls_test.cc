// etcd over TLS with client certificates (--client-cert-auth): the etcd client presents the
// replica's certificate and verifies etcd's against the CA; without a certificate, or in
// plaintext, etcd refuses it; and an admitd replica given the three files leads.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/test_ca.h"
#include "gtest/gtest.h"
#include "integration/fixtures.h"
#include "integration/ha/etcd_cluster.h"
#include "server/ha/etcd_client.h"

#ifndef ADMITD_BINARY
#error "ADMITD_BINARY must name the admitd executable"
#endif

namespace admitd::ha {
namespace {

class HaTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/etcd_tls_", getpid());
    std::filesystem::create_directories(dir_);
    testing::TestCa ca("etcd-ca");
    const testing::TestCertificate server = ca.Issue("etcd", {}, /*server=*/true);
    const testing::TestCertificate client = ca.Issue("admitd-r0", {}, /*server=*/false);
    testing::WriteFileAtomically(dir_ + "/ca.crt", ca.cert_pem());
    testing::WriteFileAtomically(dir_ + "/server.crt", server.cert_pem);
    testing::WriteFileAtomically(dir_ + "/server.key", server.key_pem);
    testing::WriteFileAtomically(dir_ + "/client.crt", client.cert_pem);
    testing::WriteFileAtomically(dir_ + "/client.key", client.key_pem);
    absl::StatusOr<std::unique_ptr<testing::EtcdCluster>> etcd = testing::EtcdCluster::Start(
        1, dir_ + "/etcd", absl::Seconds(30),
        testing::EtcdTls{.ca_file = dir_ + "/ca.crt",
                         .cert_file = dir_ + "/server.crt",
                         .key_file = dir_ + "/server.key",
                         .client_cert_file = dir_ + "/client.crt",
                         .client_key_file = dir_ + "/client.key"});
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = *std::move(etcd);
  }
  void TearDown() override {
    etcd_.reset();
    std::filesystem::remove_all(dir_);
  }

  absl::Status Read(EtcdOptions options) {
    options.endpoints = etcd_->endpoints();
    options.call_timeout = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Create(options);
    if (!client.ok()) return client.status();
    etcdserverpb::RangeRequest r;
    r.set_key("/admitd/probe");
    return (*client)->Range(r).status();
  }

  std::string dir_;
  std::unique_ptr<testing::EtcdCluster> etcd_;
};

TEST_F(HaTlsTest, OnlyAClientWithACertificateOfTheCaIsServed) {
  EXPECT_TRUE(Read({.ca_file = dir_ + "/ca.crt",
                    .cert_file = dir_ + "/client.crt",
                    .key_file = dir_ + "/client.key"})
                  .ok());
  EXPECT_FALSE(Read({.ca_file = dir_ + "/ca.crt"}).ok());  // no client certificate
  EXPECT_FALSE(Read({}).ok());                             // plaintext
  absl::Status half = Read({.ca_file = dir_ + "/ca.crt", .cert_file = dir_ + "/client.crt"});
  EXPECT_EQ(half.code(), absl::StatusCode::kInvalidArgument) << half;
  absl::Status missing = Read({.ca_file = dir_ + "/nothing.crt"});
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition) << missing;
  EXPECT_NE(missing.message().find("nothing.crt"), std::string::npos) << missing;
}

TEST_F(HaTlsTest, AReplicaGivenItsCertificateLeads) {
  absl::StatusOr<std::unique_ptr<testing::Process>> replica = testing::Process::Start(
      ADMITD_BINARY, dir_ + "/admitd",
      {"--ha-etcd-endpoints", absl::StrJoin(etcd_->endpoints(), ","), "--ha-domain", "tls",
       "--ha-lease-ttl", "2s", "--ha-etcd-ca-file", dir_ + "/ca.crt", "--ha-etcd-cert-file",
       dir_ + "/client.crt", "--ha-etcd-key-file", dir_ + "/client.key"},
      absl::Seconds(30), "msg=leading");
  ASSERT_TRUE(replica.ok()) << replica.status();
}

}  // namespace
}  // namespace admitd::ha
