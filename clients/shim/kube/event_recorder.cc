#include "clients/shim/kube/event_recorder.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"

namespace admitd::shim {
namespace {

constexpr size_t kMaxSeen = 4096;
constexpr size_t kMaxQueued = 10000;

std::string Now() { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()); }

std::string RandomSuffix() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%016x", rng());
}

}  // namespace

EventRecorder::EventRecorder(const KubeClient& client, std::string instance)
    : client_(client), instance_(std::move(instance)), thread_([this] { Loop(); }) {}

EventRecorder::~EventRecorder() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    drain_until_ = absl::Now() + absl::Seconds(2);
  }
  thread_.join();
}

void EventRecorder::Record(const nlohmann::json& object, const std::string& type,
                           const std::string& reason, const std::string& message,
                           const std::string& component) {
  const nlohmann::json meta = object.value("metadata", nlohmann::json::object());
  Pending p{{{"apiVersion", object.value("apiVersion", "")},
             {"kind", object.value("kind", "")},
             {"namespace", meta.value("namespace", "")},
             {"name", meta.value("name", "")},
             {"uid", meta.value("uid", "")},
             {"resourceVersion", meta.value("resourceVersion", "")}},
            type,
            reason,
            message.size() > 1024 ? message.substr(0, 1024) : message,
            component};
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= kMaxQueued) {
    ++dropped_;
    return;
  }
  queue_.push_back(std::move(p));
}

void EventRecorder::Loop() {
  while (true) {
    Pending p;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](EventRecorder* r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                 return r->stopping_ || !r->queue_.empty();
                               },
                               this),
                           absl::Seconds(1));
      if (queue_.empty()) {
        if (stopping_) return;
        continue;
      }
      // Stopping: what is still queued after the drain's 2 s is dropped (best effort, as
      // Kubernetes events are), so that a stop never waits on a backlog.
      if (stopping_ && absl::Now() >= drain_until_) {
        dropped_ += static_cast<int64_t>(queue_.size());
        queue_.clear();
        return;
      }
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    Write(p);
  }
}

void EventRecorder::Write(const Pending& p) {
  const std::string ns = p.involved.value("namespace", "");
  const std::string key = absl::StrCat(p.involved.value("uid", ""), "\x1f", p.type, "\x1f",
                                       p.reason, "\x1f", p.message);
  const std::string now = Now();
  absl::Status status;
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    Seen& seen = it->second.first;
    absl::StatusOr<nlohmann::json> r = client_.Patch(
        absl::StrCat("/api/v1/namespaces/", seen.ns, "/events/", seen.name),
        {{"count", seen.count + 1}, {"lastTimestamp", now}});
    if (r.ok()) {
      ++seen.count;
      lru_.splice(lru_.begin(), lru_, it->second.second);
    } else {
      seen_.erase(it->first);  // gone (expired, say): create a new one below
      lru_.remove(key);
      it = seen_.end();
    }
    status = r.status();
  }
  if (it == seen_.end()) {
    const std::string name = absl::StrCat(p.involved.value("name", ""), ".", RandomSuffix());
    const nlohmann::json event = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"name", name}, {"namespace", ns}}},
        {"involvedObject", p.involved},
        {"type", p.type},
        {"reason", p.reason},
        {"message", p.message},
        {"action", p.reason},
        {"source", {{"component", p.component}}},
        {"reportingComponent", p.component},
        {"reportingInstance", instance_},
        {"firstTimestamp", now},
        {"lastTimestamp", now},
        {"count", 1}};
    absl::StatusOr<nlohmann::json> r =
        client_.Create(absl::StrCat("/api/v1/namespaces/", ns, "/events"), event);
    status = r.status();
    if (r.ok()) {
      lru_.push_front(key);
      seen_[key] = {Seen{ns, name, 1}, lru_.begin()};
      if (lru_.size() > kMaxSeen) {
        seen_.erase(lru_.back());
        lru_.pop_back();
      }
    }
  }
  absl::MutexLock lock(&mu_);
  if (status.ok()) {
    ++recorded_;
  } else {
    ++dropped_;
    ADMITD_LOG(kWarning, "event not recorded",
               {{"reason", p.reason}, {"object", p.involved.value("name", "")},
                {"error", status.ToString()}});
  }
}

int64_t EventRecorder::recorded() const {
  absl::MutexLock lock(&mu_);
  return recorded_;
}

int64_t EventRecorder::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

}  // namespace admitd::shim
