#include "server/watch_hub.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace admitd {

void ReturnFreedMemory() {
  // glibc keeps freed memory in its arenas; a watcher's large events (allocated on gRPC's and
  // the committer's threads) would otherwise stay resident after they were sent or dropped.
  malloc_trim(0);
}

HubEvent HubEvent::Encode(EventPtr message) {
  HubEvent event;
  grpc::Slice bytes(message->ByteSizeLong());
  message->SerializeWithCachedSizesToArray(const_cast<uint8_t*>(bytes.begin()));
  event.message = std::move(message);
  event.encoded = std::move(bytes);
  return event;
}

bool WatchSubscription::Take(std::deque<HubEvent>* out, absl::Status* closed) {
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) {
    *closed = closed_;
    return false;
  }
  if (out->empty()) {
    // The queue's blocks go with its events; the queue starts again from `out`'s empty ones.
    out->swap(queue_);
    return true;
  }
  while (!queue_.empty()) {
    out->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return true;
}

void WatchSubscription::Release(size_t events, size_t bytes) {
  bool trim = false;
  {
    absl::MutexLock lock(&mu_);
    events_ -= std::min(events_, events);
    bytes_ -= std::min(bytes_, bytes);
    if (events_ == 0) {
      trim = peak_bytes_ >= kTrimAfterBytes;
      peak_bytes_ = 0;
    }
  }
  if (trim) ReturnFreedMemory();
}

bool WatchSubscription::Take(std::deque<EventPtr>* out, absl::Status* closed) {
  std::deque<HubEvent> events;
  if (!Take(&events, closed)) return false;
  size_t bytes = 0;
  for (HubEvent& event : events) {
    bytes += event.encoded.size();
    out->push_back(std::move(event.message));
  }
  const size_t taken = events.size();
  events.clear();
  Release(taken, bytes);
  return true;
}

size_t WatchSubscription::buffered_events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

size_t WatchSubscription::buffered_bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

bool WatchSubscription::CutOff(std::deque<HubEvent>* dropped) {
  closed_ = absl::ResourceExhaustedError(
      absl::StrCat("watcher fell behind: more than ", max_events_, " events or ", max_bytes_,
                   " bytes were waiting to be sent; watch again from the last revision received"));
  for (const HubEvent& event : queue_) bytes_ -= std::min(bytes_, event.encoded.size());
  events_ -= std::min(events_, queue_.size());
  dropped->swap(queue_);
  const bool trim = peak_bytes_ >= kTrimAfterBytes;
  peak_bytes_ = 0;
  return trim;
}

std::shared_ptr<WatchSubscription> WatchHub::Subscribe(WatchFilter filter,
                                                       std::function<void()> wake,
                                                       uint64_t* revision) {
  std::shared_ptr<WatchSubscription> sub(
      new WatchSubscription(std::move(filter), std::move(wake), max_events_, max_bytes_));
  absl::MutexLock lock(&mu_);
  *revision = revision_;
  if (closed_) {
    absl::MutexLock sub_lock(&sub->mu_);
    sub->closed_ = absl::UnavailableError("admitd is shutting down");
  } else {
    subscribers_.push_back(sub);
  }
  return sub;
}

void WatchHub::Unsubscribe(const std::shared_ptr<WatchSubscription>& subscription) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(std::remove(subscribers_.begin(), subscribers_.end(), subscription),
                     subscribers_.end());
}

void WatchHub::Publish(std::vector<EventPtr> events, uint64_t revision) {
  Publish(revision, [&events](NamedKinds) {
    std::vector<HubEvent> encoded;
    encoded.reserve(events.size());
    for (EventPtr& event : events) encoded.push_back(HubEvent::Encode(std::move(event)));
    return encoded;
  });
}

void WatchHub::Publish(uint64_t revision,
                       const std::function<std::vector<HubEvent>(NamedKinds)>& make) {
  std::vector<std::shared_ptr<WatchSubscription>> to_wake;
  std::vector<std::deque<HubEvent>> dropped;  // freed outside the locks
  bool trim = false;
  {
    absl::MutexLock lock(&mu_);
    revision_ = std::max(revision_, revision);
    if (subscribers_.empty()) return;
    NamedKinds named;
    for (const auto& sub : subscribers_) {  // filters never change: read without their lock
      named.events = named.events || sub->filter_.kinds.count(v1::OBJECT_KIND_EVENT) > 0;
      named.directives =
          named.directives || sub->filter_.kinds.count(v1::OBJECT_KIND_POD_DIRECTIVE) > 0;
    }
    const std::vector<HubEvent> events = make(named);
    for (const auto& sub : subscribers_) {
      bool queued = false;
      absl::MutexLock sub_lock(&sub->mu_);
      if (!sub->closed_.ok()) continue;
      for (const HubEvent& event : events) {
        if (!sub->filter_.Matches(*event.message)) continue;
        const size_t size = event.encoded.size();
        if (sub->events_ >= sub->max_events_ ||
            (sub->bytes_ > 0 && sub->bytes_ + size > sub->max_bytes_)) {
          dropped.emplace_back();
          trim = sub->CutOff(&dropped.back()) || trim;
          ++cut_offs_;
          queued = true;
          break;
        }
        sub->queue_.push_back(event);
        ++sub->events_;
        sub->bytes_ += size;
        sub->peak_bytes_ = std::max(sub->peak_bytes_, sub->bytes_);
        queued = true;
      }
      if (queued) to_wake.push_back(sub);
    }
  }
  dropped.clear();
  if (trim) ReturnFreedMemory();
  for (const auto& sub : to_wake) sub->wake_();
}

uint64_t WatchHub::revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

void WatchHub::SetRevision(uint64_t revision) {
  absl::MutexLock lock(&mu_);
  revision_ = revision;
}

void WatchHub::Close() {
  std::vector<std::shared_ptr<WatchSubscription>> subs;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    subs.swap(subscribers_);
  }
  for (const auto& sub : subs) {
    {
      absl::MutexLock lock(&sub->mu_);
      sub->closed_ = absl::UnavailableError("admitd is shutting down");
    }
    sub->wake_();
  }
}

size_t WatchHub::subscribers() const {
  absl::MutexLock lock(&mu_);
  return subscribers_.size();
}

uint64_t WatchHub::MaxLagRevisions() const {
  absl::MutexLock lock(&mu_);
  uint64_t lag = 0;
  for (const std::shared_ptr<WatchSubscription>& sub : subscribers_) {
    absl::MutexLock sub_lock(&sub->mu_);
    if (sub->queue_.empty()) continue;
    const uint64_t oldest = sub->queue_.front().message->revision();
    if (oldest <= revision_) lag = std::max(lag, revision_ - oldest + 1);
  }
  return lag;
}

uint64_t WatchHub::cut_offs() const {
  absl::MutexLock lock(&mu_);
  return cut_offs_;
}

}  // namespace admitd
