#include "server/ha/leader_election.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace admitd::ha {
namespace {

// The leader key's value: "<id>\n<address>".
std::string LeaderValue(const ElectionOptions& o) { return absl::StrCat(o.id, "\n", o.address); }

// Compares the key's create revision with `revision` (0: the key does not exist).
void CompareCreateRevision(const std::string& key, int64_t revision, etcdserverpb::TxnRequest* txn) {
  etcdserverpb::Compare* c = txn->add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_create_revision(revision);
}

}  // namespace

LeaderElection::LeaderElection(EtcdClient* etcd, ElectionOptions options)
    : etcd_(etcd), options_(std::move(options)), key_(LeaderKey(options_.domain)) {}

LeaderElection::~LeaderElection() { (void)Resign(); }

std::string LeaderElection::LeaderKey(const std::string& domain) {
  return absl::StrCat("/admitd/", domain, "/leader");
}

int64_t LeaderElection::term() const {
  absl::MutexLock lock(&mu_);
  return term_;
}

absl::StatusOr<int64_t> LeaderElection::Campaign(absl::Time until) {
  if (leading()) return absl::FailedPreconditionError("already leading");
  StopRenewal();
  int64_t lost_lease = 0;  // of a term lost earlier: its key, if still there, must go
  {
    absl::MutexLock lock(&mu_);
    std::swap(lost_lease, lease_);
  }
  if (lost_lease != 0) (void)etcd_->RevokeLease(lost_lease);
  int64_t lease = 0;
  absl::Time renewed = absl::InfinitePast();
  // Waits one poll interval, or less when `until` comes first; false once `until` has passed.
  auto wait = [&] {
    const absl::Time now = absl::Now();
    if (now >= until) return false;
    absl::SleepFor(std::min(options_.poll, until - now));
    return true;
  };
  while (true) {
    if (absl::Now() >= until) break;
    if (lease == 0) {
      absl::StatusOr<int64_t> granted = etcd_->GrantLease(options_.ttl);
      if (!granted.ok()) {
        if (!wait()) break;
        continue;
      }
      lease = *granted;
      renewed = absl::Now();
    }
    etcdserverpb::TxnRequest txn;
    CompareCreateRevision(key_, 0, &txn);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_value(LeaderValue(options_));
    put->set_lease(lease);
    txn.add_failure()->mutable_request_range()->set_key(key_);
    absl::StatusOr<etcdserverpb::TxnResponse> answer = etcd_->Txn(txn);
    if (answer.ok() && answer->succeeded()) {
      const int64_t term = answer->header().revision();
      absl::MutexLock lock(&mu_);
      lease_ = lease;
      term_ = term;
      stop_ = false;
      renewal_ = std::thread([this, lease, term] { RenewLoop(lease, term); });
      return term;
    }
    // Another replica leads (or etcd did not answer): keep the waiting lease alive, so that this
    // replica can take the key the moment it is free.
    if (absl::Now() - renewed >= options_.ttl / 3) {
      const absl::Time sent = absl::Now();
      // Never blocked past the moment etcd may let the key go: the check below comes in time.
      absl::StatusOr<absl::Duration> left = etcd_->RenewLease(lease, renewed + options_.ttl);
      if (left.ok()) {
        renewed = sent;
      } else if (absl::IsNotFound(left.status())) {
        lease = 0;
      }
    }
    if (!wait()) break;
  }
  if (lease != 0) (void)etcd_->RevokeLease(lease);
  return absl::DeadlineExceededError(
      absl::StrCat("not the leader of domain ", options_.domain, " by the deadline"));
}

absl::StatusOr<LeaderInfo> LeaderElection::Leader() {
  etcdserverpb::RangeRequest request;
  request.set_key(key_);
  absl::StatusOr<etcdserverpb::RangeResponse> answer = etcd_->Range(request);
  if (!answer.ok()) return answer.status();
  if (answer->kvs().empty()) {
    return absl::NotFoundError(absl::StrCat("domain ", options_.domain, " has no leader"));
  }
  const mvccpb::KeyValue& kv = answer->kvs(0);
  std::pair<std::string, std::string> parts = absl::StrSplit(kv.value(), absl::MaxSplits('\n', 1));
  return LeaderInfo{parts.first, parts.second, kv.create_revision()};
}

absl::StatusOr<etcdserverpb::TxnResponse> LeaderElection::FencedTxn(
    const etcdserverpb::TxnRequest& txn) {
  const int64_t term = this->term();
  if (term == 0) return absl::FailedPreconditionError("not the leader");
  etcdserverpb::TxnRequest fenced;
  CompareCreateRevision(key_, term, &fenced);
  *fenced.add_success()->mutable_request_txn() = txn;
  return Unfence(term, etcd_->Txn(fenced));
}

void LeaderElection::FencedTxnAsync(
    const etcdserverpb::TxnRequest& txn,
    std::function<void(absl::StatusOr<etcdserverpb::TxnResponse>)> done) {
  const int64_t term = this->term();
  if (term == 0) {
    done(absl::FailedPreconditionError("not the leader"));
    return;
  }
  etcdserverpb::TxnRequest fenced;
  CompareCreateRevision(key_, term, &fenced);
  *fenced.add_success()->mutable_request_txn() = txn;
  etcd_->TxnAsync(std::move(fenced),
                  [this, term, done = std::move(done)](
                      absl::StatusOr<etcdserverpb::TxnResponse> answer) {
                    done(Unfence(term, std::move(answer)));
                  });
}

absl::StatusOr<etcdserverpb::TxnResponse> LeaderElection::Unfence(
    int64_t term, absl::StatusOr<etcdserverpb::TxnResponse> answer) {
  if (!answer.ok()) return answer.status();
  if (!answer->succeeded()) {
    Lose(term);
    return absl::AbortedError(
        absl::StrCat("deposed: the leader key of domain ", options_.domain, " is no longer term ",
                     term, "; nothing was written"));
  }
  etcdserverpb::TxnResponse inner = std::move(*answer->mutable_responses(0)->mutable_response_txn());
  *inner.mutable_header() = answer->header();
  return inner;
}

absl::Status LeaderElection::Resign() {
  StopRenewal();
  int64_t lease = 0, term = 0;
  {
    absl::MutexLock lock(&mu_);
    std::swap(lease, lease_);
    std::swap(term, term_);
  }
  if (lease == 0) return absl::OkStatus();
  if (term != 0) {
    etcdserverpb::TxnRequest txn;
    CompareCreateRevision(key_, term, &txn);
    txn.add_success()->mutable_request_delete_range()->set_key(key_);
    (void)etcd_->Txn(txn);
  }
  return etcd_->RevokeLease(lease);
}

void LeaderElection::PauseRenewalForTesting(bool paused) {
  absl::MutexLock lock(&mu_);
  paused_ = paused;
}

void LeaderElection::RenewLoop(int64_t lease, int64_t term) {
  absl::Time renewed = absl::Now();  // the lease was granted or renewed no earlier than this
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Duration next =
          std::min(options_.ttl / 3, renewed + options_.ttl - absl::Now());
      mu_.AwaitWithTimeout(absl::Condition(&stop_), std::max(next, absl::ZeroDuration()));
      if (stop_) return;
    }
    bool paused;
    {
      absl::MutexLock lock(&mu_);
      paused = paused_;
    }
    if (!paused) {
      const absl::Time sent = absl::Now();
      // Never blocked past the moment etcd may let the key go: the check below comes in time.
      absl::StatusOr<absl::Duration> left = etcd_->RenewLease(lease, renewed + options_.ttl);
      if (left.ok()) {
        renewed = sent;
      } else if (absl::IsNotFound(left.status())) {
        Lose(term);
        return;
      }
    }
    // etcd may let the key go once the TTL has passed since the last renewal it received.
    if (absl::Now() - renewed >= options_.ttl) {
      Lose(term);
      return;
    }
  }
}

void LeaderElection::Lose(int64_t term) {
  {
    absl::MutexLock lock(&mu_);
    if (term_ != term) return;
    term_ = 0;
  }
  if (options_.on_lost) options_.on_lost();
}

void LeaderElection::StopRenewal() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (renewal_.joinable()) {
    if (renewal_.get_id() == std::this_thread::get_id()) {
      renewal_.detach();  // on_lost campaigning again: this thread ends right after
    } else {
      renewal_.join();
    }
  }
  absl::MutexLock lock(&mu_);
  stop_ = false;
}

}  // namespace admitd::ha
