// Tracer: records OpenTelemetry spans and exports them over OTLP/gRPC from a bounded queue on
// its own thread.
//
// A span is recorded only when sampled: parent-based, with a ratio for roots (see sampler.h: the
// decision is the same in every process that sees the trace id). An unsampled span costs a
// branch and its ids, and allocates nothing (but a copy of a tracestate it hands on): it keeps
// only its context, for propagation. Ending a sampled span moves it into the queue and never
// waits for I/O: when the queue is full the span is dropped and counted. The export thread sends
// up to `max_batch` spans per request, at least every `flush_interval`; a request that fails
// drops its spans (counted) and is not retried, so a collector that is down costs spans, never
// memory.
//
//   auto tracer = Tracer::Create({.endpoint = "localhost:4317", .sample_ratio = 0.1});
//   tracing::Span span = tracer->StartSpan("Submit", {.kind = SpanKind::kServer,
//                                                     .parent = &remote_parent});
//   span.SetAttribute("workload", "ns/name");
//   span.End();
//
// Thread safety: every Tracer method may be called from any thread. A Span belongs to one
// thread at a time.
#ifndef ADMITD_COMMON_TRACE_TRACER_H_
#define ADMITD_COMMON_TRACE_TRACER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/trace/sampler.h"
#include "common/trace/trace_context.h"
#include "otlp/trace_service.pb.h"

namespace admitd::tracing {

enum class SpanKind { kInternal, kServer, kClient, kProducer, kConsumer };
enum class StatusCode { kUnset, kOk, kError };

using AttributeValue = std::variant<std::string, int64_t, double, bool>;
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

// A finished span, as exported.
struct SpanData {
  SpanContext context;
  SpanId parent_span_id{};     // all zero for a root
  bool parent_remote = false;  // the parent came from another process (a traceparent)
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  absl::Time start;
  absl::Time end;
  Attributes attributes;
  struct Event {
    std::string name;
    absl::Time time;
    Attributes attributes;
  };
  std::vector<Event> events;
  struct Link {
    SpanContext context;
    Attributes attributes;
  };
  std::vector<Link> links;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;
};

// Where spans go: the OTLP/gRPC collector, or a test's fake.
class Exporter {
 public:
  virtual ~Exporter() = default;
  // Sends one request; called from the tracer's export thread only.
  virtual absl::Status Export(
      const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& request) = 0;
};

// An exporter to the OTLP/gRPC collector at `endpoint` (host:port); `credentials` null means
// plaintext. Each Export waits at most `timeout`.
std::unique_ptr<Exporter> NewOtlpGrpcExporter(
    const std::string& endpoint, std::shared_ptr<grpc::ChannelCredentials> credentials,
    absl::Duration timeout);

class Tracer;

// A span being recorded (or, when not sampled, only its context). Move-only; the destructor
// ends it.
class Span {
 public:
  Span() = default;
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span() { End(); }

  // True when the span is sampled and not ended: what is set on it is exported.
  bool recording() const { return data_ != nullptr; }
  // Its context (valid when the tracer is on, sampled or not): what children and outgoing
  // calls (traceparent) use.
  const SpanContext& context() const { return context_; }

  void SetAttribute(std::string key, AttributeValue value);
  void AddEvent(std::string name, absl::Time at = absl::Now(), Attributes attributes = {});
  // Links to another span (a batch to the calls it served; a victim to its preemptor). Invalid
  // contexts are skipped.
  void AddLink(const SpanContext& linked, Attributes attributes = {});
  void SetStatus(StatusCode code, std::string message = "");
  // Ends the span at `end` and queues it for export. Idempotent.
  void End(absl::Time end = absl::Now());

 private:
  friend class Tracer;
  Tracer* tracer_ = nullptr;
  std::unique_ptr<SpanData> data_;
  SpanContext context_;
};

struct TracerOptions {
  // service.name of the spans' resource.
  std::string service_name = "admitd";
  // host:port of an OTLP/gRPC collector; empty (and no exporter given): tracing is off.
  std::string endpoint;
  // The share of root traces recorded, 0 to 1; children follow their parent.
  double sample_ratio = 1.0;
  // Spans waiting for export at most; beyond, spans are dropped.
  size_t queue_capacity = 4096;
  size_t max_batch = 512;
  absl::Duration flush_interval = absl::Seconds(1);
  absl::Duration export_timeout = absl::Seconds(5);
  // Null: plaintext to the collector.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // More attributes of the resource (service.version, service.instance.id...).
  std::vector<std::pair<std::string, std::string>> resource_attributes;
};

// How a span starts. Without a valid parent the span is a root of `trace_id` (random when
// unset); `span_id` gives it a chosen id (a workload's deterministic root). `sampled` overrides
// the sampler.
struct SpanStart {
  SpanKind kind = SpanKind::kInternal;
  const SpanContext* parent = nullptr;
  std::optional<TraceId> trace_id;
  std::optional<SpanId> span_id;
  std::optional<bool> sampled;
  absl::Time start = absl::InfinitePast();  // InfinitePast: now
};

class Tracer {
 public:
  // Starts the export thread when tracing is on: `exporter`, or the OTLP/gRPC exporter to
  // options.endpoint. With neither, the tracer is off: spans are never recorded.
  static std::unique_ptr<Tracer> Create(TracerOptions options,
                                        std::unique_ptr<Exporter> exporter = nullptr);
  ~Tracer();  // Shutdown(export_timeout)

  bool enabled() const { return exporter_ != nullptr; }
  double sample_ratio() const { return sampler_.ratio(); }

  // A span named `name` (copied only when the span is sampled). When the tracer is off the span
  // has an invalid context and records nothing.
  Span StartSpan(std::string_view name, const SpanStart& how = {});
  // The ratio sampler's decision for a root of `trace_id`.
  bool Sampled(const TraceId& trace_id) const { return sampler_.SampleRoot(trace_id); }

  // Spans exported, dropped (queue full or a failed export), and failed export requests.
  uint64_t spans_exported() const { return exported_.load(std::memory_order_relaxed); }
  uint64_t spans_dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t export_failures() const { return failures_.load(std::memory_order_relaxed); }
  // Spans waiting in the queue now.
  size_t queued() const;

  // Exports what is queued, for at most `deadline`, then stops the export thread; later spans
  // are dropped. Idempotent.
  void Shutdown(absl::Duration deadline);

 private:
  friend class Span;
  Tracer(TracerOptions options, std::unique_ptr<Exporter> exporter);
  void Enqueue(std::unique_ptr<SpanData> span);
  void Run();
  void ExportBatch(std::vector<std::unique_ptr<SpanData>>& batch);

  const TracerOptions options_;
  const std::unique_ptr<Exporter> exporter_;
  const Sampler sampler_;

  std::atomic<uint64_t> exported_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> failures_{0};

  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<SpanData>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time flush_by_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();  // a Shutdown's deadline

  std::thread thread_;
};

// The OTLP request for `spans` (for exporters and tests).
opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest ToOtlp(
    const std::vector<std::unique_ptr<SpanData>>& spans, const TracerOptions& options);

}  // namespace admitd::tracing

#endif  // ADMITD_COMMON_TRACE_TRACER_H_
