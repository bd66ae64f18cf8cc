#include "server/sequencer.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/watch_hub.h"
#include "store/memory_store.h"

namespace admitd {
namespace {

// A Store that keeps batches in memory, can be slow, and can fail.
class RecordingStore : public store::Store {
 public:
  absl::Status Commit(const store::Batch& batch) override {
    absl::SleepFor(delay);
    absl::MutexLock lock(&mu);
    if (!fail_with.ok()) return fail_with;
    batches.push_back(batch);
    revision_ = batch.revision;
    return absl::OkStatus();
  }
  absl::Status ForEachObject(const std::function<absl::Status(v1::ObjectKind, absl::string_view,
                                                              absl::string_view)>&) const override {
    return absl::OkStatus();
  }
  uint64_t revision() const override {
    absl::MutexLock lock(&mu);
    return revision_;
  }
  uint64_t oldest_event_revision() const override { return 1; }
  absl::Status ReadEvents(uint64_t, size_t, std::vector<store::LoggedEvent>*) const override {
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> CompactEvents() override { return 0; }
  absl::Status Recover() override {
    absl::MutexLock lock(&mu);
    ++recovers;
    return fail_with;
  }
  absl::Status Close() override { return absl::OkStatus(); }

  size_t commits() const {
    absl::MutexLock lock(&mu);
    return batches.size();
  }

  absl::Duration delay = absl::ZeroDuration();
  mutable absl::Mutex mu;
  absl::Status fail_with ABSL_GUARDED_BY(mu);
  std::vector<store::Batch> batches ABSL_GUARDED_BY(mu);
  uint64_t revision_ ABSL_GUARDED_BY(mu) = 0;
  int recovers ABSL_GUARDED_BY(mu) = 0;
};

v1::ApplyRequest FlavorRequest(const std::string& name) {
  v1::ApplyRequest req;
  req.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name(name);
  return req;
}

// Enqueues an Apply of flavor `name`; `done` gets the status once the command is answered.
void ApplyFlavor(Sequencer& seq, const std::string& name,
                 std::function<void(const absl::Status&)> done) {
  auto result = std::make_shared<absl::Status>();
  Command cmd;
  cmd.apply = [name, result](engine::Engine& e, absl::Time now) {
    *result = e.Apply(FlavorRequest(name), now).status();
  };
  cmd.respond = [result, done](const absl::Status& commit) {
    done(result->ok() ? commit : *result);
  };
  seq.Enqueue(std::move(cmd));
}

TEST(SequencerTest, ConcurrentWritersShareCommits) {
  engine::Engine engine;
  ASSERT_TRUE(engine.FinishRestore(0).ok());
  RecordingStore store;
  store.delay = absl::Milliseconds(2);  // a slow fsync: writers pile up behind it
  Sequencer seq(&engine, &store, nullptr, SequencerOptions{});
  seq.Start();
  constexpr int kThreads = 16, kPerThread = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        absl::Notification answered;
        ApplyFlavor(seq, absl::StrCat("f-", t, "-", i), [&](const absl::Status& s) {
          if (s.ok()) ok++;
          answered.Notify();
        });
        answered.WaitForNotification();
      }
    });
  }
  for (auto& t : threads) t.join();
  seq.Stop();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  SequencerStats stats = seq.stats();
  EXPECT_EQ(stats.commands, static_cast<uint64_t>(kThreads * kPerThread));
  // Each writer waits for its answer before writing again, so without batching there would be
  // one commit per command. With group commit the 16 writers share most fsyncs.
  EXPECT_LT(store.commits(), static_cast<size_t>(kThreads * kPerThread) / 4)
      << "commits: " << store.commits();
  // Every change reached the store, in revision order, each batch's revision its last change.
  uint64_t last = 0, events = 0;
  absl::MutexLock lock(&store.mu);
  for (const store::Batch& b : store.batches) {
    for (const store::LoggedEvent& e : b.events) {
      EXPECT_GT(e.revision, last);
      v1::WatchEvent logged;
      ASSERT_TRUE(logged.ParseFromString(e.value));
      EXPECT_EQ(logged.commit_revision(), b.revision);  // replayed events know their commit
      last = e.revision;
      ++events;
    }
    EXPECT_EQ(b.revision, last);
  }
  EXPECT_EQ(events, static_cast<uint64_t>(kThreads * kPerThread));
}

TEST(SequencerTest, AnswersComeAfterTheCommitAndPublishAfterIt) {
  engine::Engine engine;
  ASSERT_TRUE(engine.FinishRestore(0).ok());
  RecordingStore store;
  WatchHub hub;
  uint64_t revision;
  std::atomic<size_t> commits_seen_by_watcher{0};
  auto sub = hub.Subscribe({}, [&] { commits_seen_by_watcher = store.commits(); }, &revision);
  Sequencer seq(&engine, &store, &hub, SequencerOptions{});
  seq.Start();
  absl::Notification answered;
  size_t commits_at_answer = 0;
  ApplyFlavor(seq, "default", [&](const absl::Status& s) {
    EXPECT_TRUE(s.ok()) << s;
    commits_at_answer = store.commits();
    answered.Notify();
  });
  answered.WaitForNotification();
  EXPECT_EQ(commits_at_answer, 1u);
  EXPECT_EQ(commits_seen_by_watcher.load(), 1u);
  std::deque<EventPtr> events;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&events, &closed));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]->queue_object().resource_flavor().metadata().name(), "default");
  EXPECT_EQ(hub.revision(), events[0]->revision());
  EXPECT_EQ(events[0]->commit_revision(), events[0]->revision());  // it ends its commit
}

TEST(SequencerTest, AFailedCommitStopsWrites) {
  engine::Engine engine;
  ASSERT_TRUE(engine.FinishRestore(0).ok());
  RecordingStore store;
  {
    absl::MutexLock lock(&store.mu);
    store.fail_with = absl::DataLossError("disk on fire");
  }
  WatchHub hub;
  uint64_t revision;
  auto sub = hub.Subscribe({}, [] {}, &revision);
  Sequencer seq(&engine, &store, &hub, SequencerOptions{});
  seq.Start();
  absl::Notification first, second;
  absl::Status first_status, second_status;
  ApplyFlavor(seq, "a", [&](const absl::Status& s) {
    first_status = s;
    first.Notify();
  });
  first.WaitForNotification();
  EXPECT_EQ(first_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(first_status.message()).find("disk on fire"), std::string::npos);
  ApplyFlavor(seq, "b", [&](const absl::Status& s) {
    second_status = s;
    second.Notify();
  });
  second.WaitForNotification();
  EXPECT_EQ(second_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(seq.health().ok());
  std::deque<EventPtr> events;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&events, &closed));
  EXPECT_TRUE(events.empty()) << "nothing uncommitted may be published";
}

// Flavor names the engine holds.
std::vector<std::string> FlavorNames(const engine::Engine& engine) {
  v1::ListObjectsRequest list;
  list.set_kind(v1::OBJECT_KIND_RESOURCE_FLAVOR);
  absl::StatusOr<v1::ListObjectsResponse> listed = engine.List(list);
  std::vector<std::string> names;
  if (!listed.ok()) return names;
  for (const v1::QueueObject& o : listed->objects()) {
    names.push_back(o.resource_flavor().metadata().name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The startup recovery, for queue objects: what a restart would load from `store`.
absl::Status RestoreQueueObjects(const store::Store& store, engine::Engine* engine) {
  engine::Engine fresh;
  absl::Status restored = store.ForEachObject(
      [&](v1::ObjectKind, absl::string_view, absl::string_view value) -> absl::Status {
        v1::QueueObject object;
        if (!object.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return absl::DataLossError("unparsable");
        }
        return fresh.Restore(object);
      });
  if (!restored.ok()) return restored;
  if (absl::Status s = fresh.FinishRestore(store.revision()); !s.ok()) return s;
  *engine = std::move(fresh);
  return absl::OkStatus();
}

// Polls `done` until it holds or 10 s pass.
bool WaitFor(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// Answers of ApplyFlavor, waited for.
absl::Status ApplyFlavorAndWait(Sequencer& seq, const std::string& name) {
  absl::Notification answered;
  absl::Status status;
  ApplyFlavor(seq, name, [&](const absl::Status& s) {
    status = s;
    answered.Notify();
  });
  answered.WaitForNotification();
  return status;
}

TEST(SequencerTest, AFailedCommitIsRepairedOnceTheStoreTakesWritesAgain) {
  engine::Engine engine;
  ASSERT_TRUE(engine.FinishRestore(0).ok());
  store::MemoryStore store;
  WatchHub hub;
  uint64_t revision;
  auto sub = hub.Subscribe(
      {}, [] {}, &revision);
  absl::Mutex mu;
  std::vector<bool> health_changes;  // ok() of each change, in order
  SequencerOptions options;
  options.recover_backoff_initial = absl::Milliseconds(1);
  options.recover_backoff_max = absl::Milliseconds(20);
  options.reload = [&store](engine::Engine* e) { return RestoreQueueObjects(store, e); };
  options.on_health_change = [&](const absl::Status& health) {
    absl::MutexLock lock(&mu);
    health_changes.push_back(health.ok());
  };
  Sequencer seq(&engine, &store, &hub, options);
  seq.Start();
  ASSERT_TRUE(ApplyFlavorAndWait(seq, "a").ok());

  store.SetUnwritable(absl::UnavailableError("the disk is full"));
  absl::Status failed = ApplyFlavorAndWait(seq, "b");
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(failed.message()).find("the disk is full"), std::string::npos) << failed;
  EXPECT_EQ(seq.health().code(), absl::StatusCode::kUnavailable);
  // Refused while the store refuses writes, however often the store is probed meanwhile.
  EXPECT_EQ(ApplyFlavorAndWait(seq, "c").code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(WaitFor([&store] { return store.recover_count() >= 2; }));
  EXPECT_EQ(seq.health().code(), absl::StatusCode::kUnavailable);

  store.SetUnwritable(absl::OkStatus());  // space returns
  ASSERT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return health_changes.size() >= 2;
  }));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(health_changes, (std::vector<bool>{false, true}));
  }
  EXPECT_TRUE(seq.health().ok()) << seq.health();
  ASSERT_TRUE(ApplyFlavorAndWait(seq, "d").ok());
  seq.Stop();

  // The engine holds what was committed, never the batch that failed: what a restart loads.
  EXPECT_EQ(FlavorNames(engine), (std::vector<std::string>{"a", "d"}));
  engine::Engine restarted;
  ASSERT_TRUE(RestoreQueueObjects(store, &restarted).ok());
  EXPECT_EQ(FlavorNames(restarted), FlavorNames(engine));
  EXPECT_EQ(restarted.revision(), engine.revision());
  // Watchers saw the committed changes only.
  std::deque<EventPtr> events;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&events, &closed));
  std::vector<std::string> seen;
  for (const EventPtr& e : events)
    seen.push_back(e->queue_object().resource_flavor().metadata().name());
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "d"}));
}

TEST(SequencerTest, StopAnswersEveryCommand) {
  engine::Engine engine;
  ASSERT_TRUE(engine.FinishRestore(0).ok());
  RecordingStore store;
  Sequencer seq(&engine, &store, nullptr, SequencerOptions{});
  seq.Start();
  std::atomic<int> answered{0};
  for (int i = 0; i < 100; ++i) {
    ApplyFlavor(seq, absl::StrCat("f", i), [&](const absl::Status&) { answered++; });
  }
  seq.Stop();
  EXPECT_EQ(answered.load(), 100);
  absl::Status late;
  ApplyFlavor(seq, "late", [&](const absl::Status& s) { late = s; });
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable);
}

// The manual clock's offset holds about 292 years of nanoseconds: advances past that are
// refused instead of wrapping the clock around into the past.
TEST(SequencerTest, ManualClockRefusesToWrapAround) {
  engine::Engine engine;
  RecordingStore store;
  SequencerOptions options;
  options.manual_clock = true;
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  options.clock = [t0] { return t0; };
  Sequencer seq(&engine, &store, nullptr, options);
  const absl::Duration century = absl::Hours(24 * 365 * 100);
  ASSERT_TRUE(seq.AdvanceClock(century).ok());
  ASSERT_TRUE(seq.AdvanceClock(century).ok());
  EXPECT_EQ(seq.Now(), t0 + 2 * century);
  EXPECT_EQ(seq.AdvanceClock(century).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(seq.AdvanceClock(absl::Seconds(std::numeric_limits<int64_t>::max())).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(seq.Now(), t0 + 2 * century);
  ASSERT_TRUE(seq.AdvanceClock(absl::Hours(1)).ok());
  EXPECT_EQ(seq.Now(), t0 + 2 * century + absl::Hours(1));
}

}  // namespace
}  // namespace admitd
