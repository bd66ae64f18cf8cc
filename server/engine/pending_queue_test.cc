#include "server/engine/pending_queue.h"

#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace admitd::engine {
namespace {

class PendingQueueTest : public ::testing::Test {
 protected:
  // A key of the given priority created at second `t` (distinct uids).
  QueueKey* Key(int32_t priority, int t) {
    QueueKey& k = keys_.emplace_back();
    k.priority = priority;
    k.timestamp = absl::FromUnixSeconds(t);
    k.uid = absl::StrCat("uid-", keys_.size());
    k.key = absl::StrCat("ns/wl-", keys_.size());
    return &k;
  }
  // Pops every active workload, in order.
  std::vector<std::string> Drain() {
    std::vector<std::string> out;
    while (QueueKey* k = queue_.Front()) {
      out.push_back(k->key);
      queue_.Remove(k);
    }
    return out;
  }

  std::deque<QueueKey> keys_;  // nodes never move
  PendingQueue queue_;
};

TEST_F(PendingQueueTest, FrontFollowsQueueOrderAcrossShapes) {
  QueueKey* a = Key(0, 3);
  QueueKey* b = Key(5, 9);
  QueueKey* c = Key(0, 1);
  QueueKey* d = Key(0, 2);
  EXPECT_TRUE(queue_.Add(a, 1));
  EXPECT_TRUE(queue_.Add(b, 2));
  EXPECT_TRUE(queue_.Add(c, 3));
  EXPECT_TRUE(queue_.Add(d, 1));  // before a in a's group: becomes the group's front
  EXPECT_EQ(queue_.active(), 4u);
  // Priority first, then time.
  EXPECT_EQ(Drain(), (std::vector<std::string>{b->key, c->key, d->key, a->key}));
  EXPECT_TRUE(queue_.empty());
}

TEST_F(PendingQueueTest, SetAsideTakesTheWholeShapeAndLaterArrivals) {
  QueueKey* a1 = Key(0, 1);
  QueueKey* b1 = Key(0, 2);
  QueueKey* a2 = Key(0, 3);
  QueueKey* a3 = Key(0, 4);
  queue_.Add(a1, 7);
  queue_.Add(b1, 8);
  queue_.Add(a2, 7);
  queue_.Add(a3, 7);
  queue_.Remove(a1);  // the head, tried and failed
  queue_.AddAlone(a1, 7);
  EXPECT_EQ(queue_.SetAside(7, "NoFit"), 2u);  // a2 and a3
  EXPECT_TRUE(queue_.IsSetAside(7));
  EXPECT_FALSE(queue_.IsSetAside(8));
  EXPECT_EQ(queue_.active(), 1u);
  EXPECT_EQ(queue_.inadmissible(), 3u);
  EXPECT_FALSE(queue_.IsActive(a1));
  EXPECT_FALSE(queue_.IsActive(a2));
  EXPECT_TRUE(queue_.IsActive(b1));
  EXPECT_EQ(queue_.Front(), b1);
  // A later arrival of the same shape waits with it; another shape does not.
  QueueKey* a0 = Key(0, 0);
  EXPECT_FALSE(queue_.Add(a0, 7));
  QueueKey* c = Key(0, 5);
  EXPECT_TRUE(queue_.Add(c, 9));
  // A workload set aside can leave (deleted) without an attempt.
  queue_.Remove(a3);
  EXPECT_EQ(queue_.inadmissible(), 3u);
  EXPECT_EQ(queue_.InOrder(), (std::vector<QueueKey*>{b1, c, a0, a1, a2}));
  queue_.RequeueAll();
  EXPECT_FALSE(queue_.IsSetAside(7));
  EXPECT_EQ(queue_.inadmissible(), 0u);
  EXPECT_EQ(queue_.active(), 5u);
  EXPECT_TRUE(queue_.IsActive(a1));
  EXPECT_EQ(Drain(), (std::vector<std::string>{a0->key, a1->key, b1->key, a2->key, c->key}));
}

TEST_F(PendingQueueTest, AShapeSetAsideWithNoneQueuedStillHoldsArrivals) {
  EXPECT_EQ(queue_.SetAside(4, "NoFit"), 0u);
  QueueKey* a = Key(0, 1);
  EXPECT_FALSE(queue_.Add(a, 4));
  EXPECT_EQ(queue_.Front(), nullptr);
  // Set aside twice: the second time moves nothing more.
  EXPECT_EQ(queue_.SetAside(4, "NoFit"), 0u);
  queue_.Remove(a);
  EXPECT_TRUE(queue_.empty());
  QueueKey* b = Key(0, 2);
  EXPECT_FALSE(queue_.Add(b, 4));
  queue_.RequeueAll();
  EXPECT_EQ(queue_.Front(), b);
}

TEST_F(PendingQueueTest, RemovingAnAbsentKeyChangesNothing) {
  QueueKey* a = Key(0, 1);
  QueueKey* b = Key(0, 2);
  queue_.Add(a, 1);
  queue_.Remove(b);
  queue_.Remove(a);
  queue_.Remove(a);
  EXPECT_TRUE(queue_.empty());
  EXPECT_EQ(queue_.Front(), nullptr);
}

// Random operations against a plain model: a set of active keys in queue order, shapes set
// aside, and the inadmissible keys.
TEST_F(PendingQueueTest, MatchesAPlainModelUnderRandomOperations) {
  std::mt19937 rng(20261128);
  struct Less {
    bool operator()(const QueueKey* a, const QueueKey* b) const { return *a < *b; }
  };
  std::set<QueueKey*, Less> active;
  std::set<QueueKey*, Less> inadmissible;
  std::set<uint64_t> set_aside;
  std::vector<QueueKey*> out;  // not queued
  for (int i = 0; i < 200; ++i) out.push_back(Key(static_cast<int32_t>(rng() % 3), rng() % 50));
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 4 && !out.empty()) {
      const size_t i = rng() % out.size();
      QueueKey* k = out[i];
      out.erase(out.begin() + static_cast<long>(i));
      const uint64_t shape = rng() % 5;
      if (op == 0) {
        queue_.AddAlone(k, shape);
        inadmissible.insert(k);
      } else {
        const bool is_active = queue_.Add(k, shape);
        ASSERT_EQ(is_active, set_aside.count(shape) == 0);
        (is_active ? active : inadmissible).insert(k);
      }
    } else if (op < 6) {
      if (QueueKey* front = queue_.Front()) {
        ASSERT_FALSE(active.empty());
        ASSERT_EQ(front, *active.begin());
        queue_.Remove(front);
        active.erase(front);
        out.push_back(front);
      } else {
        ASSERT_TRUE(active.empty());
      }
    } else if (op == 6) {
      // Remove any key, queued or not.
      QueueKey* k = &keys_[rng() % keys_.size()];
      queue_.Remove(k);
      if (active.erase(k) + inadmissible.erase(k) > 0) out.push_back(k);
    } else if (op == 7 || op == 8) {
      const uint64_t shape = rng() % 5;
      std::vector<QueueKey*> expected;
      if (set_aside.insert(shape).second) {
        for (QueueKey* k : active) {
          if (k->shape == shape) expected.push_back(k);
        }
      }
      ASSERT_EQ(queue_.SetAside(shape, "NoFit"), expected.size());
      for (QueueKey* k : expected) {
        active.erase(k);
        inadmissible.insert(k);
      }
    } else {
      queue_.RequeueAll();
      set_aside.clear();
      active.insert(inadmissible.begin(), inadmissible.end());
      inadmissible.clear();
    }
    ASSERT_EQ(queue_.active(), active.size()) << "step " << step;
    ASSERT_EQ(queue_.inadmissible(), inadmissible.size()) << "step " << step;
    std::vector<QueueKey*> in_order(active.begin(), active.end());
    in_order.insert(in_order.end(), inadmissible.begin(), inadmissible.end());
    ASSERT_EQ(queue_.InOrder(), in_order) << "step " << step;
  }
  for (QueueKey* k : active) EXPECT_TRUE(queue_.IsActive(k));
  for (QueueKey* k : inadmissible) EXPECT_FALSE(queue_.IsActive(k));
}

}  // namespace
}  // namespace admitd::engine
