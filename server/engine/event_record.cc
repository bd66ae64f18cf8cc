#include "server/engine/event_record.h"

#include <cstdint>
#include <initializer_list>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/engine/engine_impl.h"  // ToProtoTime, FromProto

namespace admitd::engine {
namespace {

using google::protobuf::io::CodedOutputStream;

const char* TypeOf(const EventRecord& r) { return r.warning ? "Warning" : "Normal"; }

// Wire types (protobuf's encoding): varint and length-delimited.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

constexpr uint32_t Tag(int field, uint32_t wire_type) {
  return (static_cast<uint32_t>(field) << 3) | wire_type;
}

// The encoded size of a string field, omitted when empty (proto3).
size_t StringFieldSize(int field, const std::string& value) {
  if (value.empty()) return 0;
  return CodedOutputStream::VarintSize32(Tag(field, kLengthDelimited)) +
         CodedOutputStream::VarintSize32(static_cast<uint32_t>(value.size())) + value.size();
}

void WriteStringField(int field, const std::string& value, CodedOutputStream* out) {
  if (value.empty()) return;
  out->WriteTag(Tag(field, kLengthDelimited));
  out->WriteVarint32(static_cast<uint32_t>(value.size()));
  out->WriteString(value);
}

// The encoded size of a message field of `size` bytes (written even when empty).
size_t MessageFieldSize(int field, size_t size) {
  return CodedOutputStream::VarintSize32(Tag(field, kLengthDelimited)) +
         CodedOutputStream::VarintSize32(static_cast<uint32_t>(size)) + size;
}

void WriteMessageHeader(int field, size_t size, CodedOutputStream* out) {
  out->WriteTag(Tag(field, kLengthDelimited));
  out->WriteVarint32(static_cast<uint32_t>(size));
}

}  // namespace

v1::Event ToEvent(const EventRecord& r) {
  v1::Event event;
  v1::ObjectReference* regarding = event.mutable_regarding();
  regarding->set_api_version(kEventRegardingApiVersion);
  regarding->set_kind(r.kind);
  regarding->set_namespace_(r.namespace_);
  regarding->set_name(r.name);
  regarding->set_uid(r.uid);
  event.set_type(TypeOf(r));
  event.set_reason(r.reason);
  event.set_action(r.action);
  event.set_note(r.note);
  *event.mutable_event_time() = ToProtoTime(r.time);
  event.set_reporting_controller(r.reporting_controller);
  event.set_cluster_queue(r.cluster_queue);
  event.set_cluster(r.cluster);
  event.set_user(r.user);
  return event;
}

std::string EncodeEvent(const EventRecord& r) {
  using E = v1::Event;
  using R = v1::ObjectReference;
  using T = google::protobuf::Timestamp;
  static const std::string api_version = kEventRegardingApiVersion;
  const std::string type = TypeOf(r);
  const google::protobuf::Timestamp time = ToProtoTime(r.time);
  const int64_t seconds = time.seconds();
  const int32_t nanos = time.nanos();

  // Fields in field-number order, empty ones left out: what protobuf's serializer writes.
  const size_t regarding_size = StringFieldSize(R::kApiVersionFieldNumber, api_version) +
                                StringFieldSize(R::kKindFieldNumber, r.kind) +
                                StringFieldSize(R::kNamespaceFieldNumber, r.namespace_) +
                                StringFieldSize(R::kNameFieldNumber, r.name) +
                                StringFieldSize(R::kUidFieldNumber, r.uid);
  size_t time_size = 0;
  if (seconds != 0) {
    time_size += CodedOutputStream::VarintSize32(Tag(T::kSecondsFieldNumber, kVarint)) +
                 CodedOutputStream::VarintSize64(static_cast<uint64_t>(seconds));
  }
  if (nanos != 0) {
    time_size += CodedOutputStream::VarintSize32(Tag(T::kNanosFieldNumber, kVarint)) +
                 CodedOutputStream::VarintSize32SignExtended(nanos);
  }

  const size_t size = MessageFieldSize(E::kRegardingFieldNumber, regarding_size) +
                      StringFieldSize(E::kTypeFieldNumber, type) +
                      StringFieldSize(E::kReasonFieldNumber, r.reason) +
                      StringFieldSize(E::kActionFieldNumber, r.action) +
                      StringFieldSize(E::kNoteFieldNumber, r.note) +
                      MessageFieldSize(E::kEventTimeFieldNumber, time_size) +
                      StringFieldSize(E::kReportingControllerFieldNumber, r.reporting_controller) +
                      StringFieldSize(E::kClusterQueueFieldNumber, r.cluster_queue) +
                      StringFieldSize(E::kClusterFieldNumber, r.cluster) +
                      StringFieldSize(E::kUserFieldNumber, r.user);
  std::string out;
  out.reserve(size);  // the stream below writes into the reserved room
  {
    google::protobuf::io::StringOutputStream stream(&out);
    CodedOutputStream os(&stream);
    WriteMessageHeader(E::kRegardingFieldNumber, regarding_size, &os);
    WriteStringField(R::kApiVersionFieldNumber, api_version, &os);
    WriteStringField(R::kKindFieldNumber, r.kind, &os);
    WriteStringField(R::kNamespaceFieldNumber, r.namespace_, &os);
    WriteStringField(R::kNameFieldNumber, r.name, &os);
    WriteStringField(R::kUidFieldNumber, r.uid, &os);
    WriteStringField(E::kTypeFieldNumber, type, &os);
    WriteStringField(E::kReasonFieldNumber, r.reason, &os);
    WriteStringField(E::kActionFieldNumber, r.action, &os);
    WriteStringField(E::kNoteFieldNumber, r.note, &os);
    WriteMessageHeader(E::kEventTimeFieldNumber, time_size, &os);
    if (seconds != 0) {
      os.WriteTag(Tag(T::kSecondsFieldNumber, kVarint));
      os.WriteVarint64(static_cast<uint64_t>(seconds));
    }
    if (nanos != 0) {
      os.WriteTag(Tag(T::kNanosFieldNumber, kVarint));
      os.WriteVarint32SignExtended(nanos);
    }
    WriteStringField(E::kReportingControllerFieldNumber, r.reporting_controller, &os);
    WriteStringField(E::kClusterQueueFieldNumber, r.cluster_queue, &os);
    WriteStringField(E::kClusterFieldNumber, r.cluster, &os);
    WriteStringField(E::kUserFieldNumber, r.user, &os);
  }
  return out;
}

EventRecord FromEvent(const v1::Event& event) {
  EventRecord r;
  r.warning = event.type() == "Warning";
  r.reason = event.reason();
  r.action = event.action();
  r.note = event.note();
  r.kind = event.regarding().kind();
  r.namespace_ = event.regarding().namespace_();
  r.name = event.regarding().name();
  r.uid = event.regarding().uid();
  r.reporting_controller = event.reporting_controller();
  r.cluster_queue = event.cluster_queue();
  r.cluster = event.cluster();
  r.user = event.user();
  r.time = FromProto(event.event_time());
  return r;
}

}  // namespace admitd::engine
