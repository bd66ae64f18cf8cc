#include "server/ha/log_batch.h"

#include <algorithm>
#include <optional>
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

  absl::StatusOr<LogEntry> entry = DecodeBatch(EncodeBatch(batch, /*previous=*/40));
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->previous, std::optional<uint64_t>(40));
  const store::Batch* again = &entry->batch;
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
  absl::StatusOr<LogEntry> garbage = DecodeBatch(std::string("\xff\xff\xff", 3));
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
  std::vector<std::string> chunks = EncodeChunks(batch, 6, 1000, /*compress=*/false);
  ASSERT_EQ(chunks.size(), 3u);  // 2,500 bytes of value and a few of framing
  EXPECT_EQ(EncodeChunks(batch, 6, 1 << 20, /*compress=*/false).size(), 1u);

  BatchAssembler assembler("d");
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    EXPECT_TRUE(assembler.TakeComplete().empty());
    ASSERT_TRUE(assembler.Add(LogKey("d", 7, i), chunks[i]).ok());
    EXPECT_EQ(assembler.incomplete_revision(), i + 1 < chunks.size() ? 7u : 0u);
  }
  std::vector<LogEntry> entries = assembler.TakeComplete();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].previous, std::optional<uint64_t>(6));
  EXPECT_EQ(entries[0].batch.revision, 7u);
  ASSERT_EQ(entries[0].batch.writes.size(), 1u);
  EXPECT_EQ(entries[0].batch.writes[0].value, batch.writes[0].value);
  EXPECT_EQ(entries[0].batch.events[0].revision, 7u);
}

TEST(LogBatchTest, AMissingPartOrAForeignKeyIsDataLoss) {
  std::vector<std::string> first = EncodeChunks(Big(7, 2500), 6, 1000, /*compress=*/false);
  std::vector<std::string> second = EncodeChunks(Big(8, 10), 7, 1000, /*compress=*/false);
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

// A batch of similar Workloads, as the sequencer commits them: each object is both a write and,
// inside its event, logged.
store::Batch Similar(uint64_t revision, int objects) {
  store::Batch batch;
  batch.revision = revision;
  for (int i = 0; i < objects; ++i) {
    const std::string object = absl::StrCat(
        "{metadata:{namespace:team-a,name:job-", i, ",labels:{kueue.x-k8s.io/queue-name:main}},",
        "spec:{podSets:[{name:main,count:4,requests:{cpu:1,memory:4Gi}}]}}");
    batch.writes.push_back({admitd::v1::OBJECT_KIND_WORKLOAD, absl::StrCat("team-a/job-", i),
                            object, false});
    batch.events.push_back({revision - objects + 1 + i, absl::StrCat("ADDED ", object)});
  }
  return batch;
}

TEST(LogBatchTest, ABatchOfSimilarObjectsIsCompressedAndComesBackWhole) {
  const store::Batch batch = Similar(100, 50);
  const std::vector<std::string> plain = EncodeChunks(batch, 50, 1 << 20, /*compress=*/false);
  const std::vector<std::string> packed = EncodeChunks(batch, 50, 1 << 20);
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_LT(packed[0].size() * 5, plain[0].size()) << packed[0].size() << " vs " << plain[0].size();

  BatchAssembler assembler("d");
  ASSERT_TRUE(assembler.Add(LogKey("d", 100), packed[0]).ok());
  std::vector<LogEntry> entries = assembler.TakeComplete();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(EncodeBatch(entries[0].batch), EncodeBatch(batch));
  EXPECT_EQ(entries[0].previous, std::optional<uint64_t>(50));
}

TEST(LogBatchTest, ACompressedBatchCutIntoChunksComesBackWhole) {
  const store::Batch batch = Similar(500, 400);
  const std::vector<std::string> chunks = EncodeChunks(batch, std::nullopt, 256);
  ASSERT_GT(chunks.size(), 1u);
  BatchAssembler assembler("d");
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    ASSERT_TRUE(assembler.Add(LogKey("d", 500, i), chunks[i]).ok());
  }
  std::vector<LogEntry> entries = assembler.TakeComplete();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(EncodeBatch(entries[0].batch), EncodeBatch(batch));
  EXPECT_FALSE(entries[0].previous.has_value());  // an entry that does not name it
}

TEST(LogBatchTest, ADamagedCompressedBatchIsDataLoss) {
  std::vector<std::string> chunks = EncodeChunks(Similar(100, 50), 50, 1 << 20);
  ASSERT_EQ(chunks.size(), 1u);
  std::string damaged = chunks[0];
  damaged[damaged.size() - 8] ^= 0x5a;  // inside the frame, past its header
  BatchAssembler assembler("d");
  absl::Status added = assembler.Add(LogKey("d", 100), damaged);
  EXPECT_TRUE(absl::IsDataLoss(added)) << added;
  EXPECT_TRUE(assembler.TakeComplete().empty());
}

}  // namespace
}  // namespace admitd::ha
