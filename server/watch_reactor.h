// WatchReactor: one Watch stream. It replays the store's event log after since_revision, sends
// a SYNCED marker, then streams live events from its WatchHub subscription, one write in flight
// at a time. The replay reads the store on gRPC's threads, never on the sequencer's. The stream
// is raw: it writes each event's ready encoding (the logged bytes, or the hub's), so an event is
// never serialized per stream.
//
// Thread safety: internal; callbacks arrive from gRPC threads and the publishing thread.
#ifndef ADMITD_SERVER_WATCH_REACTOR_H_
#define ADMITD_SERVER_WATCH_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "admitd/v1/admission_service.pb.h"
#include "server/dispatch.h"
#include "server/watch_hub.h"

namespace admitd {

class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // Creates the reactor and starts sending; it deletes itself when the stream ends.
  // With `rpc` and the context's access control, the stream carries only what the caller may
  // watch (a request for a kind it may watch nowhere is PERMISSION_DENIED).
  static WatchReactor* Start(ServiceContext* ctx, const v1::WatchRequest& request,
                             const grpc::ServerContextBase* rpc = nullptr);
  // The same for an encoded WatchRequest; one that does not parse ends the stream with
  // INVALID_ARGUMENT.
  static WatchReactor* Start(ServiceContext* ctx, const grpc::ByteBuffer& request,
                             const grpc::ServerContextBase* rpc = nullptr);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  WatchReactor(ServiceContext* ctx, const v1::WatchRequest& request,
               std::function<bool(const v1::WatchEvent&)> visible = nullptr);
  void Init(const v1::WatchRequest& request);
  // Starts the next write if none is in flight, or finishes the stream when it must end.
  void Pump();
  // Records the status the stream ends with; Pump sends it once no write is in flight.
  void MarkFinished(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills replay_ from the store; false with *error set when the log was compacted.
  bool LoadReplay(absl::Status* error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ServiceContext* const ctx_;
  const WatchFilter filter_;
  std::shared_ptr<WatchSubscription> subscription_;
  // The reactor owns itself until OnDone; the hub's wake callback holds only a weak_ptr, so a
  // wake racing with the end of the stream never touches a deleted reactor.
  std::shared_ptr<WatchReactor> self_;

  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;     // the stream must end
  bool finish_sent_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
  bool replay_done_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t replay_next_ ABSL_GUARDED_BY(mu_) = 0;  // replay events with revision > this
  uint64_t live_floor_ ABSL_GUARDED_BY(mu_) = 0;   // live events at or below are replayed
  // An event on its way out. `held`: taken from the subscription, whose buffer counts it until
  // it is written (then released); replayed events and SYNCED markers are not held.
  struct Outgoing {
    HubEvent event;
    bool held = false;
  };
  // Releases every held event still pending (the stream ended before writing them).
  void ReleasePending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::deque<Outgoing> pending_ ABSL_GUARDED_BY(mu_);
  bool pending_grew_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ByteBuffer in_flight_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_held_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool in_flight_held_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_WATCH_REACTOR_H_
