#include "server/watch_reactor.h"

#include "server/access_control.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "server/parse_errors.h"
#include "server/request_checks.h"
#include "store/store.h"

namespace admitd {
namespace {

constexpr size_t kReplayChunk = 512;
// Past this many pending events, the pending queue's memory is released once it drains.
constexpr size_t kLargeBacklog = 1024;

}  // namespace

WatchReactor* WatchReactor::Start(ServiceContext* ctx, const v1::WatchRequest& request,
                                  const grpc::ServerContextBase* rpc) {
  absl::StatusOr<std::function<bool(const v1::WatchEvent&)>> visible =
      std::function<bool(const v1::WatchEvent&)>();
  if (ctx->access != nullptr && rpc != nullptr) visible = WatchVisibility(*ctx->access, *rpc, request);
  auto* reactor =
      new WatchReactor(ctx, request, visible.ok() ? *visible : nullptr);
  reactor->self_.reset(reactor);
  absl::Status bad = CheckWatchRequest(request);
  if (bad.ok()) bad = visible.status();
  if (!bad.ok()) {
    {
      absl::MutexLock lock(&reactor->mu_);
      reactor->MarkFinished(ToGrpcStatus(bad));
    }
    reactor->Pump();
    return reactor;
  }
  reactor->Init(request);
  reactor->Pump();
  return reactor;
}

WatchReactor* WatchReactor::Start(ServiceContext* ctx, const grpc::ByteBuffer& request,
                                  const grpc::ServerContextBase* rpc) {
  v1::WatchRequest parsed;
  grpc::ByteBuffer copy(request);  // Deserialize consumes its buffer; this shares the slices
  if (!grpc::SerializationTraits<v1::WatchRequest>::Deserialize(&copy, &parsed).ok()) {
    auto* reactor = new WatchReactor(ctx, parsed);
    reactor->self_.reset(reactor);
    {
      absl::MutexLock lock(&reactor->mu_);
      reactor->MarkFinished(ToGrpcStatus(UnparseableRequest("/admitd.v1.AdmissionService/Watch")));
    }
    reactor->Pump();
    return reactor;
  }
  return Start(ctx, parsed, rpc);
}

namespace {

WatchFilter FilterOf(const v1::WatchRequest& request,
                     std::function<bool(const v1::WatchEvent&)> visible) {
  WatchFilter filter = WatchFilter::From(request);
  filter.visible = std::move(visible);
  return filter;
}

}  // namespace

WatchReactor::WatchReactor(ServiceContext* ctx, const v1::WatchRequest& request,
                           std::function<bool(const v1::WatchEvent&)> visible)
    : ctx_(ctx), filter_(FilterOf(request, std::move(visible))) {}

void WatchReactor::Init(const v1::WatchRequest& request) {
  absl::MutexLock lock(&mu_);
  if (absl::Status accepting = CheckAccepting(ctx_); !accepting.ok()) {
    MarkFinished(ToGrpcStatus(accepting));
    return;
  }
  uint64_t published = 0;
  std::weak_ptr<WatchReactor> weak = self_;
  subscription_ = ctx_->hub->Subscribe(
      filter_,
      [weak] {
        if (std::shared_ptr<WatchReactor> self = weak.lock()) self->Pump();
      },
      &published);
  // from_oldest: everything the log still holds (a compaction racing with it answers
  // OUT_OF_RANGE, as for any replay that starts below the floor).
  const bool from_oldest = request.from_oldest();
  // The floor is 0 until the first compaction; every revision from 1 up is then logged.
  const uint64_t oldest = std::max<uint64_t>(1, ctx_->store->oldest_event_revision());
  const uint64_t since = from_oldest ? std::min(published, oldest - 1) : request.since_revision();
  const bool live_only = since == 0 && !from_oldest;
  if (since > published) {
    MarkFinished(ToGrpcStatus(absl::OutOfRangeError(absl::StrCat(
        "since_revision ", since, " is ahead of the current revision ", published,
        "; list again and watch from the list's revision"))));
    return;
  }
  // since 0: live events only. Otherwise the log holds (since, published]; live events above.
  replay_next_ = live_only ? published : since;
  live_floor_ = published;
  replay_done_ = live_only || since == published;
  if (replay_done_) {
    auto synced = std::make_shared<v1::WatchEvent>();
    synced->set_type(v1::WatchEvent::SYNCED);
    synced->set_revision(published);
    pending_.push_back({HubEvent::Encode(std::move(synced))});
  }
}

bool WatchReactor::LoadReplay(absl::Status* error) {
  std::vector<store::LoggedEvent> logged;
  absl::Status status = ctx_->store->ReadEvents(replay_next_, kReplayChunk, &logged);
  if (!status.ok()) {
    *error = status;
    return false;
  }
  for (const store::LoggedEvent& entry : logged) {
    if (entry.revision > live_floor_) break;
    auto event = std::make_shared<v1::WatchEvent>();
    if (!event->ParseFromString(entry.value)) {
      *error = absl::DataLossError(absl::StrCat("event ", entry.revision, " cannot be parsed"));
      return false;
    }
    replay_next_ = entry.revision;
    // The logged bytes are the event's encoding: sent as they are.
      if (filter_.Matches(*event)) {
      pending_.push_back({HubEvent{std::move(event), grpc::Slice(entry.value)}});
    }
  }
  if (logged.empty() || replay_next_ >= live_floor_ || logged.back().revision > live_floor_) {
    replay_done_ = true;
    auto synced = std::make_shared<v1::WatchEvent>();
    synced->set_type(v1::WatchEvent::SYNCED);
    synced->set_revision(live_floor_);
    pending_.push_back({HubEvent::Encode(std::move(synced))});
  }
  return true;
}

void WatchReactor::Pump() {
  // Decide under the lock, act outside it: gRPC may run OnWriteDone inline from StartWrite.
  const grpc::ByteBuffer* to_write = nullptr;
  // Every write goes out without gRPC's buffer hint: a hinted write's completion may wait for a
  // later flush, and the next write starts only after that completion, so a replay could stall.
  std::optional<grpc::Status> to_finish;
  {
    absl::MutexLock lock(&mu_);
    if (finished_ || writing_) {
      if (finished_ && !writing_ && !finish_sent_) {
        finish_sent_ = true;
        to_finish = final_status_;
      }
    } else {
      while (pending_.empty()) {
        absl::Status error;
        if (!replay_done_) {
          if (!LoadReplay(&error)) {
            MarkFinished(ToGrpcStatus(error));
            break;
          }
          continue;
        }
        std::deque<HubEvent> live;
        if (!subscription_->Take(&live, &error)) {
          MarkFinished(ToGrpcStatus(error));
          break;
        }
        size_t skipped = 0, skipped_bytes = 0;
        for (HubEvent& event : live) {
          if (event.message->revision() > live_floor_) {
            pending_.push_back({std::move(event), /*held=*/true});
          } else {
            ++skipped;
            skipped_bytes += event.encoded.size();
          }
        }
        live.clear();
        if (skipped > 0) subscription_->Release(skipped, skipped_bytes);
        if (pending_.empty()) {
          // Drained after a backlog: a deque keeps the blocks it grew to; let them go.
          if (pending_grew_) std::deque<Outgoing>().swap(pending_);
          pending_grew_ = false;
          break;  // idle until the hub wakes us
        }
        pending_grew_ = pending_grew_ || pending_.size() > kLargeBacklog;
      }
      if (finished_) {
        if (!finish_sent_) {
          finish_sent_ = true;
          to_finish = final_status_;
        }
      } else if (!pending_.empty()) {
        // The buffer shares the event's slice: nothing is copied or serialized here.
        grpc::ByteBuffer buffer(&pending_.front().event.encoded, 1);
        in_flight_.Swap(&buffer);
        in_flight_held_ = pending_.front().held;
        in_flight_held_bytes_ = pending_.front().event.encoded.size();
        pending_.pop_front();
        writing_ = true;
        to_write = &in_flight_;
      }
    }
  }
  if (to_finish) {
    Finish(*to_finish);
  } else if (to_write != nullptr) {
    StartWrite(to_write);
  }
}

void WatchReactor::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    in_flight_.Clear();
    if (in_flight_held_) subscription_->Release(1, in_flight_held_bytes_);
    in_flight_held_ = false;
    if (!ok) MarkFinished(grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed"));
  }
  Pump();
}

void WatchReactor::ReleasePending() {
  size_t held = 0, bytes = 0;
  for (const Outgoing& out : pending_) {
    if (!out.held) continue;
    ++held;
    bytes += out.event.encoded.size();
  }
  std::deque<Outgoing>().swap(pending_);
  if (held > 0) subscription_->Release(held, bytes);
}

void WatchReactor::OnCancel() {
  {
    absl::MutexLock lock(&mu_);
    MarkFinished(grpc::Status::CANCELLED);
  }
  Pump();
}

void WatchReactor::MarkFinished(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  final_status_ = status;
}

void WatchReactor::OnDone() {
  if (subscription_) {
    ctx_->hub->Unsubscribe(subscription_);
    absl::MutexLock lock(&mu_);
    ReleasePending();
  }
  std::shared_ptr<WatchReactor> last = std::move(self_);  // may delete this on return
}

}  // namespace admitd
