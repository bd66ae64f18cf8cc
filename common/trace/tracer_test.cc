#include "common/trace/tracer.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <set>

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
