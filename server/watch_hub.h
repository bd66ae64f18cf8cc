// WatchHub: fans committed watch events out to Watch streams.
//
// The sequencer publishes the events of each committed batch; every Subscription keeps the
// events that pass its filter in a bounded queue and is woken to send them. A subscriber that
// falls more than `max_buffered` events behind is cut off (its queue is dropped and marked
// overflowed) so a slow watcher never slows the sequencer; it watches again from the last
// revision it saw.
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_SERVER_WATCH_HUB_H_
#define ADMITD_SERVER_WATCH_HUB_H_

#include <grpcpp/support/slice.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "admitd/v1/admission_service.pb.h"
#include "server/watch_filter.h"

namespace admitd {

using EventPtr = std::shared_ptr<const v1::WatchEvent>;

// An event as the hub hands it on: the message, which filters read, and its wire encoding, which
// a Watch stream sends as it is. The encoding is made once per event, however many streams send
// it (a grpc::Slice is reference counted, so every copy shares the same bytes).
struct HubEvent {
  EventPtr message;
  grpc::Slice encoded;

  // Serializes `message` once.
  static HubEvent Encode(EventPtr message);
};

class WatchSubscription {
 public:
  // Moves every queued event into `out`. False when the subscriber overflowed
  // (RESOURCE_EXHAUSTED) or the hub closed (UNAVAILABLE); `closed` then says which.
  bool Take(std::deque<HubEvent>* out, absl::Status* closed);
  // The same, keeping only the messages.
  bool Take(std::deque<EventPtr>* out, absl::Status* closed);

 private:
  friend class WatchHub;
  WatchSubscription(WatchFilter filter, std::function<void()> wake, size_t max_buffered)
      : filter_(std::move(filter)), wake_(std::move(wake)), max_buffered_(max_buffered) {}

  // Constant after construction.
  const WatchFilter filter_;
  const std::function<void()> wake_;
  const size_t max_buffered_;

  absl::Mutex mu_;
  std::deque<HubEvent> queue_ ABSL_GUARDED_BY(mu_);
  absl::Status closed_ ABSL_GUARDED_BY(mu_);  // not OK: overflowed or closed
};

class WatchHub {
 public:
  explicit WatchHub(size_t max_buffered = 10000) : max_buffered_(max_buffered) {}

  // Registers a subscriber. `wake` is called (from the publishing thread, without hub locks
  // held) after events were queued for it; it must not block. `*revision` receives the last
  // published revision: every later event reaches the subscription, every earlier one is in
  // the store's event log.
  std::shared_ptr<WatchSubscription> Subscribe(WatchFilter filter, std::function<void()> wake,
                                               uint64_t* revision);
  void Unsubscribe(const std::shared_ptr<WatchSubscription>& subscription);

  // Queues `events` (increasing revisions, all committed) for each matching subscriber.
  void Publish(std::vector<EventPtr> events, uint64_t revision);
  // The same, but the events (with their encodings) are built by `make` only when someone is
  // subscribed (it runs under the hub's lock, so no subscriber can arrive unseen in between).
  void Publish(uint64_t revision, const std::function<std::vector<HubEvent>()>& make);
  // The last published revision; set once after recovery.
  uint64_t revision() const;
  void SetRevision(uint64_t revision);
  // Closes every subscription (server shutdown); later subscriptions are closed at once.
  void Close();
  size_t subscribers() const;

 private:
  const size_t max_buffered_;
  mutable absl::Mutex mu_;
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<WatchSubscription>> subscribers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd

#endif  // ADMITD_SERVER_WATCH_HUB_H_
