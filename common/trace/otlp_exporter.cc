// The OTLP encoding of spans and the OTLP/gRPC exporter.
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/trace/tracer.h"
#include "otlp/trace_service.grpc.pb.h"

namespace admitd::tracing {
namespace {

namespace otlp_common = opentelemetry::proto::common::v1;
namespace otlp_trace = opentelemetry::proto::trace::v1;
namespace otlp_collector = opentelemetry::proto::collector::trace::v1;

// Span.flags and Span.Link.flags: the W3C trace flags in bits 0-7, then whether the parent (of a
// span) or the linked span came from another process: bit 8 says the answer is known, bit 9 is it.
constexpr uint32_t kSampledFlag = 0x01;
constexpr uint32_t kHasIsRemoteFlag = 0x100;
constexpr uint32_t kIsRemoteFlag = 0x200;

uint32_t Flags(bool sampled, bool remote) {
  return (sampled ? kSampledFlag : 0) | kHasIsRemoteFlag | (remote ? kIsRemoteFlag : 0);
}

uint64_t UnixNanos(absl::Time t) { return static_cast<uint64_t>(absl::ToUnixNanos(t)); }

template <size_t N>
std::string Bytes(const std::array<uint8_t, N>& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), N);
}

void SetValue(const AttributeValue& v, otlp_common::AnyValue* out) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    out->set_string_value(*s);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out->set_int_value(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    out->set_double_value(*d);
  } else {
    out->set_bool_value(std::get<bool>(v));
  }
}

void AddAttributes(const Attributes& attributes,
                   google::protobuf::RepeatedPtrField<otlp_common::KeyValue>* out) {
  for (const auto& [key, value] : attributes) {
    otlp_common::KeyValue* kv = out->Add();
    kv->set_key(key);
    SetValue(value, kv->mutable_value());
  }
}

otlp_trace::Span::SpanKind KindOf(SpanKind kind) {
  switch (kind) {
    case SpanKind::kServer: return otlp_trace::Span::SPAN_KIND_SERVER;
    case SpanKind::kClient: return otlp_trace::Span::SPAN_KIND_CLIENT;
    case SpanKind::kProducer: return otlp_trace::Span::SPAN_KIND_PRODUCER;
    case SpanKind::kConsumer: return otlp_trace::Span::SPAN_KIND_CONSUMER;
    default: return otlp_trace::Span::SPAN_KIND_INTERNAL;
  }
}

class OtlpGrpcExporter final : public Exporter {
 public:
  OtlpGrpcExporter(const std::string& endpoint,
                   std::shared_ptr<grpc::ChannelCredentials> credentials, absl::Duration timeout)
      : stub_(otlp_collector::TraceService::NewStub(grpc::CreateChannel(
            endpoint, credentials ? credentials : grpc::InsecureChannelCredentials()))),
        timeout_(timeout) {}

  absl::Status Export(const otlp_collector::ExportTraceServiceRequest& request) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
    otlp_collector::ExportTraceServiceResponse response;
    const grpc::Status s = stub_->Export(&ctx, request, &response);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          absl::StrCat("OTLP export: ", s.error_message()));
    }
    return absl::OkStatus();
  }

 private:
  const std::unique_ptr<otlp_collector::TraceService::Stub> stub_;
  const absl::Duration timeout_;
};

}  // namespace

std::unique_ptr<Exporter> NewOtlpGrpcExporter(
    const std::string& endpoint, std::shared_ptr<grpc::ChannelCredentials> credentials,
    absl::Duration timeout) {
  return std::make_unique<OtlpGrpcExporter>(endpoint, std::move(credentials), timeout);
}

otlp_collector::ExportTraceServiceRequest ToOtlp(
    const std::vector<std::unique_ptr<SpanData>>& spans, const TracerOptions& options) {
  otlp_collector::ExportTraceServiceRequest request;
  otlp_trace::ResourceSpans* resource = request.add_resource_spans();
  Attributes resource_attributes = {{"service.name", options.service_name}};
  for (const auto& [key, value] : options.resource_attributes) {
    resource_attributes.emplace_back(key, value);
  }
  AddAttributes(resource_attributes, resource->mutable_resource()->mutable_attributes());
  otlp_trace::ScopeSpans* scope = resource->add_scope_spans();
  scope->mutable_scope()->set_name("admitd");
  for (const std::unique_ptr<SpanData>& s : spans) {
    otlp_trace::Span* out = scope->add_spans();
    out->set_trace_id(Bytes(s->context.trace_id));
    out->set_span_id(Bytes(s->context.span_id));
    out->set_trace_state(s->context.trace_state);
    if (IsValid(s->parent_span_id)) out->set_parent_span_id(Bytes(s->parent_span_id));
    out->set_flags(Flags(s->context.sampled, s->parent_remote));
    out->set_name(s->name);
    out->set_kind(KindOf(s->kind));
    out->set_start_time_unix_nano(UnixNanos(s->start));
    out->set_end_time_unix_nano(UnixNanos(s->end));
    AddAttributes(s->attributes, out->mutable_attributes());
    for (const SpanData::Event& e : s->events) {
      otlp_trace::Span::Event* event = out->add_events();
      event->set_time_unix_nano(UnixNanos(e.time));
      event->set_name(e.name);
      AddAttributes(e.attributes, event->mutable_attributes());
    }
    for (const SpanData::Link& l : s->links) {
      otlp_trace::Span::Link* link = out->add_links();
      link->set_trace_id(Bytes(l.context.trace_id));
      link->set_span_id(Bytes(l.context.span_id));
      link->set_trace_state(l.context.trace_state);
      link->set_flags(Flags(l.context.sampled, l.context.remote));
      AddAttributes(l.attributes, link->mutable_attributes());
    }
    if (s->status != StatusCode::kUnset) {
      out->mutable_status()->set_code(s->status == StatusCode::kOk
                                          ? otlp_trace::Status::STATUS_CODE_OK
                                          : otlp_trace::Status::STATUS_CODE_ERROR);
      out->mutable_status()->set_message(s->status_message);
    }
  }
  return request;
}

}  // namespace admitd::tracing
