#include "server/watch_hub.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace admitd {

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
  while (!queue_.empty()) {
    out->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return true;
}

bool WatchSubscription::Take(std::deque<EventPtr>* out, absl::Status* closed) {
  std::deque<HubEvent> events;
  if (!Take(&events, closed)) return false;
  for (HubEvent& event : events) out->push_back(std::move(event.message));
  return true;
}

std::shared_ptr<WatchSubscription> WatchHub::Subscribe(WatchFilter filter,
                                                       std::function<void()> wake,
                                                       uint64_t* revision) {
  std::shared_ptr<WatchSubscription> sub(
      new WatchSubscription(std::move(filter), std::move(wake), max_buffered_));
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
  Publish(revision, [&events] {
    std::vector<HubEvent> encoded;
    encoded.reserve(events.size());
    for (EventPtr& event : events) encoded.push_back(HubEvent::Encode(std::move(event)));
    return encoded;
  });
}

void WatchHub::Publish(uint64_t revision, const std::function<std::vector<HubEvent>()>& make) {
  std::vector<std::shared_ptr<WatchSubscription>> to_wake;
  {
    absl::MutexLock lock(&mu_);
    revision_ = std::max(revision_, revision);
    if (subscribers_.empty()) return;
    const std::vector<HubEvent> events = make();
    for (const auto& sub : subscribers_) {
      bool queued = false;
      absl::MutexLock sub_lock(&sub->mu_);
      if (!sub->closed_.ok()) continue;
      for (const HubEvent& event : events) {
        if (!sub->filter_.Matches(*event.message)) continue;
        if (sub->queue_.size() >= sub->max_buffered_) {
          sub->closed_ = absl::ResourceExhaustedError(absl::StrCat(
              "watcher fell behind: more than ", sub->max_buffered_,
              " events were waiting to be sent; watch again from the last revision received"));
          sub->queue_.clear();
          queued = true;
          break;
        }
        sub->queue_.push_back(event);
        queued = true;
      }
      if (queued) to_wake.push_back(sub);
    }
  }
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

}  // namespace admitd
