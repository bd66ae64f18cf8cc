// Test-only: the fixture of the high-availability tests. Each test suite starts a real 3-member
// etcd (Debian's etcd-server, integration/ha/etcd_cluster.h) on loopback ports and removes it
// afterwards; each test works in an admission domain of its own name, with etcd clients and
// election options as a replica has them, and helpers for raw etcd reads and writes.
#ifndef ADMITD_INTEGRATION_HA_HA_FIXTURE_H_
#define ADMITD_INTEGRATION_HA_HA_FIXTURE_H_

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "integration/ha/etcd_cluster.h"
#include "server/ha/etcd_client.h"
#include "server/ha/leader_election.h"

namespace admitd::ha {

class HaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/etcd_", getpid()));
    absl::StatusOr<std::unique_ptr<testing::EtcdCluster>> etcd =
        testing::EtcdCluster::Start(3, *dir_);
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = etcd->release();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  // A client of every member, as a replica has. A machine busy with other tests can take a
  // second for one write: tests of etcd's own deadline give a shorter `call_timeout`.
  std::unique_ptr<EtcdClient> Client(absl::Duration call_timeout = absl::Seconds(5)) {
    absl::StatusOr<std::unique_ptr<EtcdClient>> c =
        EtcdClient::Create({.endpoints = etcd_->endpoints(), .call_timeout = call_timeout});
    EXPECT_TRUE(c.ok()) << c.status();
    return *std::move(c);
  }

  // A replica of the test's own domain.
  ElectionOptions Replica(const std::string& id) {
    ElectionOptions o;
    o.domain = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.id = id;
    o.address = absl::StrCat(id, ".admitd:50051");
    o.ttl = absl::Seconds(2);
    o.poll = absl::Milliseconds(50);
    return o;
  }

  // A transaction that puts `key`.
  static etcdserverpb::TxnRequest PutTxn(const std::string& key, const std::string& value) {
    etcdserverpb::TxnRequest txn;
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    return txn;
  }

  // election.FencedTxn(txn), tried again while etcd itself is briefly unavailable (electing a
  // leader of its own on a loaded machine): only a refusal or a success ends it.
  static absl::StatusOr<etcdserverpb::TxnResponse> FencedWrite(LeaderElection& election,
                                                               const etcdserverpb::TxnRequest& txn) {
    absl::StatusOr<etcdserverpb::TxnResponse> answer;
    const absl::Time until = absl::Now() + absl::Seconds(10);
    do {
      answer = election.FencedTxn(txn);
      if (answer.ok() || (!absl::IsUnavailable(answer.status()) &&
                          !absl::IsDeadlineExceeded(answer.status()))) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(100));
    } while (absl::Now() < until);
    return answer;
  }

  // The value of `key`, or "" when it does not exist.
  std::string Read(EtcdClient& client, const std::string& key) {
    etcdserverpb::RangeRequest r;
    r.set_key(key);
    absl::StatusOr<etcdserverpb::RangeResponse> answer = client.Range(r);
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() && !answer->kvs().empty() ? answer->kvs(0).value() : "";
  }

  inline static std::string* dir_ = nullptr;
  inline static testing::EtcdCluster* etcd_ = nullptr;
};

}  // namespace admitd::ha

#endif  // ADMITD_INTEGRATION_HA_HA_FIXTURE_H_
