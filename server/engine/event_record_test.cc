// EventRecord's message and wire form: EncodeEvent writes what protobuf's serializer writes for
// ToEvent's message, and FromEvent keeps every field ToEvent sets.
#include "server/engine/event_record.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace admitd::engine {
namespace {

EventRecord Admitted() {
  EventRecord r;
  r.reason = "Admitted";
  r.action = "Admitted";
  r.note = "Admitted by ClusterQueue cq, wait time since reservation was 0s";
  r.kind = "Workload";
  r.namespace_ = "ns";
  r.name = "a";
  r.uid = "00000000-0000-4000-8000-000000000001";
  r.reporting_controller = "kueue-admission";
  r.cluster_queue = "cq";
  r.time = absl::FromUnixSeconds(1700000000) + absl::Nanoseconds(250);
  return r;
}

TEST(EventRecordTest, ToEventSetsEveryField) {
  EventRecord r = Admitted();
  r.warning = true;
  r.cluster = "c1";
  r.user = "user alice";
  const v1::Event e = ToEvent(r);
  EXPECT_EQ(e.regarding().api_version(), "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(e.regarding().kind(), "Workload");
  EXPECT_EQ(e.regarding().namespace_(), "ns");
  EXPECT_EQ(e.regarding().name(), "a");
  EXPECT_EQ(e.regarding().uid(), "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(e.type(), "Warning");
  EXPECT_EQ(e.reason(), "Admitted");
  EXPECT_EQ(e.action(), "Admitted");
  EXPECT_EQ(e.note(), r.note);
  EXPECT_EQ(e.event_time().seconds(), 1700000000);
  EXPECT_EQ(e.event_time().nanos(), 250);
  EXPECT_EQ(e.reporting_controller(), "kueue-admission");
  EXPECT_EQ(e.cluster_queue(), "cq");
  EXPECT_EQ(e.cluster(), "c1");
  EXPECT_EQ(e.user(), "user alice");
  EXPECT_EQ(ToEvent(Admitted()).type(), "Normal");
}

TEST(EventRecordTest, EncodeEventIsTheMessagesEncoding) {
  std::vector<EventRecord> records;
  records.push_back(Admitted());
  records.push_back(EventRecord{});  // every field empty, time zero
  EventRecord whole = Admitted();
  whole.warning = true;
  whole.cluster = "c1";
  whole.user = "certificate shim-c1";
  whole.time = absl::FromUnixSeconds(5);  // no nanoseconds
  records.push_back(whole);
  EventRecord long_note = Admitted();
  long_note.note = std::string(1024, 'x');  // a length of two varint bytes
  long_note.time = absl::UnixEpoch() + absl::Milliseconds(1);  // nanoseconds only
  records.push_back(long_note);
  EventRecord before_epoch = Admitted();
  before_epoch.time = absl::FromUnixSeconds(-3) - absl::Nanoseconds(7);
  records.push_back(before_epoch);
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string encoded = EncodeEvent(records[i]);
    EXPECT_EQ(encoded, ToEvent(records[i]).SerializeAsString()) << "record " << i;
    v1::Event parsed;
    ASSERT_TRUE(parsed.ParseFromString(encoded)) << "record " << i;
    EXPECT_EQ(parsed.SerializeAsString(), ToEvent(records[i]).SerializeAsString());
  }
}

TEST(EventRecordTest, FromEventKeepsWhatToEventSets) {
  EventRecord r = Admitted();
  r.warning = true;
  r.cluster = "c1";
  r.user = "anonymous";
  const EventRecord back = FromEvent(ToEvent(r));
  EXPECT_EQ(EncodeEvent(back), EncodeEvent(r));
  EXPECT_TRUE(back.warning);
  EXPECT_EQ(back.time, r.time);
}

}  // namespace
}  // namespace admitd::engine
