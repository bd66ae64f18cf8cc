// The committer thread of the Sequencer: each batch's changes encoded once into the store's
// batch and event log, written (by Commit, or several at once through the store's pipeline),
// published to the watch hub once durable, and answered, in order; and the store's probes after
// a failed commit.
#include <algorithm>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/metrics.h"
#include "server/sequencer.h"
#include "server/watch_hub.h"

namespace admitd {
namespace {

// ADDED stays ADDED for an object first created in the batch, unless the batch deleted it.
v1::WatchEvent::Type EventType(const engine::Change& change, bool added_in_batch) {
  return added_in_batch && change.type != v1::WatchEvent::DELETED ? v1::WatchEvent::ADDED
                                                                  : change.type;
}

// Appends field `field` (wire type 2) holding `bytes` to a serialized message.
void AppendLengthDelimited(int field, const std::string& bytes, std::string* out) {
  uint64_t tag = (static_cast<uint64_t>(field) << 3) | 2;
  for (uint64_t v : {tag, static_cast<uint64_t>(bytes.size())}) {
    while (v >= 0x80) {
      out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out->push_back(static_cast<char>(v));
  }
  out->append(bytes);
}

// A watch event that borrows its object from the engine's immutable snapshot instead of owning
// a copy of it: copying a Workload (and later destroying the copy) was a large share of each
// commit. The snapshot is kept alive by `object`; the event's oneof field only points at it and
// is let go of before the event is destroyed, so protobuf never frees or mutates it. Readers see
// an ordinary `const v1::WatchEvent` through the aliasing shared_ptr below.
struct BorrowedEvent {
  std::shared_ptr<const void> object;
  v1::WatchEvent event;

  ~BorrowedEvent() {
    if (event.has_workload()) {
      event.unsafe_arena_release_workload();
    } else if (event.has_queue_object()) {
      event.unsafe_arena_release_queue_object();
    } else if (event.has_event()) {
      event.unsafe_arena_release_event();
    }
  }
};

// `header` holds the event's own fields; the object comes from `change` without a copy (a
// Kubernetes Event's message is built from the engine's record).
EventPtr MakeEvent(const engine::Change& change, v1::WatchEvent header) {
  auto holder = std::make_shared<BorrowedEvent>();
  holder->event = std::move(header);
  if (change.workload) {
    holder->object = change.workload;
    holder->event.unsafe_arena_set_allocated_workload(
        const_cast<v1::Workload*>(change.workload.get()));
  } else if (change.event) {
    // The engine keeps a record of a Kubernetes Event; watch filters read the message.
    auto event = std::make_shared<v1::Event>(engine::ToEvent(*change.event));
    holder->event.unsafe_arena_set_allocated_event(event.get());
    holder->object = std::move(event);
  } else {
    holder->object = change.queue_object;
    holder->event.unsafe_arena_set_allocated_queue_object(
        const_cast<v1::QueueObject*>(change.queue_object.get()));
  }
  return EventPtr(holder, &holder->event);
}

}  // namespace

Sequencer::Encoded Sequencer::Encode(const std::vector<engine::Change>& changes) const {
  // An object changed several times in one batch is written, logged and published once, in its
  // last state: the intermediate states were never visible to anyone, and watchers only ever see
  // committed states. ADDED stays ADDED (the object is new to watchers), whatever came after.
  // Keyed by (kind, view of the Change's key): `changes` outlives the map, so no key is copied.
  absl::flat_hash_map<std::pair<int, absl::string_view>, size_t> last_of;
  last_of.reserve(changes.size());
  std::vector<bool> added(changes.size(), false);
  for (size_t i = 0; i < changes.size(); ++i) {
    const engine::Change& change = changes[i];
    auto [it, inserted] = last_of.try_emplace(
        std::make_pair(static_cast<int>(change.kind), absl::string_view(change.key)), i);
    if (!inserted) {
      added[i] = added[it->second] || changes[it->second].type == v1::WatchEvent::ADDED;
      it->second = i;
    }
  }
  std::vector<size_t> kept;
  kept.reserve(last_of.size());
  for (const auto& [id, index] : last_of) kept.push_back(index);
  std::sort(kept.begin(), kept.end());

  Encoded encoded;
  encoded.batch = std::make_shared<store::Batch>();
  store::Batch& batch = *encoded.batch;
  batch.revision = changes.back().revision;
  batch.events.reserve(kept.size());
  batch.writes.reserve(kept.size());
  // The event headers, kept for the hub's events once the batch is durable.
  std::vector<v1::WatchEvent>& headers = encoded.headers;
  std::vector<size_t>& evented = encoded.evented;
  headers.reserve(kept.size());
  evented.reserve(kept.size());
  for (size_t index : kept) {
    const engine::Change& change = changes[index];
    store::ObjectWrite write;
    write.kind = change.kind;
    write.key = change.key;
    write.deleted = change.type == v1::WatchEvent::DELETED;
    if (change.pod) {
      // Pods are stored for recovery but not logged or watched: the shim that reported them has
      // them, and their directives are derived from the Workloads.
      if (!write.deleted) write.value = change.pod->SerializeAsString();
      batch.writes.push_back(std::move(write));
      continue;
    }
    // The object is serialized once: it is the stored value and, appended to the event's other
    // fields, the logged event (concatenated protobuf encodings merge). A Kubernetes Event is
    // logged only.
    std::string object = change.encoded ? *change.encoded  // the engine's, for a finished one
                         : change.workload ? change.workload->SerializeAsString()
                         : change.event    ? engine::EncodeEvent(*change.event)
                                           : change.queue_object->SerializeAsString();
    v1::WatchEvent header;
    header.set_revision(change.revision);
    header.set_commit_revision(batch.revision);
    header.set_type(EventType(change, added[index]));
    header.set_kind(change.kind);
    header.set_reason(change.reason);
    header.set_message(change.event ? change.event->note : change.message);
    std::string event = header.SerializeAsString();
    AppendLengthDelimited(change.workload ? 10 : change.event ? 13 : 11, object, &event);
    batch.events.push_back({change.revision, std::move(event)});
    if (!change.event) {
      if (!write.deleted) write.value = std::move(object);
      batch.writes.push_back(std::move(write));
    }
    headers.push_back(std::move(header));
    evented.push_back(index);
  }
  return encoded;
}

void Sequencer::Publish(Encoded& encoded, const std::vector<engine::Change>& changes,
                        const std::vector<v1::PodDirective>& directives) {
  if (hub_ == nullptr) return;
  const store::Batch& batch = *encoded.batch;
  std::vector<v1::WatchEvent>& headers = encoded.headers;
  const std::vector<size_t>& evented = encoded.evented;
  hub_->Publish(batch.revision, [&](WatchHub::NamedKinds named) {
    std::vector<HubEvent> events;
    events.reserve(headers.size() + (named.directives ? directives.size() : 0));
    // A Watch stream sends the logged encoding as it is: the event is not serialized again.
    // Kubernetes Events go only to watches that name their kind: none is built without one.
    for (size_t i = 0; i < headers.size(); ++i) {
      const engine::Change& change = changes[evented[i]];
      if (change.event && !named.events) continue;
      events.push_back(HubEvent{MakeEvent(change, std::move(headers[i])),
                                grpc::Slice(batch.events[i].value)});
    }
    // Directives are live only: they carry the commit's revision and are not logged.
    for (const v1::PodDirective& d : directives) {
      if (!named.directives) break;
      auto event = std::make_shared<v1::WatchEvent>();
      event->set_revision(batch.revision);
      event->set_commit_revision(batch.revision);
      event->set_type(v1::WatchEvent::MODIFIED);
      event->set_kind(v1::OBJECT_KIND_POD_DIRECTIVE);
      event->set_reason(v1::PodDirective::Action_Name(d.action()));
      *event->mutable_directive() = d;
      events.push_back(HubEvent::Encode(std::move(event)));
    }
    return events;
  });
}

void Sequencer::RunCommitter() {
  store::CommitPipeline* const pipeline = store_->pipeline();
  const size_t depth = pipeline != nullptr ? static_cast<size_t>(pipeline->depth()) : 0;
  std::deque<Started> started;  // in the pipeline, oldest first; read under mu_ by Await
  while (true) {
    Pending pending;
    bool probe = false;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      auto can_start = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !to_commit_.empty() && (pipeline == nullptr || started.size() < depth);
      };
      auto can_finish = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !started.empty() && *started.front().ready;
      };
      auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return can_start() || can_finish() ||
               (started.empty() && (committer_stop_ || repair_ == Repair::kProbe));
      };
      mu_.Await(absl::Condition(&wake));
      if (can_start()) {
        pending = std::move(to_commit_.front());
        to_commit_.pop_front();
      } else if (can_finish()) {
        finish = true;
      } else {
        if (committer_stop_) return;  // stopping, nothing left
        // Probing the store: wait for the probe's time unless work arrives first.
        mu_.AwaitWithDeadline(absl::Condition(
                                  +[](Sequencer* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                                    return !s->to_commit_.empty() || s->committer_stop_ ||
                                           s->repair_ != Repair::kProbe;
                                  },
                                  this),
                              next_probe_);
        if (!to_commit_.empty() || committer_stop_ || repair_ != Repair::kProbe) continue;
        probe = true;
      }
    }
    if (probe) {
      ProbeStore();
    } else if (finish) {
      Started oldest = std::move(started.front());
      started.pop_front();
      FinishFromPipeline(std::move(oldest));
    } else if (pipeline != nullptr) {
      StartInPipeline(std::move(pending), &started);
    } else {
      CommitNow(std::move(pending));
    }
  }
}

void Sequencer::CommitNow(Pending pending) {
  const absl::Time start = absl::Now();
  absl::Status commit = pending.refused;
  if (commit.ok()) commit = health();  // an earlier batch of the pipeline may have failed
  if (commit.ok() && !pending.changes.empty()) {
    Encoded encoded = Encode(pending.changes);
    const absl::Time write_start = absl::Now();
    commit = Stored(pending, encoded, store_->Commit(*encoded.batch), write_start);
  }
  FinishBatch(pending, std::move(commit), start);
}

absl::Status Sequencer::Stored(Pending& pending, Encoded& encoded, absl::Status commit,
                               absl::Time write_start) {
  pending.times.written = absl::Now();
  if (store_commit_seconds_ != nullptr) {
    store_commit_seconds_->Observe(absl::ToDoubleSeconds(pending.times.written - write_start));
  }
  if (!commit.ok()) return CommitFailed(commit);
  Publish(encoded, pending.changes, pending.directives);
  return commit;
}

void Sequencer::StartInPipeline(Pending pending, std::deque<Started>* started) {
  Started s;
  s.start = absl::Now();
  s.ready = std::make_shared<bool>(false);
  s.answer = pending.refused;
  if (s.answer.ok()) s.answer = health();
  s.pending = std::move(pending);
  s.in_store = s.answer.ok() && !s.pending.changes.empty();
  if (s.in_store) s.encoded = Encode(s.pending.changes);
  std::shared_ptr<bool> ready = s.ready;
  std::shared_ptr<const store::Batch> batch = s.encoded.batch;
  const bool in_store = s.in_store;
  {
    absl::MutexLock lock(&mu_);
    if (!in_store) *ready = true;  // answered without the store, after the batches before it
    started->push_back(std::move(s));
  }
  if (in_store) {
    store_->pipeline()->Start(std::move(batch), [this, ready] {
      absl::MutexLock lock(&mu_);
      *ready = true;
    });
  }
}

void Sequencer::FinishFromPipeline(Started started) {
  Pending& pending = started.pending;
  absl::Status commit = started.answer;
  if (started.in_store) {
    commit = Stored(pending, started.encoded, store_->pipeline()->Finish(), started.start);
  } else if (commit.ok()) {
    commit = health();  // a batch before it failed after it was started: its answers may not go
  }
  FinishBatch(pending, std::move(commit), started.start);
}

absl::Status Sequencer::CommitFailed(const absl::Status& error) {
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    // A batch started behind one that failed fails too: the failure is handled once.
    if (!health_.ok()) return health_;
    health_ = absl::UnavailableError(absl::StrCat(
        "admitd cannot write to its store and refuses calls until it can again (it "
        "retries by itself; every write answered OK is safe): ",
        error.message()));
    repair_ = Repair::kReload;
    refused = health_;
  }
  ADMITD_LOG(kError, "commit failed; refusing calls until the store takes writes again",
             {{"error", error.ToString()}});
  if (options_.metrics != nullptr) {
    options_.metrics->Add("admitd_commit_failures_total", "Batches the store failed to commit.",
                          {});
  }
  NotifyHealth(refused);
  return refused;
}

void Sequencer::FinishBatch(Pending& pending, absl::Status commit, absl::Time start) {
  // The metrics count the batch before anyone hears it committed, so a scrape after an answer
  // sees what that answer did.
  if (commit.ok() && !pending.changes.empty() && options_.metrics != nullptr) {
    options_.metrics->CountChanges(pending.changes);
    options_.metrics->Set("admitd_revision", "The revision of the last committed change.", {},
                          static_cast<double>(pending.changes.back().revision));
    options_.metrics->Add("admitd_commits_total", "Batches committed to the store.", {});
  }
  for (Command& cmd : pending.commands) cmd.respond(commit);
  if (commit_seconds_ != nullptr && !pending.changes.empty()) {
    commit_seconds_->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  if (options_.traces != nullptr) {
    pending.times.commit_start = start;
    pending.times.answered = absl::Now();
    if (pending.times.written == absl::Time()) pending.times.written = start;
    static const std::vector<engine::Change> kNothing;
    options_.traces->Record(pending.times, pending.served,
                            commit.ok() ? pending.changes : kNothing, commit);
  }
  bool compact = false;
  {
    absl::MutexLock lock(&mu_);
    stats_.commit_time += absl::Now() - start;
    if (commit.ok() && !pending.changes.empty()) {
      stats_.commits++;
      compact = ++commits_since_compaction_ >= options_.compact_every_commits;
      if (compact) commits_since_compaction_ = 0;
      for (engine::Change& c : pending.changes) committed_changes_.push_back(std::move(c));
    }
    --in_flight_;
  }
  if (compact) {
    absl::StatusOr<uint64_t> dropped = store_->CompactEvents();
    if (!dropped.ok()) {
      ADMITD_LOG(kWarning, "event log compaction failed",
                 {{"error", dropped.status().ToString()}});
    } else if (*dropped > 0) {
      ADMITD_LOG(kDebug, "event log compacted", {{"dropped", absl::StrCat(*dropped)}});
    }
  }
}

void Sequencer::ProbeStore() {
  const absl::Status recovered = store_->Recover();
  int failures = 0;
  absl::Duration retry_in;
  {
    absl::MutexLock lock(&mu_);
    if (repair_ != Repair::kProbe) return;
    if (recovered.ok()) {
      repair_ = Repair::kReloadAfterProbe;  // wakes the sequencer thread
    } else {
      failures = ++failed_probes_;
      retry_in = probe_backoff_;
      next_probe_ = absl::Now() + probe_backoff_;
      probe_backoff_ = std::min(probe_backoff_ * 2, options_.recover_backoff_max);
    }
  }
  if (options_.metrics != nullptr) {
    options_.metrics->Add("admitd_store_recovery_attempts_total",
                          "Attempts to make the store take writes again after a failed commit.",
                          {{"result", recovered.ok() ? "ok" : "failed"}});
  }
  if (recovered.ok()) {
    ADMITD_LOG(kInfo, "the store takes writes again", {});
  } else if ((failures & (failures - 1)) == 0) {  // the 1st, 2nd, 4th, 8th... failure
    ADMITD_LOG(kWarning, "the store still refuses writes; retrying",
               {{"error", recovered.ToString()},
                {"attempts", absl::StrCat(failures)},
                {"retry_in", absl::FormatDuration(retry_in)}});
  }
}

}  // namespace admitd
