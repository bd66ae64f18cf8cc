// TraceRecorder: what the sequencer did, as OpenTelemetry spans.
//
// - One trace per workload, whose spans show its life: its trace id and root span id derive
//   from the workload's UID (tracing::TraceIdFromKey), so every span about it joins the same
//   trace across batches and restarts without any stored state. The root span ("Workload
//   ns/name") is recorded when its submission commits; each later committed change (QuotaReserved,
//   Admitted, Pending, Evicted, Requeued, Finished, Deleted, ...) and each Kubernetes Event
//   recorded on it (the pending reasons of each scheduling attempt, with the flavors considered;
//   Preempted, with a link to the preemptor's trace) is a child span of that root. Sampled by
//   the tracer's ratio on the workload's trace id: a workload's trace is whole or absent.
// - One trace per batch ("sequencer.batch") with child spans for its phases: apply, schedule
//   (the scheduling cycles), prepare (the answers read), commit with its store write (the
//   fsync) and the answers sent. The batch span links to the RPC server spans of the calls it
//   served; a batch that served a sampled call is always recorded, others by the ratio.
//   Workload spans link to the batch that committed them.
//
// Spans are built on the committer thread after the batch's answers are sent, and handed to
// the tracer's bounded queue: tracing never delays an answer.
//
// Thread safety: Record may be called from one thread at a time (the committer).
#ifndef ADMITD_SERVER_TRACE_RECORDER_H_
#define ADMITD_SERVER_TRACE_RECORDER_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/trace/tracer.h"
#include "server/engine/engine.h"

namespace admitd {

// When each phase of a batch ended (absl::Now() readings).
struct BatchTimes {
  absl::Time start;        // the sequencer took the batch
  absl::Time applied;      // its commands applied
  absl::Time scheduled;    // its scheduling cycles ran
  absl::Time prepared;     // its answers read from the engine
  absl::Time commit_start; // the committer took it
  absl::Time written;      // the store write (with its fsync) returned
  absl::Time answered;     // every answer was sent
  int commands = 0;
  int cycles = 0;
};

class TraceRecorder {
 public:
  // `tracer` may be null or disabled: then nothing is recorded. It must outlive the recorder.
  explicit TraceRecorder(tracing::Tracer* tracer);

  bool enabled() const { return tracer_ != nullptr; }

  // Records one batch: `served` are the span contexts of the calls it answered (invalid ones
  // are skipped), `changes` what it committed (empty when nothing changed or the commit
  // failed, as `commit` says).
  void Record(const BatchTimes& times, const std::vector<tracing::SpanContext>& served,
              const std::vector<engine::Change>& changes, const absl::Status& commit);

  // The root span context of the workload with `uid`'s trace (sampled or not, as the tracer's
  // ratio decides).
  tracing::SpanContext WorkloadRoot(const std::string& uid) const;

 private:
  void RecordWorkloadChange(const engine::Change& change, const tracing::SpanContext& batch,
                            const BatchTimes& times);

  tracing::Tracer* const tracer_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_TRACE_RECORDER_H_
