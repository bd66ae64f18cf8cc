#include "server/ha/replicated_log.h"

#include <random>
#include <utility>

#include "absl/synchronization/notification.h"
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/ha/log_batch.h"

namespace admitd::ha {
namespace {

// 128 random bits, in hex: a log's name.
std::string NewLogId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&id, absl::Hex(random(), absl::kZeroPad8));
  return id;
}

// The transactions of one append: each holds whole chunks, below the size and operation limits.
std::vector<etcdserverpb::TxnRequest> AppendTxns(const std::string& domain,
                                                 const store::Batch& batch, uint64_t previous,
                                                 const LogOptions& options,
                                                 const std::string& fence_key,
                                                 int64_t fence_revision) {
  std::vector<std::string> chunks =
      EncodeChunks(batch, previous, options.max_chunk_bytes);
  std::vector<etcdserverpb::TxnRequest> txns;
  size_t bytes = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (txns.empty() || static_cast<size_t>(txns.back().success_size()) >= options.max_txn_ops ||
        bytes + chunks[i].size() > options.max_txn_bytes) {
      etcdserverpb::TxnRequest& txn = txns.emplace_back();
      etcdserverpb::Compare* fence = txn.add_compare();
      fence->set_key(fence_key);
      fence->set_target(etcdserverpb::Compare::MOD);
      fence->set_result(etcdserverpb::Compare::EQUAL);
      fence->set_mod_revision(fence_revision);
      bytes = 0;
    }
    etcdserverpb::PutRequest* put = txns.back().add_success()->mutable_request_put();
    put->set_key(LogKey(domain, batch.revision, static_cast<uint32_t>(i)));
    bytes += chunks[i].size();
    put->set_value(std::move(chunks[i]));
  }
  return txns;
}

}  // namespace

ReplicatedLog::ReplicatedLog(EtcdClient* etcd, LeaderElection* election, LogOptions options)
    : etcd_(etcd), election_(election), options_(std::move(options)) {}

std::string ReplicatedLog::FenceKey(const std::string& domain) {
  return absl::StrCat("/admitd/", domain, "/log-fence");
}

std::string ReplicatedLog::IdKey(const std::string& domain) {
  return absl::StrCat("/admitd/", domain, "/log-id");
}

std::string ReplicatedLog::TrimmedKey(const std::string& domain) {
  return absl::StrCat("/admitd/", domain, "/log-trimmed");
}

absl::StatusOr<ReplicatedLog::State> ReplicatedLog::ReadState() {
  int64_t read_at = 0;
  return ReadStateAt(0, &read_at);
}

absl::StatusOr<ReplicatedLog::State> ReplicatedLog::ReadStateAt(int64_t at, int64_t* read_at) {
  // log-fence, log-id and log-trimmed: every key from "log-" to "log." (the log's own keys are
  // under "log/").
  etcdserverpb::RangeRequest range;
  range.set_key(absl::StrCat("/admitd/", options_.domain, "/log-"));
  range.set_range_end(absl::StrCat("/admitd/", options_.domain, "/log."));
  range.set_revision(at);
  absl::StatusOr<etcdserverpb::RangeResponse> answer = etcd_->Range(range);
  if (!answer.ok()) return answer.status();
  *read_at = answer->header().revision();
  State state;
  for (const mvccpb::KeyValue& kv : answer->kvs()) {
    if (kv.key() == IdKey(options_.domain)) state.id = kv.value();
    if (kv.key() == TrimmedKey(options_.domain) && !absl::SimpleAtoi(kv.value(), &state.trimmed)) {
      return absl::DataLossError(absl::StrCat(kv.key(), " holds \"", kv.value(),
                                              "\", not a revision"));
    }
  }
  return state;
}

absl::Status ReplicatedLog::Trim(uint64_t upto) {
  const int64_t fence = fence_revision_.load();
  if (fence == 0 || election_ == nullptr) {
    return absl::FailedPreconditionError("only the log's writer trims it (TakeOver first)");
  }
  etcdserverpb::TxnRequest trim;
  etcdserverpb::Compare* same = trim.add_compare();
  same->set_key(FenceKey(options_.domain));
  same->set_target(etcdserverpb::Compare::MOD);
  same->set_result(etcdserverpb::Compare::EQUAL);
  same->set_mod_revision(fence);
  etcdserverpb::DeleteRangeRequest* del = trim.add_success()->mutable_request_delete_range();
  del->set_key(LogKey(options_.domain, 0, 0));
  del->set_range_end(LogKey(options_.domain, upto + 1, 0));
  etcdserverpb::PutRequest* put = trim.add_success()->mutable_request_put();
  put->set_key(TrimmedKey(options_.domain));
  put->set_value(absl::StrCat(upto));
  absl::StatusOr<etcdserverpb::TxnResponse> answer = election_->FencedTxn(trim);
  if (!answer.ok()) return answer.status();
  if (!answer->succeeded()) {
    return absl::AbortedError(absl::StrCat("the log of domain ", options_.domain,
                                           " was taken over by another writer"));
  }
  return etcd_->Compact(answer->header().revision());
}

absl::Status ReplicatedLog::TakeOver(store::Store* local) {
  if (election_ == nullptr || !election_->leading()) {
    return absl::FailedPreconditionError(
        absl::StrCat("not the leader of domain ", options_.domain, ": the log is not ours to write"));
  }
  fence_revision_.store(0);
  etcdserverpb::TxnRequest move;
  etcdserverpb::PutRequest* put = move.add_success()->mutable_request_put();
  put->set_key(FenceKey(options_.domain));
  put->set_value(absl::StrCat(election_->term()));
  absl::StatusOr<etcdserverpb::TxnResponse> moved = election_->FencedTxn(move);
  if (!moved.ok()) return moved.status();
  const int64_t fence_revision = moved->header().revision();  // the put's: the fence's mod revision

  // The log's first leader names it, and declares what its store already holds (a store that
  // ran alone before) as reachable by snapshot only.
  absl::StatusOr<State> state = ReadState();
  if (!state.ok()) return state.status();
  if (state->id.empty()) {
    etcdserverpb::TxnRequest name;
    etcdserverpb::Compare* absent = name.add_compare();
    absent->set_key(IdKey(options_.domain));
    absent->set_target(etcdserverpb::Compare::VERSION);
    absent->set_result(etcdserverpb::Compare::EQUAL);
    absent->set_version(0);
    etcdserverpb::PutRequest* id = name.add_success()->mutable_request_put();
    id->set_key(IdKey(options_.domain));
    id->set_value(NewLogId());
    etcdserverpb::PutRequest* trimmed = name.add_success()->mutable_request_put();
    trimmed->set_key(TrimmedKey(options_.domain));
    trimmed->set_value(absl::StrCat(local->revision()));
    absl::StatusOr<etcdserverpb::TxnResponse> named = election_->FencedTxn(name);
    if (!named.ok()) return named.status();
  }

  // Everything that landed before the fence moved is now visible: apply the complete batches,
  // then delete the parts that follow them.
  if (absl::StatusOr<uint64_t> applied = CatchUp(local); !applied.ok()) return applied.status();
  etcdserverpb::TxnRequest drop;
  etcdserverpb::DeleteRangeRequest* del = drop.add_success()->mutable_request_delete_range();
  del->set_key(LogKey(options_.domain, local->revision() + 1, 0));
  del->set_range_end(LogEnd(options_.domain));
  absl::StatusOr<etcdserverpb::TxnResponse> dropped = election_->FencedTxn(drop);
  if (!dropped.ok()) return dropped.status();
  previous_ = local->revision();
  fence_revision_.store(fence_revision);
  return absl::OkStatus();
}

absl::Status ReplicatedLog::Settle(const absl::StatusOr<etcdserverpb::TxnResponse>& answer,
                                   uint64_t revision) {
  if (answer.ok() && answer->succeeded()) return absl::OkStatus();
  fence_revision_.store(0);  // until TakeOver has settled what landed
  if (!answer.ok()) return answer.status();
  return absl::AbortedError(absl::StrCat("the log of domain ", options_.domain,
                                         " was taken over by another writer; batch ", revision,
                                         " was not written"));
}

absl::Status ReplicatedLog::Append(const store::Batch& batch) {
  absl::Notification appended;
  absl::Status status;
  AppendAsync(batch, [&](absl::Status s) {
    status = std::move(s);
    appended.Notify();
  });
  appended.WaitForNotification();
  return status;
}

void ReplicatedLog::AppendAsync(const store::Batch& batch, std::function<void(absl::Status)> done) {
  const int64_t fence = fence_revision_.load();
  if (fence == 0) {
    done(absl::FailedPreconditionError(
        "the log was not taken over (TakeOver) since it last failed"));
    return;
  }
  std::vector<etcdserverpb::TxnRequest> txns = AppendTxns(
      options_.domain, batch, previous_, options_, FenceKey(options_.domain), fence);
  previous_ = batch.revision;
  if (txns.size() == 1) {
    {
      absl::MutexLock lock(&mu_);
      ++appending_;
    }
    election_->FencedTxnAsync(
        txns[0], [this, revision = batch.revision, done = std::move(done)](
                     absl::StatusOr<etcdserverpb::TxnResponse> answer) {
          absl::Status settled = Settle(answer, revision);
          {
            absl::MutexLock lock(&mu_);
            --appending_;
          }
          done(std::move(settled));
        });
    return;
  }
  // Parts are written one transaction after the other, once every batch before them is in the
  // log: readers then never find an incomplete batch with another after it.
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &appending_));
  }
  absl::Status status = absl::OkStatus();
  for (const etcdserverpb::TxnRequest& txn : txns) {
    status = Settle(election_->FencedTxn(txn), batch.revision);
    if (!status.ok()) break;
  }
  done(std::move(status));
}

absl::StatusOr<uint64_t> ReplicatedLog::CatchUp(store::Store* local, const std::string& log_id) {
  // The state and every page are read at one etcd revision: the log as it was then.
  int64_t at = 0;
  absl::StatusOr<State> state = ReadStateAt(0, &at);
  if (!state.ok()) return state.status();
  if (!log_id.empty() && !state->id.empty() && state->id != log_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this store followed another log (", log_id, ") than the one of domain ", options_.domain,
        " (", state->id, "): it must be bootstrapped from a snapshot"));
  }
  if (state->trimmed > local->revision()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the log of domain ", options_.domain, " was trimmed through revision ", state->trimmed,
        ", past this store's ", local->revision(), ": it must be bootstrapped from a snapshot"));
  }
  uint64_t applied = 0;
  BatchAssembler assembler(options_.domain);  // a batch may span pages
  bool gap = false;  // a batch whose predecessor is not in the log (yet)
  etcdserverpb::RangeRequest range;
  range.set_key(LogKey(options_.domain, local->revision() + 1, 0));
  range.set_range_end(LogEnd(options_.domain));
  range.set_limit(options_.read_page_keys);
  range.set_revision(at);
  while (true) {
    absl::StatusOr<etcdserverpb::RangeResponse> page = etcd_->Range(range);
    if (!page.ok()) return page.status();
    for (const mvccpb::KeyValue& kv : page->kvs()) {
      ADMITD_RETURN_IF_ERROR(assembler.Add(kv.key(), kv.value()));
    }
    for (const LogEntry& entry : assembler.TakeComplete()) {
      if (gap || (entry.previous.has_value() && *entry.previous != local->revision())) {
        gap = true;  // the rest waits for the batch still on its way, or for TakeOver to drop it
        break;
      }
      ADMITD_RETURN_IF_ERROR(local->Commit(entry.batch));
      ++applied;
    }
    if (gap || !page->more() || page->kvs().empty()) return applied;
    range.set_key(page->kvs(page->kvs_size() - 1).key() + '\0');  // the next key after it
  }
}

}  // namespace admitd::ha
