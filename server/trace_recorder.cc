#include "server/trace_recorder.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/engine/conditions.h"

namespace admitd {
namespace {

using tracing::Span;
using tracing::SpanContext;
using tracing::SpanStart;

// Links a batch span keeps at most (a batch of thousands of calls keeps the first ones).
constexpr size_t kMaxLinks = 128;

std::string WorkloadKey(const std::string& uid) { return absl::StrCat("workload/", uid); }

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// The preemptor's UID in Kueue's Preempted message: "... (UID: <uid>, JobUID: ...".
std::string PreemptorUid(const std::string& note) {
  constexpr char kUid[] = "(UID: ";
  const size_t at = note.find(kUid);
  if (at == std::string::npos) return "";
  const size_t start = at + sizeof(kUid) - 1;
  const size_t end = note.find_first_of(",)", start);
  return end == std::string::npos ? "" : note.substr(start, end - start);
}

}  // namespace

TraceRecorder::TraceRecorder(tracing::Tracer* tracer)
    : tracer_(tracer != nullptr && tracer->enabled() ? tracer : nullptr) {}

SpanContext TraceRecorder::WorkloadRoot(const std::string& uid) const {
  SpanContext root;
  if (tracer_ == nullptr || uid.empty()) return root;
  root.trace_id = tracing::TraceIdFromKey(WorkloadKey(uid));
  root.span_id = tracing::SpanIdFromKey(WorkloadKey(uid));
  root.sampled = tracer_->Sampled(root.trace_id);
  return root;
}

void TraceRecorder::Record(const BatchTimes& times, const std::vector<SpanContext>& served,
                           const std::vector<engine::Change>& changes,
                           const absl::Status& commit) {
  if (tracer_ == nullptr) return;
  SpanContext batch_context;
  SpanStart root_start;
  root_start.start = times.start;
  if (!served.empty()) root_start.sampled = true;  // a traced call's batch is always recorded
  Span batch = tracer_->StartSpan("sequencer.batch", root_start);
  if (batch.recording()) {
    batch_context = batch.context();
    batch.SetAttribute("admitd.batch.commands", int64_t{times.commands});
    batch.SetAttribute("admitd.batch.cycles", int64_t{times.cycles});
    batch.SetAttribute("admitd.batch.changes", static_cast<int64_t>(changes.size()));
    for (size_t i = 0; i < served.size() && i < kMaxLinks; ++i) batch.AddLink(served[i]);
    if (!commit.ok()) batch.SetStatus(tracing::StatusCode::kError, std::string(commit.message()));
    auto phase = [&](const char* name, absl::Time from, absl::Time to,
                     const SpanContext& parent) {
      SpanStart how;
      how.parent = &parent;
      how.start = from;
      Span s = tracer_->StartSpan(name, how);
      SpanContext context = s.context();
      s.End(std::max(from, to));
      return context;
    };
    phase("apply", times.start, times.applied, batch_context);
    phase("schedule", times.applied, times.scheduled, batch_context);
    phase("prepare", times.scheduled, times.prepared, batch_context);
    {
      SpanStart how;
      how.parent = &batch_context;
      how.start = times.commit_start;
      Span commit_span = tracer_->StartSpan("commit", how);
      commit_span.SetAttribute("admitd.commit.waited_ms",
                               absl::ToDoubleMilliseconds(times.commit_start - times.prepared));
      SpanContext context = commit_span.context();
      phase("store.write", times.commit_start, times.written, context);
      phase("answer", times.written, times.answered, context);
      commit_span.End(times.answered);
    }
  }
  for (const engine::Change& c : changes) RecordWorkloadChange(c, batch_context, times);
  batch.End(times.answered);
}

void TraceRecorder::RecordWorkloadChange(const engine::Change& c, const SpanContext& batch,
                                         const BatchTimes& times) {
  std::string uid;
  if (c.kind == v1::OBJECT_KIND_WORKLOAD && c.workload != nullptr) {
    uid = c.workload->metadata().uid();
  } else if (c.kind == v1::OBJECT_KIND_EVENT && c.event != nullptr &&
             c.event->kind == "Workload") {
    uid = c.event->uid;
  } else {
    return;
  }
  const SpanContext root = WorkloadRoot(uid);
  if (!root.sampled) return;
  if (c.workload != nullptr && (c.reason == "Submitted" || c.reason == "Imported")) {
    const v1::Workload& wl = *c.workload;
    SpanStart how;
    how.trace_id = root.trace_id;
    how.span_id = root.span_id;
    how.sampled = true;
    how.start = wl.metadata().has_creation_timestamp()
                    ? FromProto(wl.metadata().creation_timestamp())
                    : times.start;
    Span span = tracer_->StartSpan(
        absl::StrCat("Workload ", wl.metadata().namespace_(), "/", wl.metadata().name()), how);
    span.SetAttribute("admitd.workload", c.key);
    span.SetAttribute("admitd.workload.uid", uid);
    span.SetAttribute("admitd.queue_name", wl.spec().queue_name());
    span.SetAttribute("admitd.priority", int64_t{wl.spec().priority()});
    span.SetAttribute("admitd.pod_sets", int64_t{wl.spec().pod_sets_size()});
    span.AddLink(batch);
    span.End(std::max(how.start, times.written));
  }
  SpanStart how;
  how.parent = &root;
  how.start = times.start;
  Span span;
  if (c.workload != nullptr) {
    span = tracer_->StartSpan(c.reason, how);
    span.SetAttribute("admitd.workload", c.key);
    if (!c.message.empty()) span.SetAttribute("admitd.message", c.message);
    const v1::Workload& wl = *c.workload;
    if (wl.status().has_admission()) {
      span.SetAttribute("admitd.cluster_queue", wl.status().admission().cluster_queue());
      std::string flavors;
      for (const v1::PodSetAssignment& a : wl.status().admission().pod_set_assignments()) {
        for (const auto& [resource, flavor] : a.flavors()) {
          absl::StrAppend(&flavors, flavors.empty() ? "" : ",", a.name(), ":", resource, "=",
                          flavor);
        }
      }
      if (!flavors.empty()) span.SetAttribute("admitd.flavors", flavors);
    }
    span.SetAttribute("admitd.state", v1::WorkloadState_Name(engine::StateOf(wl)));
  } else {
    const engine::EventRecord& e = *c.event;
    span = tracer_->StartSpan(absl::StrCat("event ", e.reason), how);
    span.SetAttribute("admitd.event.type", std::string(e.warning ? "Warning" : "Normal"));
    span.SetAttribute("admitd.event.reason", e.reason);
    span.SetAttribute("admitd.event.note", e.note);
    if (!e.cluster_queue.empty()) span.SetAttribute("admitd.cluster_queue", e.cluster_queue);
    if (e.reason == "Preempted") {
      span.AddLink(WorkloadRoot(PreemptorUid(e.note)), {{"admitd.link", std::string("preemptor")}});
    }
  }
  span.AddLink(batch);
  span.End(times.written);
}

}  // namespace admitd
