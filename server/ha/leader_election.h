// Leader election among the admitd replicas of one admission domain, on an etcd lease, with
// fencing (docs/high-availability.md).
//
// A replica campaigns by creating the domain's leader key, /admitd/<domain>/leader, bound to a
// lease of its own, in a transaction that succeeds only while the key does not exist. The winner
// leads as long as it keeps its lease renewed; its term is the key's create revision, which is
// unique and grows from one leader to the next. Every write a leader makes goes through
// FencedTxn, which adds one comparison: the key's create revision still equals the term. A
// leader whose lease ran out (it was paused, partitioned or too slow to renew) loses the key;
// once another replica has created it again, or while it is gone, the deposed leader's writes
// fail and change nothing. A leader also stops calling itself one as soon as a renewal fails to
// land within the lease's TTL, which is before etcd lets the key go.
//
//   LeaderElection election(etcd, {.domain = "prod", .id = "admitd-0", .address = "10.0.0.5:50051"});
//   absl::StatusOr<int64_t> term = election.Campaign(absl::Now() + absl::Minutes(1));
//   absl::StatusOr<etcdserverpb::TxnResponse> r = election.FencedTxn(txn);  // ABORTED once deposed
//
// Thread safety: every method may be called from several threads at once. The renewal runs on a
// thread of its own while this replica leads.
#ifndef ADMITD_SERVER_HA_LEADER_ELECTION_H_
#define ADMITD_SERVER_HA_LEADER_ELECTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/ha/etcd_client.h"

namespace admitd::ha {

struct ElectionOptions {
  std::string domain;   // the admission domain: one leader per domain
  std::string id;       // this replica's name, unique in the domain
  std::string address;  // where this replica serves gRPC, told to the others while it leads
  absl::Duration ttl = absl::Seconds(5);          // the lease's
  absl::Duration poll = absl::Milliseconds(100);  // how often a follower looks for a free key
  // Called (from the renewal thread) when this replica stops leading without resigning.
  std::function<void()> on_lost;
};

// The leader as its key names it.
struct LeaderInfo {
  std::string id;
  std::string address;
  int64_t term = 0;
};

class LeaderElection {
 public:
  LeaderElection(EtcdClient* etcd, ElectionOptions options);
  // Resigns when leading.
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // The leader key of `domain`.
  static std::string LeaderKey(const std::string& domain);

  // Campaigns until this replica leads and returns its term, or until `until` passes
  // (DEADLINE_EXCEEDED). FAILED_PRECONDITION when it leads already.
  absl::StatusOr<int64_t> Campaign(absl::Time until);
  // The leader etcd knows of; NOT_FOUND when there is none.
  absl::StatusOr<LeaderInfo> Leader();
  // This replica's term while it believes it leads, else 0.
  int64_t term() const;
  bool leading() const { return term() != 0; }

  // `txn` with the leadership comparison added: applied only while this replica's key is the
  // leader key. ABORTED (and this replica no longer leads) when it is not; FAILED_PRECONDITION
  // when it does not lead to begin with. `succeeded` in the answer is that of `txn`'s own
  // comparisons.
  absl::StatusOr<etcdserverpb::TxnResponse> FencedTxn(const etcdserverpb::TxnRequest& txn);
  // FencedTxn without waiting: `done` gets its answer once, on one of gRPC's threads (or on the
  // calling one when this replica does not lead). The election must outlive the call.
  void FencedTxnAsync(const etcdserverpb::TxnRequest& txn,
                      std::function<void(absl::StatusOr<etcdserverpb::TxnResponse>)> done);

  // Gives up leadership: deletes the key (if still this replica's) and ends the lease.
  absl::Status Resign();

  // Tests: stop (or resume) renewing the lease, as a paused or partitioned process would.
  void PauseRenewalForTesting(bool paused);

 private:
  void RenewLoop(int64_t lease, int64_t term);
  // FencedTxn's answer from etcd's answer to the fenced transaction of `term`.
  absl::StatusOr<etcdserverpb::TxnResponse> Unfence(
      int64_t term, absl::StatusOr<etcdserverpb::TxnResponse> answer);
  // Stops leading `term` (if still leading it) and says so through on_lost.
  void Lose(int64_t term);
  void StopRenewal();

  EtcdClient* const etcd_;
  const ElectionOptions options_;
  const std::string key_;

  mutable absl::Mutex mu_;
  int64_t lease_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t term_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  std::thread renewal_;  // runs while leading; joined by StopRenewal
};

}  // namespace admitd::ha

#endif  // ADMITD_SERVER_HA_LEADER_ELECTION_H_
