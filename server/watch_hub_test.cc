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
