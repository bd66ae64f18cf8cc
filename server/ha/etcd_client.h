// A client of etcd's v3 API (the etcdserverpb gRPC services KV and Lease) for admitd's high
// availability: reads, transactions, and leases with their renewal.
//
// It knows every member of one etcd cluster and sends each call to the member it last reached;
// a call that fails with UNAVAILABLE (the member is down or not reachable) moves it to the next
// member for the following calls, and a call is sent to another member whose connection is up
// when the current one's is down. No call is retried by the client itself: a transaction whose
// answer never came may have been applied, and only the caller can tell, by reading.
//
//   absl::StatusOr<std::unique_ptr<EtcdClient>> etcd =
//       EtcdClient::Create({.endpoints = {"127.0.0.1:2379", "127.0.0.1:22379"}});
//   absl::StatusOr<int64_t> lease = (*etcd)->GrantLease(absl::Seconds(5));
//
// Thread safety: every method may be called from several threads at once.
#ifndef ADMITD_SERVER_HA_ETCD_CLIENT_H_
#define ADMITD_SERVER_HA_ETCD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace admitd::ha {

struct EtcdOptions {
  // host:port of each member's client URL.
  std::vector<std::string> endpoints;
  // The deadline of one call: longer than etcd takes to elect a new leader of its own (its
  // default election timeout is 1 s), so that losing etcd's leader delays writes, not fails them.
  absl::Duration call_timeout = absl::Seconds(5);
  // TLS (any of them set; the files are read again when they change): the CA bundle etcd's
  // certificate must chain to (empty: the system's), and a client certificate with its key for
  // an etcd that requires them (--client-cert-auth).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

class EtcdClient {
 public:
  // INVALID_ARGUMENT when no endpoint is given, or a certificate without its key (or the
  // reverse); FAILED_PRECONDITION naming a TLS file that cannot be read. Connects lazily: a
  // member that is down is noticed by the first call sent to it.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(EtcdOptions options);

  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request);
  // Txn without waiting: `done` is called once with its answer, on one of gRPC's threads. Calls
  // overlap; etcd orders them as it receives them, which need not be the order they were made.
  // The client must outlive every call it started.
  void TxnAsync(etcdserverpb::TxnRequest request,
                std::function<void(absl::StatusOr<etcdserverpb::TxnResponse>)> done);
  // Drops the history (old versions of keys, deleted keys) up to etcd revision `revision`, so
  // that etcd's database stays bounded; OK when it was compacted that far already.
  absl::Status Compact(int64_t revision);

  // A new lease of `ttl` (rounded up to whole seconds, at least 1); its id.
  absl::StatusOr<int64_t> GrantLease(absl::Duration ttl);
  // Renews the lease once and returns the time it has left; NOT_FOUND once it has expired or
  // was revoked. Gives up (DEADLINE_EXCEEDED) at `deadline` when that is before the call's own.
  absl::StatusOr<absl::Duration> RenewLease(int64_t lease,
                                            absl::Time deadline = absl::InfiniteFuture());
  // Ends the lease and deletes the keys bound to it.
  absl::Status RevokeLease(int64_t lease);

  // The member the next call goes to.
  const std::string& endpoint() const;

 private:
  struct Member {
    std::string endpoint;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  };
  explicit EtcdClient(EtcdOptions options);
  // The member for the next call, and a context with the call's deadline: the current one, or
  // after it the first whose connection is up when the current one's is not (a member that went
  // away is passed over before a call is lost to it).
  const Member& Pick(grpc::ClientContext* context) const;
  // The call's status as absl::Status; after UNAVAILABLE from `member`, the next member is picked.
  absl::Status Done(const Member& member, const grpc::Status& status);

  EtcdOptions options_;
  std::vector<Member> members_;
  mutable std::atomic<size_t> current_{0};
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_ETCD_CLIENT_H_
