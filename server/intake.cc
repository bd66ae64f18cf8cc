#include "server/intake.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/pod_service.pb.h"
#include "admitd/v1/queue_service.pb.h"
#include "common/status.h"
#include "google/protobuf/descriptor.h"
#include "google/rpc/error_details.pb.h"

namespace admitd {
namespace {

constexpr char kRefusedName[] = "admitd_overload_refused_total";
constexpr char kRefusedHelp[] =
    "Calls refused with RESOURCE_EXHAUSTED because too many calls were waiting for the "
    "sequencer (--max-pending-calls); none of them was run.";

// The services whose unary calls go through the sequencer.
const char* const kServices[] = {"admitd.v1.AdmissionService", "admitd.v1.QueueService",
                                 "admitd.v1.PodService"};

// The answer rate is measured over windows of at least this long (a batch's answers come all at
// once, up to a few hundred milliseconds apart); a longer gap (an idle server) starts a new
// measurement instead.
constexpr absl::Duration kRateWindow = absl::Seconds(1);
constexpr absl::Duration kRateGap = absl::Seconds(5);
// Assumed before any rate was measured: about what a Submit costs on the sequencer.
constexpr double kDefaultAnswersPerSecond = 10000;

}  // namespace

Intake::Intake(int64_t max_pending, MetricsRegistry* metrics)
    : max_pending_(std::max<int64_t>(max_pending, 0)),
      max_pending_with_headroom_(max_pending_ +
                                 static_cast<int64_t>(std::ceil(max_pending_ * kHeadroom))),
      metrics_(metrics),
      sample_time_(absl::Now()) {
  if (metrics_ == nullptr) return;
  // Every unary method that reaches the sequencer has its refusal counter from the start, at 0,
  // so that the first refusal is an increase.
  // (A message of each service's file is named so that the file is linked and registered.)
  (void)v1::SubmitRequest::descriptor();
  (void)v1::ApplyRequest::descriptor();
  (void)v1::ReportPodsRequest::descriptor();
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  for (const char* name : kServices) {
    const google::protobuf::ServiceDescriptor* service = pool->FindServiceByName(name);
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* method = service->method(i);
      if (method->client_streaming() || method->server_streaming() || method->name() == "Ping" ||
          method->name() == "ParseManifests") {
        continue;
      }
      const std::string label = absl::StrCat(service->name(), "/", method->name());
      refused_counters_[label] =
          &metrics_->Counter(kRefusedName, kRefusedHelp, {{"method", label}});
    }
  }
  const int64_t limit = max_pending_;
  metrics_->AddCollector([counts = counts_, limit] {
    std::vector<prometheus::MetricFamily> out;
    out.push_back(MetricFamilyOf(
        "admitd_pending_calls",
        "Calls waiting for the sequencer: queued, being applied or committed, not yet answered.",
        prometheus::MetricType::Gauge));
    AddSample(&out.back(), {}, static_cast<double>(counts->pending.load()));
    out.push_back(MetricFamilyOf("admitd_pending_calls_limit",
                                 "The most calls that may wait for the sequencer "
                                 "(--max-pending-calls; 0: no bound).",
                                 prometheus::MetricType::Gauge));
    AddSample(&out.back(), {}, static_cast<double>(limit));
    return out;
  });
}

absl::Status Intake::Take(const IntakeCall& call) {
  const int64_t before = counts_->pending.fetch_add(1, std::memory_order_relaxed);
  if (max_pending_ == 0) return absl::OkStatus();
  const int64_t limit = call.kind == IntakeCall::kWrite ? max_pending_ : max_pending_with_headroom_;
  if (before < limit) return absl::OkStatus();
  counts_->pending.fetch_sub(1, std::memory_order_relaxed);
  return Refuse(call, before, limit);
}

void Intake::Release() {
  counts_->pending.fetch_sub(1, std::memory_order_relaxed);
  answered_.fetch_add(1, std::memory_order_relaxed);
}

absl::Status Intake::Refuse(const IntakeCall& call, int64_t waiting, int64_t limit) {
  refused_.fetch_add(1, std::memory_order_relaxed);
  if (metrics_ != nullptr) {
    auto it = refused_counters_.find(call.method);
    prometheus::Counter& counter =
        it != refused_counters_.end()
            ? *it->second
            : metrics_->Counter(kRefusedName, kRefusedHelp, {{"method", call.method}});
    counter.Increment();
  }
  const absl::Duration delay = RetryDelay(waiting);
  google::rpc::ErrorInfo info;
  info.set_reason("OVERLOADED");
  info.set_domain(std::string(kErrorDomain));
  (*info.mutable_metadata())["pendingCalls"] = absl::StrCat(waiting);
  (*info.mutable_metadata())["maxPendingCalls"] = absl::StrCat(limit);
  absl::Status status(
      absl::StatusCode::kResourceExhausted,
      absl::StrCat("admitd is overloaded: ", waiting,
                   " calls are waiting for the sequencer (limit ", limit,
                   "); this call was not run and may be retried after ",
                   absl::FormatDuration(delay)));
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(info.SerializeAsString()));
  return WithRetryDelay(std::move(status), delay);
}

absl::Duration Intake::RetryDelay(int64_t waiting) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  const absl::Duration since = now - sample_time_;
  if (since >= kRateWindow) {
    const int64_t answered = answered_.load(std::memory_order_relaxed);
    if (since <= kRateGap) {
      const double sampled =
          static_cast<double>(answered - sample_answered_) / absl::ToDoubleSeconds(since);
      answers_per_second_ =
          answers_per_second_ < 0 ? sampled : 0.7 * answers_per_second_ + 0.3 * sampled;
    }
    sample_time_ = now;
    sample_answered_ = answered;
  }
  const double rate = answers_per_second_ < 0 ? kDefaultAnswersPerSecond : answers_per_second_;
  // A sequencer that answered nothing lately gets the longest delay.
  const absl::Duration per_call =
      rate > 0 ? absl::Seconds(std::min(1 / rate, 1e6)) : kMaxRetryDelay;
  // The first call refused comes back once half of what waits was answered; each next one a
  // call's time after the one before, so refused calls return at the pace calls are answered
  // instead of all at once.
  const absl::Time earliest = now + per_call * (static_cast<double>(waiting) / 2);
  const absl::Time slot = std::min(std::max(next_slot_, earliest), now + kMaxRetryDelay);
  next_slot_ = slot + per_call;
  return std::max(slot - now, kMinRetryDelay);
}

}  // namespace admitd
