// Intake: the bound on calls waiting for the sequencer (--max-pending-calls), so that a burst of
// calls costs memory set by configuration instead of queueing without limit.
//
// A call that goes through the sequencer is taken in just before it is queued and let go once it
// was answered: it counts while it waits in the queue, while its batch is applied and committed,
// and until its answer is handed to gRPC. Over the bound a call is refused at once with
// RESOURCE_EXHAUSTED, ErrorInfo reason OVERLOADED and a google.rpc.RetryInfo saying when to try
// again; it never reached the sequencer, so it changed nothing and may be retried as it is.
// Calls that only read (Get, List, Admit) and calls that give quota back or remove a workload
// (ReleaseQuota, Delete) have headroom: they are refused only a quarter above the bound, so reads
// still answer and finished work still frees its quota while new work is being refused.
//
// The advised delays spread the refused calls' returns at the rate the sequencer answered calls
// lately: the first call refused comes back once half of what waits was answered (room has been
// made, and the other half still keeps the sequencer busy), each next one a call's answer time
// after the one before, so that a burst of refused calls does not come back at once to be
// refused again. Delays stay between 20 ms and 10 s.
//
// Metrics: admitd_pending_calls and admitd_pending_calls_limit (gauges, read at each scrape) and
// admitd_overload_refused_total{method} (from 0 for every unary method that can be refused).
//
//   Intake intake(4096, &metrics.registry());
//   if (absl::Status s = intake.Take({"AdmissionService/Submit"}); !s.ok()) return Refuse(s);
//   ... enqueue; once answered: intake.Release();
//
// Thread safety: every method may be called from any thread.
#ifndef ADMITD_SERVER_INTAKE_H_
#define ADMITD_SERVER_INTAKE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics_registry.h"

namespace admitd {

// A call as the intake sees it.
struct IntakeCall {
  enum Kind {
    kWrite,    // adds or changes work: refused at the bound
    kRead,     // only reads: has headroom
    kRelease,  // gives quota back or removes a workload: has headroom
  };
  // "Service/Method" (e.g. "AdmissionService/Submit"), as the call metrics name it.
  const char* method;
  Kind kind = kWrite;
};

class Intake {
 public:
  // Reads and releases may exceed the bound by this share of it.
  static constexpr double kHeadroom = 0.25;
  // The advised retry delay stays within these.
  static constexpr absl::Duration kMinRetryDelay = absl::Milliseconds(20);
  static constexpr absl::Duration kMaxRetryDelay = absl::Seconds(10);

  // At most `max_pending` calls wait (0: no bound, calls are only counted). `metrics` may be
  // null; otherwise it must outlive the Intake.
  Intake(int64_t max_pending, MetricsRegistry* metrics);
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  // OK: the call counts until Release. RESOURCE_EXHAUSTED (the call is not counted) when the
  // bound is reached.
  absl::Status Take(const IntakeCall& call);
  // A call Take let in was answered.
  void Release();

  int64_t pending() const { return counts_->pending.load(std::memory_order_relaxed); }
  int64_t max_pending() const { return max_pending_; }
  // Calls refused so far.
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  // Shared with the metrics collector, which may outlive the Intake in the registry.
  struct Counts {
    std::atomic<int64_t> pending{0};
  };

  absl::Status Refuse(const IntakeCall& call, int64_t waiting, int64_t limit);
  absl::Duration RetryDelay(int64_t waiting);

  const int64_t max_pending_;
  const int64_t max_pending_with_headroom_;
  MetricsRegistry* const metrics_;
  const std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
  std::atomic<int64_t> answered_{0};
  std::atomic<int64_t> refused_{0};
  // admitd_overload_refused_total of every method known at construction; read without a lock.
  absl::flat_hash_map<std::string, prometheus::Counter*> refused_counters_;

  // The answer rate, sampled on the refusal path.
  absl::Mutex mu_;
  absl::Time sample_time_ ABSL_GUARDED_BY(mu_);
  int64_t sample_answered_ ABSL_GUARDED_BY(mu_) = 0;
  double answers_per_second_ ABSL_GUARDED_BY(mu_) = -1;  // negative: not measured yet
  // When the next refused call is to come back, at the earliest.
  absl::Time next_slot_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace admitd

#endif  // ADMITD_SERVER_INTAKE_H_
