#include "server/ha/replicated_log.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/ha/log_batch.h"

namespace admitd::ha {
namespace {

// The transactions of one append: each holds whole chunks, below the size and operation limits.
std::vector<etcdserverpb::TxnRequest> AppendTxns(const std::string& domain,
                                                 const store::Batch& batch,
                                                 const LogOptions& options,
                                                 const std::string& fence_key,
                                                 int64_t fence_revision) {
  std::vector<std::string> chunks = EncodeChunks(batch, options.max_chunk_bytes);
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

absl::Status ReplicatedLog::TakeOver(store::Store* local) {
  if (election_ == nullptr || !election_->leading()) {
    return absl::FailedPreconditionError(
        absl::StrCat("not the leader of domain ", options_.domain, ": the log is not ours to write"));
  }
  fence_revision_ = 0;
  etcdserverpb::TxnRequest move;
  etcdserverpb::PutRequest* put = move.add_success()->mutable_request_put();
  put->set_key(FenceKey(options_.domain));
  put->set_value(absl::StrCat(election_->term()));
  absl::StatusOr<etcdserverpb::TxnResponse> moved = election_->FencedTxn(move);
  if (!moved.ok()) return moved.status();
  const int64_t fence_revision = moved->header().revision();  // the put's: the fence's mod revision

  // Everything that landed before the fence moved is now visible: apply the complete batches,
  // then delete the parts that follow them.
  if (absl::StatusOr<uint64_t> applied = CatchUp(local); !applied.ok()) return applied.status();
  etcdserverpb::TxnRequest drop;
  etcdserverpb::DeleteRangeRequest* del = drop.add_success()->mutable_request_delete_range();
  del->set_key(LogKey(options_.domain, local->revision() + 1, 0));
  del->set_range_end(LogEnd(options_.domain));
  absl::StatusOr<etcdserverpb::TxnResponse> dropped = election_->FencedTxn(drop);
  if (!dropped.ok()) return dropped.status();
  fence_revision_ = fence_revision;
  return absl::OkStatus();
}

absl::Status ReplicatedLog::Append(const store::Batch& batch) {
  if (fence_revision_ == 0) {
    return absl::FailedPreconditionError("the log was not taken over (TakeOver) since it last failed");
  }
  for (const etcdserverpb::TxnRequest& txn :
       AppendTxns(options_.domain, batch, options_, FenceKey(options_.domain), fence_revision_)) {
    absl::StatusOr<etcdserverpb::TxnResponse> answer = election_->FencedTxn(txn);
    if (!answer.ok() || !answer->succeeded()) {
      fence_revision_ = 0;  // until TakeOver has settled what landed
      if (!answer.ok()) return answer.status();
      return absl::AbortedError(absl::StrCat(
          "the log of domain ", options_.domain,
          " was taken over by another writer; batch ", batch.revision, " was not written"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReplicatedLog::CatchUp(store::Store* local) {
  uint64_t applied = 0;
  BatchAssembler assembler(options_.domain);  // a batch may span pages
  etcdserverpb::RangeRequest range;
  range.set_key(LogKey(options_.domain, local->revision() + 1, 0));
  range.set_range_end(LogEnd(options_.domain));
  range.set_limit(options_.read_page_keys);
  while (true) {
    absl::StatusOr<etcdserverpb::RangeResponse> page = etcd_->Range(range);
    if (!page.ok()) return page.status();
    // Every page reads the log as the first one found it.
    if (range.revision() == 0) range.set_revision(page->header().revision());
    for (const mvccpb::KeyValue& kv : page->kvs()) {
      ADMITD_RETURN_IF_ERROR(assembler.Add(kv.key(), kv.value()));
    }
    for (const store::Batch& batch : assembler.TakeComplete()) {
      ADMITD_RETURN_IF_ERROR(local->Commit(batch));
      ++applied;
    }
    if (!page->more() || page->kvs().empty()) return applied;
    range.set_key(page->kvs(page->kvs_size() - 1).key() + '\0');  // the next key after it
  }
}

}  // namespace admitd::ha
