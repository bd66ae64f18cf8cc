#include "common/trace/tracer.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>

#include "common/trace/testing/fake_collector.h"
#include "gtest/gtest.h"

namespace admitd::tracing {
namespace {

using OtlpSpan = FakeCollector::OtlpSpan;

TracerOptions To(const FakeCollector& collector) {
  TracerOptions options;
  options.endpoint = collector.address();
  options.flush_interval = absl::Milliseconds(50);
  options.service_name = "admitd-test";
  return options;
}

std::string Bytes(const TraceId& id) { return std::string(id.begin(), id.end()); }
std::string Bytes(const SpanId& id) { return std::string(id.begin(), id.end()); }

const OtlpSpan* Named(const std::vector<OtlpSpan>& spans, const std::string& name) {
  for (const OtlpSpan& s : spans) {
    if (s.name() == name) return &s;
  }
  return nullptr;
}

TEST(TracerTest, ExportsSpansWithTheirParentsAttributesLinksAndStatus) {
  FakeCollector collector;
  std::unique_ptr<Tracer> tracer = Tracer::Create(To(collector));
  ASSERT_TRUE(tracer->enabled());
  const SpanContext remote =
      *ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  Span parent = tracer->StartSpan("Submit", {.kind = SpanKind::kServer, .parent = &remote});
  Span child = tracer->StartSpan("apply", {.parent = &parent.context()});
  child.SetAttribute("commands", int64_t{3});
  child.SetAttribute("workload", std::string("ns/a"));
  child.AddLink(remote, {{"why", std::string("served")}});
  child.AddEvent("fsync");
  child.SetStatus(StatusCode::kError, "disk full");
  child.End();
  parent.End();
  ASSERT_TRUE(collector.WaitFor([](const auto& spans) { return spans.size() == 2; }));
  const std::vector<OtlpSpan> spans = collector.spans();
  const OtlpSpan* submit = Named(spans, "Submit");
  const OtlpSpan* apply = Named(spans, "apply");
  ASSERT_NE(submit, nullptr);
  ASSERT_NE(apply, nullptr);
  // The client's traceparent is the server span's parent, and the trace goes on in the child.
  EXPECT_EQ(submit->trace_id(), Bytes(remote.trace_id));
  EXPECT_EQ(submit->parent_span_id(), Bytes(remote.span_id));
  EXPECT_EQ(submit->kind(), opentelemetry::proto::trace::v1::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(apply->trace_id(), Bytes(remote.trace_id));
  EXPECT_EQ(apply->parent_span_id(), submit->span_id());
  EXPECT_LE(submit->start_time_unix_nano(), apply->start_time_unix_nano());
  EXPECT_GE(submit->end_time_unix_nano(), apply->end_time_unix_nano());
  ASSERT_EQ(apply->attributes_size(), 2);
  EXPECT_EQ(apply->attributes(0).key(), "commands");
  EXPECT_EQ(apply->attributes(0).value().int_value(), 3);
  EXPECT_EQ(apply->attributes(1).value().string_value(), "ns/a");
  ASSERT_EQ(apply->links_size(), 1);
  EXPECT_EQ(apply->links(0).span_id(), Bytes(remote.span_id));
  EXPECT_EQ(apply->events(0).name(), "fsync");
  EXPECT_EQ(apply->status().code(), opentelemetry::proto::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(apply->status().message(), "disk full");
  EXPECT_EQ(collector.service_names().front(), "admitd-test");
  tracer->Shutdown(absl::Seconds(5));  // the export call has returned
  EXPECT_EQ(tracer->spans_exported(), 2u);
}

TEST(TracerTest, RootsWithChosenIdsAndUnsampledParentsAreFollowed) {
  FakeCollector collector;
  std::unique_ptr<Tracer> tracer = Tracer::Create(To(collector));
  const TraceId trace = TraceIdFromKey("workload/u1");
  const SpanId root_id = SpanIdFromKey("workload/u1");
  tracer->StartSpan("Workload ns/a", {.trace_id = trace, .span_id = root_id}).End();
  SpanContext root{trace, root_id, true, "", false};
  tracer->StartSpan("Admitted", {.parent = &root}).End();
  // A parent that was not sampled: its children are not recorded either.
  SpanContext unsampled = root;
  unsampled.sampled = false;
  Span dropped = tracer->StartSpan("not recorded", {.parent = &unsampled});
  EXPECT_FALSE(dropped.recording());
  EXPECT_EQ(dropped.context().trace_id, trace);
  dropped.End();
  ASSERT_TRUE(collector.WaitFor([](const auto& spans) { return spans.size() >= 2; }));
  tracer->Shutdown(absl::Seconds(5));
  const std::vector<OtlpSpan> spans = collector.spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(Named(spans, "Workload ns/a")->span_id(), Bytes(root_id));
  EXPECT_EQ(Named(spans, "Workload ns/a")->parent_span_id(), "");
  EXPECT_EQ(Named(spans, "Admitted")->parent_span_id(), Bytes(root_id));
  EXPECT_EQ(Named(spans, "Admitted")->trace_id(), Bytes(trace));
}

TEST(TracerTest, TheRatioSamplesRootsByTraceId) {
  FakeCollector collector;
  TracerOptions options = To(collector);
  options.sample_ratio = 0.1;
  std::unique_ptr<Tracer> tracer = Tracer::Create(options);
  int sampled = 0;
  for (int i = 0; i < 10000; ++i) sampled += tracer->Sampled(NewTraceId()) ? 1 : 0;
  EXPECT_GT(sampled, 800);
  EXPECT_LT(sampled, 1200);
  // The decision is a function of the trace id.
  const TraceId id = TraceIdFromKey("x");
  for (int i = 0; i < 10; ++i) EXPECT_EQ(tracer->Sampled(id), tracer->Sampled(id));
  options.sample_ratio = 0;
  EXPECT_FALSE(Tracer::Create(options)->Sampled(NewTraceId()));
  options.sample_ratio = 1;
  EXPECT_TRUE(Tracer::Create(options)->Sampled(NewTraceId()));
}

TEST(TracerTest, UnsampledSpansAreNeverExported) {
  FakeCollector collector;
  TracerOptions options = To(collector);
  options.sample_ratio = 0;
  std::unique_ptr<Tracer> tracer = Tracer::Create(options);
  for (int i = 0; i < 100; ++i) {
    Span root = tracer->StartSpan("unsampled root");
    // Not recorded, but it still has a context to hand on, marked not sampled.
    ASSERT_FALSE(root.recording());
    ASSERT_TRUE(root.context().IsValid());
    ASSERT_FALSE(root.context().sampled);
    root.SetAttribute("ignored", int64_t{1});
    Span child = tracer->StartSpan("unsampled child", {.parent = &root.context()});
    ASSERT_FALSE(child.recording());
    ASSERT_EQ(child.context().trace_id, root.context().trace_id);
  }
  // A span forced on is exported; once it has arrived nothing else is in flight.
  tracer->StartSpan("forced", {.sampled = true}).End();
  ASSERT_TRUE(collector.WaitFor([](const auto& spans) { return !spans.empty(); }));
  tracer->Shutdown(absl::Seconds(5));
  const std::vector<OtlpSpan> spans = collector.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name(), "forced");
  EXPECT_EQ(tracer->spans_exported(), 1u);
  EXPECT_EQ(tracer->spans_dropped(), 0u);
}

TEST(TracerTest, TracestateGoesOnToChildrenAndSpansKeepExplicitTimes) {
  FakeCollector collector;
  std::unique_ptr<Tracer> tracer = Tracer::Create(To(collector));
  const SpanContext remote = *ParseTraceparent(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7");
  const absl::Time start = absl::FromUnixSeconds(1700000000);
  Span span = tracer->StartSpan("after the fact", {.parent = &remote, .start = start});
  EXPECT_EQ(span.context().trace_state, "rojo=00f067aa0ba902b7");
  // Moving a span moves the recording: it is exported once.
  Span moved = std::move(span);
  span.End();  // the moved-from span is empty: this does nothing
  moved.End(start + absl::Milliseconds(250));
  moved.End();  // idempotent
  ASSERT_TRUE(collector.WaitFor([](const auto& spans) { return !spans.empty(); }));
  tracer->Shutdown(absl::Seconds(5));
  const std::vector<OtlpSpan> spans = collector.spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].trace_state(), "rojo=00f067aa0ba902b7");
  EXPECT_EQ(spans[0].start_time_unix_nano(), uint64_t{1700000000} * 1000000000);
  EXPECT_EQ(spans[0].end_time_unix_nano(), uint64_t{1700000000} * 1000000000 + 250000000);
  // Sampled, with a parent from another process.
  EXPECT_EQ(spans[0].flags(), 0x301u);
  EXPECT_EQ(tracer->spans_exported(), 1u);
}

TEST(TracerTest, TheRequestCarriesTheResourceScopeAndEveryValueType) {
  TracerOptions options;
  options.service_name = "admitd-shim";
  options.resource_attributes = {{"service.version", "1.2.3"}, {"service.instance.id", "pod-0"}};
  auto span = std::make_unique<SpanData>();
  span->context = {TraceIdFromKey("t"), SpanIdFromKey("s"), true, "", false};
  span->name = "values";
  span->kind = SpanKind::kClient;
  span->start = absl::FromUnixNanos(10);
  span->end = absl::FromUnixNanos(20);
  span->attributes = {{"s", std::string("x")}, {"i", int64_t{-4}}, {"d", 0.5}, {"b", true}};
  span->events.push_back({"retry", absl::FromUnixNanos(15), {{"attempt", int64_t{2}}}});
  SpanContext linked{TraceIdFromKey("other"), SpanIdFromKey("other"), false, "k=v", true};
  span->links.push_back({linked, {{"why", std::string("preemptor")}}});
  span->status = StatusCode::kOk;
  std::vector<std::unique_ptr<SpanData>> spans;
  spans.push_back(std::move(span));

  const auto request = ToOtlp(spans, options);
  ASSERT_EQ(request.resource_spans_size(), 1);
  const auto& resource = request.resource_spans(0).resource();
  ASSERT_EQ(resource.attributes_size(), 3);
  EXPECT_EQ(resource.attributes(0).key(), "service.name");
  EXPECT_EQ(resource.attributes(0).value().string_value(), "admitd-shim");
  EXPECT_EQ(resource.attributes(1).key(), "service.version");
  EXPECT_EQ(resource.attributes(1).value().string_value(), "1.2.3");
  EXPECT_EQ(resource.attributes(2).value().string_value(), "pod-0");
  ASSERT_EQ(request.resource_spans(0).scope_spans_size(), 1);
  const auto& scope = request.resource_spans(0).scope_spans(0);
  EXPECT_EQ(scope.scope().name(), "admitd");
  ASSERT_EQ(scope.spans_size(), 1);
  const OtlpSpan& out = scope.spans(0);
  EXPECT_EQ(out.trace_id(), Bytes(TraceIdFromKey("t")));
  EXPECT_EQ(out.span_id(), Bytes(SpanIdFromKey("s")));
  EXPECT_EQ(out.parent_span_id(), "");  // a root
  EXPECT_EQ(out.flags(), 0x101u);       // sampled, parent not remote
  EXPECT_EQ(out.kind(), opentelemetry::proto::trace::v1::Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(out.start_time_unix_nano(), 10u);
  EXPECT_EQ(out.end_time_unix_nano(), 20u);
  ASSERT_EQ(out.attributes_size(), 4);
  EXPECT_EQ(out.attributes(0).value().string_value(), "x");
  EXPECT_EQ(out.attributes(1).value().int_value(), -4);
  EXPECT_EQ(out.attributes(2).value().double_value(), 0.5);
  EXPECT_TRUE(out.attributes(3).value().bool_value());
  EXPECT_EQ(out.attributes(3).value().value_case(),
            opentelemetry::proto::common::v1::AnyValue::kBoolValue);
  ASSERT_EQ(out.events_size(), 1);
  EXPECT_EQ(out.events(0).time_unix_nano(), 15u);
  EXPECT_EQ(out.events(0).attributes(0).value().int_value(), 2);
  ASSERT_EQ(out.links_size(), 1);
  EXPECT_EQ(out.links(0).trace_id(), Bytes(linked.trace_id));
  EXPECT_EQ(out.links(0).trace_state(), "k=v");
  EXPECT_EQ(out.links(0).flags(), 0x300u);  // not sampled, remote
  EXPECT_EQ(out.links(0).attributes(0).value().string_value(), "preemptor");
  EXPECT_EQ(out.status().code(), opentelemetry::proto::trace::v1::Status::STATUS_CODE_OK);
}

// An exporter that fails every request, counting them.
class FailingExporter final : public Exporter {
 public:
  explicit FailingExporter(std::atomic<int>* calls) : calls_(calls) {}
  absl::Status Export(
      const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest&) override {
    calls_->fetch_add(1);
    return absl::UnavailableError("collector down");
  }

 private:
  std::atomic<int>* const calls_;
};

TEST(TracerTest, FailedExportsAreCountedAndNotRetried) {
  std::atomic<int> calls{0};
  TracerOptions options;
  options.max_batch = 4;
  options.flush_interval = absl::Seconds(60);  // full batches and Shutdown send
  std::unique_ptr<Tracer> tracer =
      Tracer::Create(options, std::make_unique<FailingExporter>(&calls));
  ASSERT_TRUE(tracer->enabled());
  for (int i = 0; i < 10; ++i) tracer->StartSpan("s").End();
  tracer->Shutdown(absl::Seconds(5));
  // 4 + 4 + 2 spans, one request each, none sent twice.
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(tracer->export_failures(), 3u);
  EXPECT_EQ(tracer->spans_dropped(), 10u);
  EXPECT_EQ(tracer->spans_exported(), 0u);
}

TEST(TracerTest, OffWithoutACollector) {
  std::unique_ptr<Tracer> tracer = Tracer::Create(TracerOptions{});
  EXPECT_FALSE(tracer->enabled());
  Span span = tracer->StartSpan("x");
  EXPECT_FALSE(span.recording());
  EXPECT_FALSE(span.context().IsValid());
}

// A port nobody listens on.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(TracerTest, ACollectorThatIsDownCostsDroppedSpansNotMemory) {
  TracerOptions options;
  options.endpoint = "127.0.0.1:" + std::to_string(ClosedPort());
  options.queue_capacity = 100;
  options.max_batch = 10;
  options.flush_interval = absl::Milliseconds(10);
  options.export_timeout = absl::Milliseconds(200);
  std::unique_ptr<Tracer> tracer = Tracer::Create(options);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 5000; ++i) {
    tracer->StartSpan("s").End();
    ASSERT_LE(tracer->queued(), options.queue_capacity);
  }
  // Ending spans never waited for the collector.
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_GE(tracer->spans_dropped(), 5000u - options.queue_capacity - options.max_batch);
  tracer->Shutdown(absl::Milliseconds(500));
  EXPECT_EQ(tracer->spans_exported(), 0u);
  EXPECT_EQ(tracer->spans_dropped(), 5000u);
  EXPECT_GE(tracer->export_failures(), 1u);
}

TEST(TracerTest, ShutdownExportsWhatIsQueued) {
  FakeCollector collector;
  TracerOptions options = To(collector);
  options.flush_interval = absl::Seconds(60);  // only Shutdown flushes
  std::unique_ptr<Tracer> tracer = Tracer::Create(options);
  for (int i = 0; i < 7; ++i) tracer->StartSpan("s").End();
  tracer->Shutdown(absl::Seconds(10));
  EXPECT_EQ(collector.spans().size(), 7u);
  EXPECT_EQ(tracer->spans_exported(), 7u);
  // After shutdown, spans are dropped.
  tracer->StartSpan("late").End();
  EXPECT_EQ(tracer->spans_dropped(), 1u);
}

}  // namespace
}  // namespace admitd::tracing
