// DecodeAhead: every encoding decoded in order, whatever the batch sizes, reusing the messages
// handed back; an encoding that does not parse, and an engine restored through it.
#include "server/decode_ahead.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/engine/engine.h"

namespace admitd {
namespace {

v1::Workload MakeWorkload(int i) {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_name(absl::StrCat("w", i));
  wl.mutable_spec()->set_queue_name("lq");
  wl.mutable_spec()->set_priority(i);
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(1 + i % 4);
  (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
        ->mutable_requests())["cpu"] = absl::StrCat(1 + i % 3);
  return wl;
}

std::vector<std::string> Encodings(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(MakeWorkload(i).SerializeAsString());
  return out;
}

std::vector<absl::string_view> Views(const std::vector<std::string>& encodings) {
  return std::vector<absl::string_view>(encodings.begin(), encodings.end());
}

struct Shape {
  size_t batch;
  size_t ahead;
};

class DecodeAheadTest : public ::testing::TestWithParam<Shape> {};
INSTANTIATE_TEST_SUITE_P(Batches, DecodeAheadTest,
                         ::testing::Values(Shape{1, 1}, Shape{3, 2}, Shape{256, 4}),
                         [](const auto& info) {
                           return absl::StrCat("Batch", info.param.batch, "Ahead",
                                               info.param.ahead);
                         });

TEST_P(DecodeAheadTest, DecodesEveryEncodingInOrderReusingRecycledMessages) {
  const std::vector<std::string> encodings = Encodings(50);
  DecodeAhead decoder(GetParam().batch, GetParam().ahead);
  decoder.Start(Views(encodings));
  for (int i = 0; i < 50; ++i) {
    engine::DecodedWorkload decoded = decoder.Next();
    ASSERT_NE(decoded.workload, nullptr) << i;
    // A recycled message decoded into again holds nothing of the workload it held before.
    EXPECT_EQ(decoded.workload->SerializeAsString(), encodings[i]) << i;
    ASSERT_EQ(decoded.pod_sets.size(), 1u);
    EXPECT_EQ(decoded.pod_sets[0].count, 1 + i % 4);
    EXPECT_EQ(decoded.pod_sets[0].per_pod.at("cpu"), 1000 * (1 + i % 3));  // millis
    EXPECT_EQ(decoded.pod_sets[0].pod, &decoded.workload->spec().pod_sets(0).template_().spec());
    decoder.Recycle(std::move(decoded.workload));
  }
  EXPECT_EQ(decoder.Next().workload, nullptr);  // past the end
}

TEST(DecodeAheadTest, AnEncodingThatDoesNotParseComesBackWithoutAWorkload) {
  std::vector<std::string> encodings = Encodings(5);
  encodings[2] = "\xff\xff\xff";
  DecodeAhead decoder(2, 1);
  decoder.Start(Views(encodings));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(decoder.Next().workload == nullptr, i == 2) << i;
  }
}

TEST(DecodeAheadTest, StopsItsThreadWhenDestroyedHalfWay) {
  const std::vector<std::string> encodings = Encodings(1000);
  DecodeAhead decoder(4, 2);
  decoder.Start(Views(encodings));
  ASSERT_NE(decoder.Next().workload, nullptr);
  // The destructor ends the test: it returns although 999 encodings were never asked for.
}

TEST(DecodeAheadTest, AnEmptyListStartsNothing) {
  DecodeAhead decoder;
  decoder.Start({});
  EXPECT_EQ(decoder.Next().workload, nullptr);
}

// An engine holding `workloads` pending (no queues: each waits for its LocalQueue), restored
// from their encodings through `decoder`.
absl::Status RestoreEncoded(const std::vector<std::string>& encodings, engine::Engine* engine,
                            engine::WorkloadDecoder* decoder) {
  for (size_t i = 0; i < encodings.size(); ++i) {
    v1::Workload wl;
    const std::string key = wl.ParseFromString(encodings[i])
                                ? absl::StrCat(wl.metadata().namespace_(), "/",
                                               wl.metadata().name())
                                : absl::StrCat("ns/broken", i);
    if (absl::Status s = engine->RestoreEncoded(key, encodings[i]); !s.ok()) return s;
  }
  return engine->FinishRestore(7, decoder);
}

TEST(DecodeAheadTest, AnEngineRestoredThroughItEqualsOneThatDecodedInPlace) {
  const std::vector<std::string> encodings = Encodings(300);
  engine::Engine in_place, ahead;
  ASSERT_TRUE(RestoreEncoded(encodings, &in_place, nullptr).ok());
  DecodeAhead decoder(16, 2);
  ASSERT_TRUE(RestoreEncoded(encodings, &ahead, &decoder).ok());
  const v1::ListWorkloadsRequest all;
  const std::string listed = ahead.ListWorkloads(all)->SerializeAsString();
  EXPECT_EQ(listed, in_place.ListWorkloads(all)->SerializeAsString());
  EXPECT_EQ(ahead.ListWorkloads(all)->workloads_size(), 300);
}

TEST(DecodeAheadTest, AnEngineRestoredThroughItReportsAWorkloadThatDoesNotParse) {
  std::vector<std::string> encodings = Encodings(100);
  encodings[40] = "\xff\xff\xff";
  engine::Engine engine;
  DecodeAhead decoder(8, 2);
  const absl::Status s = RestoreEncoded(encodings, &engine, &decoder);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("ns/broken40"), std::string::npos) << s;
}

}  // namespace
}  // namespace admitd
