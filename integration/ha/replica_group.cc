#include "integration/ha/replica_group.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "admitd/v1/admission_service.grpc.pb.h"

namespace admitd::testing {

ReplicaGroup::ReplicaGroup(GroupOptions options)
    : options_(std::move(options)),
      replicas_(options_.size),
      clients_(options_.size),
      addresses_(options_.size) {}

absl::Status ReplicaGroup::Start(int i) {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot make ", options_.dir, ": ", ec.message()));
  std::vector<std::string> args = {"--ha-etcd-endpoints", absl::StrJoin(options_.etcd, ","),
                                   "--ha-domain",         options_.domain,
                                   "--ha-id",             absl::StrCat("r", i),
                                   "--ha-lease-ttl",      options_.lease_ttl};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  // A replica keeps its first address, so a client of the whole group reaches it again.
  if (!addresses_[i].empty()) args.insert(args.end(), {"--listen", addresses_[i]});
  absl::StatusOr<std::unique_ptr<Process>> p =
      Process::Start(options_.admitd, absl::StrCat(options_.dir, "/admitd-", i), args,
                     absl::Seconds(30), "msg=following");
  if (!p.ok()) return p.status();
  replicas_[i] = *std::move(p);
  addresses_[i] = replicas_[i]->address();
  clients_[i] = std::make_unique<Client>(replicas_[i]->address());
  return absl::OkStatus();
}

absl::Status ReplicaGroup::StartAll() {
  for (int i = 0; i < options_.size; ++i) {
    if (absl::Status s = Start(i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int ReplicaGroup::Kill(int i, int signal) { return replicas_[i]->Kill(signal); }

void ReplicaGroup::StopAll() {
  for (std::unique_ptr<Process>& p : replicas_) {
    if (p != nullptr) p->Kill(SIGTERM);
    p.reset();
  }
}

std::vector<int> ReplicaGroup::All() const {
  std::vector<int> all;
  for (int i = 0; i < options_.size; ++i) all.push_back(i);
  return all;
}

std::vector<int> ReplicaGroup::Others(int i) const {
  std::vector<int> others;
  for (int j = 0; j < options_.size; ++j) {
    if (j != i) others.push_back(j);
  }
  return others;
}

std::string ReplicaGroup::List() const { return absl::StrJoin(addresses_, ","); }

absl::StatusOr<int> ReplicaGroup::FindLeader(const std::vector<int>& among, absl::Duration timeout,
                                             const Probe& probe) {
  const absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until) {
    for (int i : among) {
      grpc::Status s = probe(*clients_[i]);
      if (s.ok()) return i;
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
          s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
          s.error_code() != grpc::StatusCode::CANCELLED) {
        return absl::InternalError(absl::StrCat("replica r", i, " answered ", s.error_code(),
                                                ": ", s.error_message()));
      }
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no replica of ", absl::StrJoin(among, ","), " led within ",
                   absl::FormatDuration(timeout)));
}

grpc::Status ReplicaGroup::ReadProbe(Client& client) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::ListWorkloadsRequest req;
  req.set_namespace_("probe");
  req.set_page_size(1);
  v1::ListWorkloadsResponse resp;
  return client.admission->List(&ctx, req, &resp);
}

}  // namespace admitd::testing
