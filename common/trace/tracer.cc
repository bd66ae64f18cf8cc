#include "common/trace/tracer.h"

#include <algorithm>

namespace admitd::tracing {

Span::Span(Span&& other) noexcept
    : tracer_(other.tracer_), data_(std::move(other.data_)), context_(other.context_) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    End();
    tracer_ = other.tracer_;
    data_ = std::move(other.data_);
    context_ = other.context_;
  }
  return *this;
}

void Span::SetAttribute(std::string key, AttributeValue value) {
  if (data_ != nullptr) data_->attributes.emplace_back(std::move(key), std::move(value));
}

void Span::AddEvent(std::string name, absl::Time at, Attributes attributes) {
  if (data_ != nullptr) data_->events.push_back({std::move(name), at, std::move(attributes)});
}

void Span::AddLink(const SpanContext& linked, Attributes attributes) {
  if (data_ != nullptr && linked.IsValid()) {
    data_->links.push_back({linked, std::move(attributes)});
  }
}

void Span::SetStatus(StatusCode code, std::string message) {
  if (data_ == nullptr) return;
  data_->status = code;
  data_->status_message = std::move(message);
}

void Span::End(absl::Time end) {
  if (data_ == nullptr) return;
  data_->end = std::max(end, data_->start);
  tracer_->Enqueue(std::move(data_));
}

std::unique_ptr<Tracer> Tracer::Create(TracerOptions options,
                                       std::unique_ptr<Exporter> exporter) {
  if (exporter == nullptr && !options.endpoint.empty()) {
    exporter = NewOtlpGrpcExporter(options.endpoint, options.credentials, options.export_timeout);
  }
  return std::unique_ptr<Tracer>(new Tracer(std::move(options), std::move(exporter)));
}

Tracer::Tracer(TracerOptions options, std::unique_ptr<Exporter> exporter)
    : options_(std::move(options)),
      exporter_(std::move(exporter)),
      sampler_(options_.sample_ratio) {
  if (exporter_ != nullptr) thread_ = std::thread([this] { Run(); });
}

Tracer::~Tracer() { Shutdown(options_.export_timeout); }

Span Tracer::StartSpan(std::string_view name, const SpanStart& how) {
  Span span;
  if (exporter_ == nullptr) return span;
  const bool child = how.parent != nullptr && how.parent->IsValid();
  span.context_.trace_id = child ? how.parent->trace_id
                           : how.trace_id ? *how.trace_id
                                          : NewTraceId();
  span.context_.span_id = how.span_id ? *how.span_id : NewSpanId();
  span.context_.sampled =
      how.sampled ? *how.sampled : sampler_.ShouldSample(span.context_.trace_id, how.parent);
  if (child) span.context_.trace_state = how.parent->trace_state;
  if (!span.context_.sampled) return span;
  span.tracer_ = this;
  span.data_ = std::make_unique<SpanData>();
  span.data_->context = span.context_;
  if (child) {
    span.data_->parent_span_id = how.parent->span_id;
    span.data_->parent_remote = how.parent->remote;
  }
  span.data_->name.assign(name.data(), name.size());
  span.data_->kind = how.kind;
  span.data_->start = how.start == absl::InfinitePast() ? absl::Now() : how.start;
  return span;
}

size_t Tracer::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void Tracer::Enqueue(std::unique_ptr<SpanData> span) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || queue_.size() >= options_.queue_capacity) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  queue_.push_back(std::move(span));
}

void Tracer::Run() {
  std::vector<std::unique_ptr<SpanData>> batch;
  while (true) {
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      const size_t want = options_.max_batch;
      auto ready = [this, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return queue_.size() >= want || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), options_.flush_interval);
      const size_t n = std::min(queue_.size(), want);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (stopping_) {
        if (absl::Now() >= flush_by_) {
          dropped_.fetch_add(queue_.size(), std::memory_order_relaxed);
          queue_.clear();
        }
        stop = queue_.empty();
      }
    }
    if (!batch.empty()) ExportBatch(batch);
    if (stop) return;
  }
}

void Tracer::ExportBatch(std::vector<std::unique_ptr<SpanData>>& batch) {
  const absl::Status sent = exporter_->Export(ToOtlp(batch, options_));
  if (sent.ok()) {
    exported_.fetch_add(batch.size(), std::memory_order_relaxed);
  } else {
    failures_.fetch_add(1, std::memory_order_relaxed);
    dropped_.fetch_add(batch.size(), std::memory_order_relaxed);
  }
  batch.clear();
}

void Tracer::Shutdown(absl::Duration deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      flush_by_ = absl::Now() + deadline;
    }
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace admitd::tracing
