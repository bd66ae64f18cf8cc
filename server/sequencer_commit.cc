// The committer's write of one batch: its changes encoded once into the store's WriteBatch and
// event log, and, once durable, published to the watch hub (Sequencer::Commit).
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
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

absl::Status Sequencer::Commit(const std::vector<engine::Change>& changes,
                               const std::vector<v1::PodDirective>& directives,
                               absl::Time* written) {
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

  store::Batch batch;
  batch.revision = changes.back().revision;
  batch.events.reserve(kept.size());
  batch.writes.reserve(kept.size());
  // The event headers, kept for the hub's events once the batch is durable.
  std::vector<v1::WatchEvent> headers;
  std::vector<size_t> evented;  // the change each header belongs to (pods have none)
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
  const absl::Time write_start = absl::Now();
  absl::Status status = store_->Commit(batch);
  const absl::Time write_end = absl::Now();
  if (written != nullptr) *written = write_end;
  if (store_commit_seconds_ != nullptr) {
    store_commit_seconds_->Observe(absl::ToDoubleSeconds(write_end - write_start));
  }
  if (status.ok() && hub_ != nullptr) {
    hub_->Publish(batch.revision, [&](WatchHub::NamedKinds named) {
      std::vector<HubEvent> events;
      events.reserve(kept.size() + (named.directives ? directives.size() : 0));
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
  return status;
}

}  // namespace admitd
