#include "clients/shim/kube/work_queue.h"

#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

TEST(WorkQueue, AKeyAddedTwiceIsProcessedOnce) {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  std::string key;
  ASSERT_TRUE(q.Get(&key));
  EXPECT_EQ(key, "a");
  ASSERT_TRUE(q.Get(&key));
  EXPECT_EQ(key, "b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueue, AKeyAddedWhileHeldComesBackAfterDone) {
  WorkQueue q;
  q.Add("a");
  std::string key;
  ASSERT_TRUE(q.Get(&key));
  q.Add("a");  // changed while a worker reconciles it
  EXPECT_EQ(q.Len(), 0u) << "never handed to a second worker while held";
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
  ASSERT_TRUE(q.Get(&key));
  EXPECT_EQ(key, "a");
}

TEST(WorkQueue, RetriesBackOffExponentiallyUntilForgotten) {
  WorkQueue q({.base_delay = absl::Milliseconds(20), .max_delay = absl::Milliseconds(80)});
  std::string key;
  q.AddRateLimited("a");  // 20 ms
  EXPECT_EQ(q.Len(), 0u);
  absl::Time start = absl::Now();
  ASSERT_TRUE(q.Get(&key));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(19));
  q.Done("a");
  q.AddRateLimited("a");  // 40 ms
  q.AddRateLimited("a");  // 80 ms (capped), the earlier delay wins: one key
  EXPECT_EQ(q.Retries("a"), 3);
  start = absl::Now();
  ASSERT_TRUE(q.Get(&key));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(39));
  q.Done("a");
  q.Forget("a");
  EXPECT_EQ(q.Retries("a"), 0);
}

TEST(WorkQueue, ShutDownWakesWaitingWorkers) {
  WorkQueue q;
  std::thread worker([&] {
    std::string key;
    EXPECT_FALSE(q.Get(&key));
  });
  absl::SleepFor(absl::Milliseconds(20));
  q.ShutDown();
  worker.join();
}

}  // namespace
}  // namespace admitd::shim
