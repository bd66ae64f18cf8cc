// WatchHub: fans committed watch events out to Watch streams.
//
// The sequencer publishes the events of each committed batch; every Subscription keeps the
// events that pass its filter in a bounded buffer and is woken to send them. The buffer holds
// the events queued in the hub and those its stream took but has not yet written (Release), and
// is bounded twice: by count (`max_buffered_events`) and by the bytes of the events' encodings
// (`max_buffered_bytes`; an event alone in an empty buffer is always taken, however large). A
// subscriber that would pass either bound is cut off (its queue is dropped and it ends with
// RESOURCE_EXHAUSTED) so a slow watcher never slows the sequencer nor holds unbounded memory;
// it watches again from the last revision it saw. Memory a large buffer held is handed back to
// the system once it is drained or dropped.
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
  // Moves every queued event into `out`. The caller holds them until it has written them: they
  // count against the subscriber's bounds until it Releases them. False when the subscriber
  // overflowed (RESOURCE_EXHAUSTED) or the hub closed (UNAVAILABLE); `closed` then says which.
  bool Take(std::deque<HubEvent>* out, absl::Status* closed);
  // The caller is done with `events` taken events whose encodings are `bytes` long together.
  void Release(size_t events, size_t bytes);
  // Takes and releases at once, keeping only the messages.
  bool Take(std::deque<EventPtr>* out, absl::Status* closed);

  // What the subscriber's buffer holds now (queued and taken but not released).
  size_t buffered_events() const;
  size_t buffered_bytes() const;

 private:
  friend class WatchHub;
  WatchSubscription(WatchFilter filter, std::function<void()> wake, size_t max_events,
                    size_t max_bytes)
      : filter_(std::move(filter)),
        wake_(std::move(wake)),
        max_events_(max_events),
        max_bytes_(max_bytes) {}

  // Marks the subscriber overflowed and moves its queue into `dropped` (to be freed by the
  // caller outside the locks). True when the buffer held enough that its memory should be
  // handed back to the system once freed.
  bool CutOff(std::deque<HubEvent>* dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const WatchFilter filter_;
  const std::function<void()> wake_;
  const size_t max_events_;
  const size_t max_bytes_;

  mutable absl::Mutex mu_;
  std::deque<HubEvent> queue_ ABSL_GUARDED_BY(mu_);
  size_t events_ ABSL_GUARDED_BY(mu_) = 0;      // queued plus taken and not released
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;       // their encodings' bytes
  size_t peak_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // since the buffer was last empty
  absl::Status closed_ ABSL_GUARDED_BY(mu_);  // not OK: overflowed or closed
};

// A buffer that held this much hands its memory back to the system once drained or dropped.
inline constexpr size_t kTrimAfterBytes = size_t{16} << 20;
// Hands memory freed to the allocator back to the system (glibc's malloc_trim).
void ReturnFreedMemory();

// Default bounds of one watcher's buffer.
inline constexpr size_t kDefaultWatchBufferEvents = 10000;
inline constexpr size_t kDefaultWatchBufferBytes = size_t{64} << 20;

class WatchHub {
 public:
  explicit WatchHub(size_t max_buffered_events = kDefaultWatchBufferEvents,
                    size_t max_buffered_bytes = kDefaultWatchBufferBytes)
      : max_events_(max_buffered_events), max_bytes_(max_buffered_bytes) {}

  // Registers a subscriber. `wake` is called (from the publishing thread, without hub locks
  // held) after events were queued for it; it must not block. `*revision` receives the last
  // published revision: every later event reaches the subscription, every earlier one is in
  // the store's event log.
  std::shared_ptr<WatchSubscription> Subscribe(WatchFilter filter, std::function<void()> wake,
                                               uint64_t* revision);
  void Unsubscribe(const std::shared_ptr<WatchSubscription>& subscription);

  // Queues `events` (increasing revisions, all committed) for each matching subscriber.
  void Publish(std::vector<EventPtr> events, uint64_t revision);
  // Which of the kinds sent only to a watch that names them some subscriber named: `make`
  // need not build the others' events (no subscriber would take them).
  struct NamedKinds {
    bool events = false;      // OBJECT_KIND_EVENT
    bool directives = false;  // OBJECT_KIND_POD_DIRECTIVE
  };
  // The same, but the events (with their encodings) are built by `make` only when someone is
  // subscribed (it runs under the hub's lock, so no subscriber can arrive unseen in between).
  void Publish(uint64_t revision, const std::function<std::vector<HubEvent>(NamedKinds)>& make);
  // The last published revision; set once after recovery.
  uint64_t revision() const;
  void SetRevision(uint64_t revision);
  // Closes every subscription (server shutdown); later subscriptions are closed at once.
  void Close();
  size_t subscribers() const;
  // How far the slowest subscriber is behind: the last published revision minus the revision
  // before its oldest queued event (0 when every queue is empty).
  uint64_t MaxLagRevisions() const;
  // Subscribers cut off so far because their queue passed its bounds.
  uint64_t cut_offs() const;

 private:
  const size_t max_events_;
  const size_t max_bytes_;
  mutable absl::Mutex mu_;
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t cut_offs_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::shared_ptr<WatchSubscription>> subscribers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admitd

#endif  // ADMITD_SERVER_WATCH_HUB_H_
