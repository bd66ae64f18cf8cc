#include "server/ha/etcd_client.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/connection.h"

namespace admitd::ha {

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(EtcdOptions options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("etcd: no endpoint given");
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient(std::move(options)));
  // etcd's answers are as large as the ranges asked for (gRPC's default limit is 4 MiB); the
  // callers bound them by the keys they ask for at once.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  const EtcdOptions& o = client->options_;
  for (const std::string& endpoint : o.endpoints) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        Connect({.target = endpoint,
                 .tls = !o.ca_file.empty() || !o.cert_file.empty(),
                 .ca_file = o.ca_file,
                 .cert_file = o.cert_file,
                 .key_file = o.key_file},
                args);
    if (!channel.ok()) {
      return absl::Status(channel.status().code(),
                          absl::StrCat("etcd: ", channel.status().message()));
    }
    // Connected from the start, so that another member can take a call at once when the one in
    // use goes away.
    (*channel)->GetState(/*try_to_connect=*/true);
    client->members_.push_back(Member{endpoint, *channel, etcdserverpb::KV::NewStub(*channel),
                                      etcdserverpb::Lease::NewStub(*channel)});
  }
  return client;
}

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {}

const std::string& EtcdClient::endpoint() const {
  return members_[current_.load() % members_.size()].endpoint;
}

const EtcdClient::Member& EtcdClient::Pick(grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
  const size_t current = current_.load();
  const size_t n = members_.size();
  // Asking a channel's state asks it to connect again after its connection went away.
  if (members_[current % n].channel->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    for (size_t k = 1; k < n; ++k) {
      if (members_[(current + k) % n].channel->GetState(true) == GRPC_CHANNEL_READY) {
        size_t expected = current;
        current_.compare_exchange_strong(expected, current + k);
        return members_[(current + k) % n];
      }
    }
  }
  return members_[current % n];
}

absl::Status EtcdClient::Done(const Member& member, const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    // Move on from this member, unless another call already has.
    size_t index = static_cast<size_t>(&member - members_.data());
    size_t expected = current_.load();
    if (expected % members_.size() == index) current_.compare_exchange_strong(expected, expected + 1);
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("etcd ", member.endpoint, ": ", status.error_message()));
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) {
  grpc::ClientContext context;
  const Member& m = Pick(&context);
  etcdserverpb::RangeResponse response;
  absl::Status s = Done(m, m.kv->Range(&context, request, &response));
  if (!s.ok()) return s;
  return response;
}

absl::Status EtcdClient::Compact(int64_t revision) {
  grpc::ClientContext context;
  const Member& m = Pick(&context);
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  etcdserverpb::CompactionResponse response;
  grpc::Status s = m.kv->Compact(&context, request, &response);
  // Compacted that far already (by another leader, or etcd's own auto-compaction): done.
  if (s.error_code() == grpc::StatusCode::OUT_OF_RANGE) return absl::OkStatus();
  return Done(m, s);
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request) {
  grpc::ClientContext context;
  const Member& m = Pick(&context);
  etcdserverpb::TxnResponse response;
  absl::Status s = Done(m, m.kv->Txn(&context, request, &response));
  if (!s.ok()) return s;
  return response;
}

void EtcdClient::TxnAsync(etcdserverpb::TxnRequest request,
                          std::function<void(absl::StatusOr<etcdserverpb::TxnResponse>)> done) {
  struct Call {
    grpc::ClientContext context;
    etcdserverpb::TxnRequest request;
    etcdserverpb::TxnResponse response;
    std::function<void(absl::StatusOr<etcdserverpb::TxnResponse>)> done;
  };
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  call->done = std::move(done);
  const Member& m = Pick(&call->context);
  m.kv->async()->Txn(&call->context, &call->request, &call->response,
                     [this, &m, call](const grpc::Status& status) {
                       absl::Status s = Done(m, status);
                       if (!s.ok()) {
                         call->done(s);
                       } else {
                         call->done(std::move(call->response));
                       }
                     });
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(absl::Duration ttl) {
  grpc::ClientContext context;
  const Member& m = Pick(&context);
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(ttl)))));
  etcdserverpb::LeaseGrantResponse response;
  absl::Status s = Done(m, m.lease->LeaseGrant(&context, request, &response));
  if (!s.ok()) return s;
  if (!response.error().empty()) return absl::UnavailableError("etcd: " + response.error());
  return response.id();
}

absl::StatusOr<absl::Duration> EtcdClient::RenewLease(int64_t lease, absl::Time deadline) {
  // LeaseKeepAlive is a stream of renewals; one renewal per stream keeps every call independent
  // (a renewal is sent a few times per TTL, so the stream's cost does not matter).
  grpc::ClientContext context;
  const Member& m = Pick(&context);
  if (deadline < absl::FromChrono(context.deadline())) context.set_deadline(absl::ToChronoTime(deadline));
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                           etcdserverpb::LeaseKeepAliveResponse>>
      stream = m.lease->LeaseKeepAlive(&context);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse response;
  const bool answered = stream->Write(request) && stream->Read(&response);
  stream->WritesDone();
  if (!answered) {
    context.TryCancel();
    absl::Status s = Done(m, stream->Finish());
    return s.ok() ? absl::UnavailableError(absl::StrCat("etcd ", m.endpoint, ": no renewal"))
                  : s;
  }
  context.TryCancel();  // the server keeps the stream open; nothing more is read from it
  stream->Finish();
  if (response.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd: lease ", lease, " has expired"));
  }
  return absl::Seconds(response.ttl());
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  grpc::ClientContext context;
  const Member& m = Pick(&context);
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  return Done(m, m.lease->LeaseRevoke(&context, request, &response));
}

}  // namespace admitd::ha
