// Replica's follower side: keeping its store on the log, by the log or by a snapshot, and telling
// the leader how far it got (server/ha/replica.h).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/connection.h"
#include "common/log.h"
#include "common/status.h"
#include "server/ha/replica.h"
#include "server/ha/snapshot.h"

namespace admitd::ha {
namespace {

constexpr char kLogIdFile[] = "HA_LOG_ID";

std::string RegistryKey(const std::string& domain, const std::string& id) {
  return absl::StrCat("/admitd/", domain, "/replicas/", id);
}

}  // namespace

std::string Replica::ReadLogId() const {
  std::ifstream in(absl::StrCat(config_.data_dir, "/", kLogIdFile));
  std::stringstream text;
  text << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(text.str()));
}

absl::Status Replica::WriteLogId(const std::string& id) const {
  if (id.empty() || id == ReadLogId()) return absl::OkStatus();
  const std::string path = absl::StrCat(config_.data_dir, "/", kLogIdFile);
  {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << id << "\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  std::error_code ec;
  std::filesystem::rename(path + ".tmp", path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot write ", path, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status Replica::FollowOnce() {
  ADMITD_ASSIGN_OR_RETURN(ReplicatedLog::State state, log_->ReadState());
  const std::string local_id = ReadLogId();
  // A log exists (it had a leader): the store must be this log's, and not behind its trimming.
  if (!state.id.empty()) {
    if (local_id.empty() && local_->revision() > 0) {
      // Never replaced automatically: it may be the only copy of a single admitd's state.
      return absl::FailedPreconditionError(absl::StrCat(
          "the store in ", config_.data_dir, " (revision ", local_->revision(),
          ") never followed the log of HA domain ", config_.ha_domain,
          ": it ran alone, or its ", kLogIdFile, " is gone. It is not replaced by a snapshot "
          "automatically: to make it the group's state, start it first, alone, on a domain "
          "without a log; to join this group, remove the data dir"));
    }
    // An empty store joins any log; a store that followed another one is replaced.
    const bool foreign = !local_id.empty() && local_id != state.id;
    if (foreign || state.trimmed > local_->revision()) return Bootstrap(state);
    ADMITD_RETURN_IF_ERROR(WriteLogId(state.id));
  }
  absl::StatusOr<uint64_t> applied = log_->CatchUp(local_.get(), state.id);
  if (!applied.ok()) return applied.status();  // trimmed meanwhile: the next round bootstraps
  status_.Applied(local_->revision(), absl::Now());
  return Register(local_->revision());
}

absl::Status Replica::Bootstrap(const ReplicatedLog::State& state) {
  ADMITD_ASSIGN_OR_RETURN(LeaderInfo leader, election_->Leader());
  ConnectionOptions peer{.target = leader.address};
  if (!config_.tls_cert_file.empty()) {
    // The group's certificates: the leader is verified against --client-ca-file (else the
    // system's CAs), and this replica presents its own when the leader asks for one.
    peer.tls = true;
    peer.ca_file = config_.client_ca_file;
    if (!config_.client_ca_file.empty()) {
      peer.cert_file = config_.tls_cert_file;
      peer.key_file = config_.tls_key_file;
    }
  }
  ADMITD_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, Connect(peer));
  const std::string fresh = config_.data_dir + ".bootstrap";
  const std::string replaced = config_.data_dir + ".replaced";
  std::error_code ec;
  std::filesystem::remove_all(fresh, ec);
  const absl::Time start = absl::Now();
  ADMITD_LOG(kInfo, "bootstrapping from a snapshot of the leader",
             {{"leader", leader.id},
              {"address", leader.address},
              {"revision", absl::StrCat(local_->revision())},
              {"log_trimmed", absl::StrCat(state.trimmed)}});
  ADMITD_ASSIGN_OR_RETURN(const uint64_t revision,
                          FetchSnapshot(channel, config_.ha_domain, id_, fresh));
  // The old store goes, the snapshot takes its place. A crash in between leaves no store or an
  // empty one at the data dir: the next start bootstraps again.
  ADMITD_RETURN_IF_ERROR(local_->Close());
  local_.reset();
  std::filesystem::remove_all(replaced, ec);
  std::filesystem::rename(config_.data_dir, replaced, ec);
  std::filesystem::rename(fresh, config_.data_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot move the snapshot in place: ", ec.message()));
  std::filesystem::remove_all(replaced, ec);
  ADMITD_ASSIGN_OR_RETURN(local_, store::Store::Open(LocalStoreOptions()));
  ADMITD_RETURN_IF_ERROR(WriteLogId(state.id));
  ADMITD_LOG(kInfo, "bootstrapped", {{"revision", absl::StrCat(revision)},
                                     {"took", absl::FormatDuration(absl::Now() - start)}});
  return absl::OkStatus();
}

absl::Status Replica::Register(uint64_t revision) {
  if (registry_lease_ != 0 && !etcd_->RenewLease(registry_lease_).ok()) registry_lease_ = 0;
  if (registry_lease_ == 0) {
    ADMITD_ASSIGN_OR_RETURN(registry_lease_, etcd_->GrantLease(3 * config_.ha_lease_ttl));
  }
  etcdserverpb::TxnRequest put;
  etcdserverpb::PutRequest* p = put.add_success()->mutable_request_put();
  p->set_key(RegistryKey(config_.ha_domain, id_));
  p->set_value(absl::StrCat(revision));
  p->set_lease(registry_lease_);
  return etcd_->Txn(put).status();
}

void Replica::Unregister() {
  if (registry_lease_ == 0) return;
  (void)etcd_->RevokeLease(registry_lease_);  // deletes the entry with it
  registry_lease_ = 0;
}

}  // namespace admitd::ha
