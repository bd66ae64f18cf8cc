#include "server/ha/log_batch.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
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

TEST(LogBatchTest, EntryKeysSortAsTheirRevisionsAndParts) {
  std::vector<std::string> keys = {LogKey("d", 10), LogKey("d", 9, 1), LogKey("d", 100),
                                   LogKey("d", 9), LogKey("d", 18446744073709551615u, 999999)};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys[0], LogKey("d", 9));
  EXPECT_EQ(keys[1], LogKey("d", 9, 1));
  EXPECT_EQ(keys[2], LogKey("d", 10));
  EXPECT_EQ(keys[3], LogKey("d", 100));
  EXPECT_EQ(keys[0], "/admitd/d/log/00000000000000000009/000000");
  for (const std::string& k : keys) {
    EXPECT_EQ(k.rfind(LogPrefix("d"), 0), 0u);
    EXPECT_LT(k, LogEnd("d"));
  }
  uint64_t revision = 0;
  uint32_t part = 0;
  ASSERT_TRUE(ParseLogKey("d", keys[4], &revision, &part));
  EXPECT_EQ(revision, 18446744073709551615u);
  EXPECT_EQ(part, 999999u);
  EXPECT_FALSE(ParseLogKey("e", keys[4], &revision, &part));
  EXPECT_FALSE(ParseLogKey("d", "/admitd/d/log/9/0", &revision, &part));
}

store::Batch Big(uint64_t revision, size_t bytes) {
  store::Batch batch;
  batch.revision = revision;
  batch.writes.push_back({admitd::v1::OBJECT_KIND_WORKLOAD, absl::StrCat("ns/", revision),
                          std::string(bytes, 'x'), false});
  batch.events.push_back({revision, "e"});
  return batch;
}

TEST(LogBatchTest, ALargeBatchIsCutIntoChunksAndPutBackTogether) {
  const store::Batch batch = Big(7, 2500);
  std::vector<std::string> chunks = EncodeChunks(batch, 1000);
  ASSERT_EQ(chunks.size(), 3u);  // 2,500 bytes of value and a few of framing
  EXPECT_EQ(EncodeChunks(batch, 1 << 20).size(), 1u);

  BatchAssembler assembler("d");
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    EXPECT_TRUE(assembler.TakeComplete().empty());
    ASSERT_TRUE(assembler.Add(LogKey("d", 7, i), chunks[i]).ok());
    EXPECT_EQ(assembler.incomplete_revision(), i + 1 < chunks.size() ? 7u : 0u);
  }
  std::vector<store::Batch> batches = assembler.TakeComplete();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].revision, 7u);
  ASSERT_EQ(batches[0].writes.size(), 1u);
  EXPECT_EQ(batches[0].writes[0].value, batch.writes[0].value);
  EXPECT_EQ(batches[0].events[0].revision, 7u);
}

TEST(LogBatchTest, AMissingPartOrAForeignKeyIsDataLoss) {
  std::vector<std::string> first = EncodeChunks(Big(7, 2500), 1000);
  std::vector<std::string> second = EncodeChunks(Big(8, 10), 1000);
  {
    BatchAssembler assembler("d");
    ASSERT_TRUE(assembler.Add(LogKey("d", 7, 0), first[0]).ok());
    EXPECT_TRUE(absl::IsDataLoss(assembler.Add(LogKey("d", 7, 2), first[2])));  // part 1 missing
  }
  {
    BatchAssembler assembler("d");
    ASSERT_TRUE(assembler.Add(LogKey("d", 7, 0), first[0]).ok());
    // batch 7 left incomplete before batch 8
    EXPECT_TRUE(absl::IsDataLoss(assembler.Add(LogKey("d", 8, 0), second[0])));
  }
  {
    BatchAssembler assembler("d");
    EXPECT_TRUE(absl::IsDataLoss(assembler.Add(LogKey("d", 7, 1), first[1])));  // starts mid-batch
    EXPECT_TRUE(absl::IsDataLoss(assembler.Add(LogKey("e", 8, 0), second[0])));
    EXPECT_TRUE(absl::IsDataLoss(assembler.Add(LogKey("d", 8, 0), "not a chunk")));
    EXPECT_TRUE(absl::IsDataLoss(assembler.Add(LogKey("d", 9, 0), second[0])));  // batch 8's
    EXPECT_TRUE(assembler.TakeComplete().empty());
  }
}

}  // namespace
}  // namespace admitd::ha
