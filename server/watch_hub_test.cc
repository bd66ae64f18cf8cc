#include "server/watch_hub.h"

#include <atomic>

#include "gtest/gtest.h"

namespace admitd {
namespace {

EventPtr WorkloadEvent(uint64_t revision, const std::string& ns, const std::string& cq = "") {
  auto event = std::make_shared<v1::WatchEvent>();
  event->set_revision(revision);
  event->set_type(v1::WatchEvent::MODIFIED);
  event->set_kind(v1::OBJECT_KIND_WORKLOAD);
  event->mutable_workload()->mutable_metadata()->set_namespace_(ns);
  event->mutable_workload()->mutable_metadata()->set_name("w" + std::to_string(revision));
  if (!cq.empty()) event->mutable_workload()->mutable_status()->mutable_admission()->set_cluster_queue(cq);
  return event;
}

TEST(WatchHubTest, DeliversMatchingEventsAndWakes) {
  WatchHub hub;
  hub.SetRevision(5);
  std::atomic<int> wakes{0};
  WatchFilter filter;
  filter.namespace_ = "team-a";
  uint64_t revision = 0;
  auto sub = hub.Subscribe(filter, [&] { wakes++; }, &revision);
  EXPECT_EQ(revision, 5u);
  hub.Publish({WorkloadEvent(6, "team-a"), WorkloadEvent(7, "team-b"), WorkloadEvent(8, "team-a")},
              8);
  EXPECT_EQ(wakes.load(), 1);
  EXPECT_EQ(hub.revision(), 8u);
  std::deque<EventPtr> got;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&got, &closed));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]->revision(), 6u);
  EXPECT_EQ(got[1]->revision(), 8u);
  // Nothing matched: no wake.
  hub.Publish({WorkloadEvent(9, "team-b")}, 9);
  EXPECT_EQ(wakes.load(), 1);
}

TEST(WatchHubTest, FiltersByKindAndClusterQueue) {
  v1::WatchRequest request;
  request.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  request.set_cluster_queue("cq-1");
  WatchFilter filter = WatchFilter::From(request);
  EXPECT_TRUE(filter.Matches(*WorkloadEvent(1, "ns", "cq-1")));
  EXPECT_FALSE(filter.Matches(*WorkloadEvent(1, "ns", "cq-2")));
  v1::WatchEvent flavor;
  flavor.set_kind(v1::OBJECT_KIND_RESOURCE_FLAVOR);
  flavor.mutable_queue_object()->mutable_resource_flavor();
  EXPECT_FALSE(filter.Matches(flavor));
}

// The kinds sent only to a watch that names them are built only while such a watch exists.
TEST(WatchHubTest, TellsThePublisherWhichNamedOnlyKindsAreWatched) {
  WatchHub hub;
  std::vector<std::pair<bool, bool>> seen;  // (events, directives) per build
  auto publish = [&](uint64_t revision) {
    hub.Publish(revision, [&](WatchHub::NamedKinds named) {
      seen.emplace_back(named.events, named.directives);
      return std::vector<HubEvent>{};
    });
  };
  publish(1);  // nobody subscribed: nothing is built
  EXPECT_TRUE(seen.empty());
  uint64_t revision = 0;
  auto workloads = hub.Subscribe(WatchFilter{}, [] {}, &revision);
  publish(2);
  WatchFilter events;
  events.kinds = {v1::OBJECT_KIND_EVENT};
  auto event_watch = hub.Subscribe(events, [] {}, &revision);
  publish(3);
  WatchFilter directives;
  directives.kinds = {v1::OBJECT_KIND_POD_DIRECTIVE, v1::OBJECT_KIND_WORKLOAD};
  auto directive_watch = hub.Subscribe(directives, [] {}, &revision);
  publish(4);
  hub.Unsubscribe(event_watch);
  publish(5);
  EXPECT_EQ(seen, (std::vector<std::pair<bool, bool>>{
                      {false, false}, {true, false}, {true, true}, {false, true}}));
}

TEST(WatchHubTest, SlowSubscriberIsCutOffWithoutBlockingOthers) {
  WatchHub hub(/*max_buffered=*/3);
  uint64_t revision;
  auto slow = hub.Subscribe({}, [] {}, &revision);
  auto fast = hub.Subscribe({}, [] {}, &revision);
  std::deque<EventPtr> got;
  absl::Status closed;
  for (uint64_t r = 1; r <= 5; ++r) {
    hub.Publish({WorkloadEvent(r, "ns")}, r);
    ASSERT_TRUE(fast->Take(&got, &closed));  // the fast one keeps up
  }
  EXPECT_EQ(got.size(), 5u);
  std::deque<EventPtr> slow_got;
  EXPECT_FALSE(slow->Take(&slow_got, &closed));
  EXPECT_EQ(closed.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(slow_got.empty());
}

// A workload event whose encoding is about `bytes` long.
EventPtr LargeEvent(uint64_t revision, size_t bytes) {
  auto event = std::make_shared<v1::WatchEvent>(*WorkloadEvent(revision, "ns"));
  (*event->mutable_workload()->mutable_metadata()->mutable_annotations())["blob"] =
      std::string(bytes, 'x');
  return event;
}

TEST(WatchHubTest, BuffersAreCountedInBytesUntilReleased) {
  WatchHub hub(/*max_buffered_events=*/100, /*max_buffered_bytes=*/1 << 20);
  uint64_t revision;
  auto sub = hub.Subscribe(
      {}, [] {}, &revision);
  hub.Publish({LargeEvent(1, 1000), LargeEvent(2, 2000)}, 2);
  EXPECT_EQ(sub->buffered_events(), 2u);
  const size_t queued = sub->buffered_bytes();
  EXPECT_GT(queued, 3000u);
  EXPECT_LT(queued, 3200u);
  // Taken events still count until the stream released them (it wrote them).
  std::deque<HubEvent> taken;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&taken, &closed));
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(sub->buffered_bytes(), queued);
  sub->Release(1, taken[0].encoded.size());
  EXPECT_EQ(sub->buffered_events(), 1u);
  EXPECT_EQ(sub->buffered_bytes(), taken[1].encoded.size());
  sub->Release(1, taken[1].encoded.size());
  EXPECT_EQ(sub->buffered_events(), 0u);
  EXPECT_EQ(sub->buffered_bytes(), 0u);
}

TEST(WatchHubTest, SlowWatcherOfLargeEventsIsCutOffAtTheByteBound) {
  constexpr size_t kEvent = 512 << 10, kBound = 4 << 20;  // 512 KiB events, 4 MiB per watcher
  WatchHub hub(/*max_buffered_events=*/10000, kBound);
  uint64_t revision;
  std::atomic<int> slow_wakes{0};
  auto slow = hub.Subscribe(
      {}, [&] { slow_wakes++; }, &revision);
  auto fast = hub.Subscribe(
      {}, [] {}, &revision);
  std::deque<EventPtr> fast_got;
  absl::Status closed;
  for (uint64_t r = 1; r <= 20; ++r) {
    hub.Publish({LargeEvent(r, kEvent)}, r);
    EXPECT_LE(slow->buffered_bytes(), kBound) << "after event " << r;
    ASSERT_TRUE(fast->Take(&fast_got, &closed));  // the fast one keeps up
  }
  EXPECT_EQ(fast_got.size(), 20u);
  // The slow one was cut off after 7 events (the 8th would pass 4 MiB), long before 10,000.
  std::deque<EventPtr> slow_got;
  EXPECT_FALSE(slow->Take(&slow_got, &closed));
  EXPECT_EQ(closed.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(closed.message()).find("4194304 bytes"), std::string::npos) << closed;
  EXPECT_TRUE(slow_got.empty());
  EXPECT_EQ(slow->buffered_bytes(), 0u) << "the dropped events are no longer held";
  EXPECT_EQ(slow->buffered_events(), 0u);
  EXPECT_EQ(fast->buffered_bytes(), 0u);
  EXPECT_EQ(slow_wakes.load(), 8);  // woken for each queued event, then for the cut-off
}

TEST(WatchHubTest, AnEventLargerThanTheBoundStillReachesAnIdleWatcher) {
  WatchHub hub(/*max_buffered_events=*/10, /*max_buffered_bytes=*/1024);
  uint64_t revision;
  auto sub = hub.Subscribe(
      {}, [] {}, &revision);
  hub.Publish({LargeEvent(1, 4096)}, 1);
  std::deque<EventPtr> got;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&got, &closed)) << closed;
  EXPECT_EQ(got.size(), 1u);
}

TEST(WatchHubTest, CloseEndsEverySubscription) {
  WatchHub hub;
  uint64_t revision;
  std::atomic<int> wakes{0};
  auto sub = hub.Subscribe({}, [&] { wakes++; }, &revision);
  hub.Close();
  EXPECT_EQ(wakes.load(), 1);
  std::deque<EventPtr> got;
  absl::Status closed;
  EXPECT_FALSE(sub->Take(&got, &closed));
  EXPECT_EQ(closed.code(), absl::StatusCode::kUnavailable);
  auto late = hub.Subscribe({}, [] {}, &revision);
  EXPECT_FALSE(late->Take(&got, &closed));
  EXPECT_EQ(hub.subscribers(), 0u);
}

}  // namespace
}  // namespace admitd
