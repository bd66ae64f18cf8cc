#include "server/ha/log_batch.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace admitd::ha {
namespace {

TEST(LogBatchTest, ABatchComesBackAsItWasWritten) {
  store::Batch batch;
  batch.revision = 42;
  batch.writes.push_back({admitd::v1::OBJECT_KIND_WORKLOAD, "ns/a", std::string("x\0y", 3), false});
  batch.writes.push_back({admitd::v1::OBJECT_KIND_CLUSTER_QUEUE, "cq", "", true});
  batch.events.push_back({41, "event-41"});
  batch.events.push_back({42, "event-42"});

  absl::StatusOr<store::Batch> again = DecodeBatch(EncodeBatch(batch));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->revision, 42u);
  ASSERT_EQ(again->writes.size(), 2u);
  EXPECT_EQ(again->writes[0].kind, admitd::v1::OBJECT_KIND_WORKLOAD);
  EXPECT_EQ(again->writes[0].key, "ns/a");
  EXPECT_EQ(again->writes[0].value, std::string("x\0y", 3));
  EXPECT_FALSE(again->writes[0].deleted);
  EXPECT_EQ(again->writes[1].kind, admitd::v1::OBJECT_KIND_CLUSTER_QUEUE);
  EXPECT_TRUE(again->writes[1].deleted);
  ASSERT_EQ(again->events.size(), 2u);
  EXPECT_EQ(again->events[1].revision, 42u);
  EXPECT_EQ(again->events[1].value, "event-42");
}

TEST(LogBatchTest, BytesThatAreNoBatchAreDataLoss) {
  absl::StatusOr<store::Batch> garbage = DecodeBatch(std::string("\xff\xff\xff", 3));
  EXPECT_TRUE(absl::IsDataLoss(garbage.status())) << garbage.status();
}

TEST(LogBatchTest, EntryKeysSortAsTheirRevisions) {
  std::vector<std::string> keys = {LogKey("d", 10), LogKey("d", 9), LogKey("d", 100),
                                   LogKey("d", 18446744073709551615u)};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys[0], LogKey("d", 9));
  EXPECT_EQ(keys[1], LogKey("d", 10));
  EXPECT_EQ(keys[2], LogKey("d", 100));
  EXPECT_EQ(keys[0], "/admitd/d/log/00000000000000000009");
  EXPECT_EQ(keys[0].rfind(LogPrefix("d"), 0), 0u);
}

}  // namespace
}  // namespace admitd::ha
