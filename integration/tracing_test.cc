// Traces of a running admitd, received by a fake OTLP collector: the server span of each call
// (a child of the client's traceparent), the sequencer's batch spans linked to the calls they
// served, and the trace of a workload's life from submission to its end.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/trace/testing/fake_collector.h"
#include "common/trace/trace_context.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

using OtlpSpan = tracing::FakeCollector::OtlpSpan;
using ::testing::Contains;
using ::testing::IsSupersetOf;

std::string Bytes(const tracing::TraceId& id) { return std::string(id.begin(), id.end()); }
std::string Bytes(const tracing::SpanId& id) { return std::string(id.begin(), id.end()); }

// A new sampled span of a client, to send as its traceparent.
tracing::SpanContext SampledClientSpan() {
  tracing::SpanContext client;
  client.trace_id = tracing::NewTraceId();
  client.span_id = tracing::NewSpanId();
  client.sampled = true;
  return client;
}

std::string Attribute(const OtlpSpan& span, const std::string& key) {
  for (const auto& kv : span.attributes()) {
    if (kv.key() == key) {
      return kv.value().has_int_value() ? std::to_string(kv.value().int_value())
                                        : kv.value().string_value();
    }
  }
  return "";
}

std::vector<const OtlpSpan*> Named(const std::vector<OtlpSpan>& spans, const std::string& name) {
  std::vector<const OtlpSpan*> out;
  for (const OtlpSpan& s : spans) {
    if (s.name() == name) out.push_back(&s);
  }
  return out;
}

class TracingTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    config_.otlp_endpoint = collector_.address();
    config_.trace_sample_ratio = 1.0;
    Start();
    Apply(testing::Flavor("default"));
    Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "4"}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }

  // Submits with the client's span as traceparent.
  v1::Workload Submit(const v1::Workload& wl, const tracing::SpanContext& client_span) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("traceparent", tracing::FormatTraceparent(client_span));
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    v1::SubmitResponse resp;
    const grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.workload();
  }

  // The spans of trace `trace`, once `names` are all among them.
  std::vector<OtlpSpan> WaitForTrace(const std::string& trace,
                                     const std::vector<std::string>& names) {
    std::vector<OtlpSpan> out;
    collector_.WaitFor([&](const std::vector<OtlpSpan>& spans) {
      out.clear();
      for (const OtlpSpan& s : spans) {
        if (s.trace_id() == trace) out.push_back(s);
      }
      return std::all_of(names.begin(), names.end(), [&](const std::string& n) {
        return !Named(out, n).empty();
      });
    });
    return out;
  }

  tracing::FakeCollector collector_;
};

TEST_F(TracingTest, AClientsTraceparentIsTheParentOfTheServerSpan) {
  const tracing::SpanContext client = SampledClientSpan();
  Submit(testing::Workload("ns", "job-a", "lq", 1, {{"cpu", "1"}}), client);
  const std::vector<OtlpSpan> spans =
      WaitForTrace(Bytes(client.trace_id), {"AdmissionService/Submit"});
  const std::vector<const OtlpSpan*> submit = Named(spans, "AdmissionService/Submit");
  ASSERT_EQ(submit.size(), 1u);
  EXPECT_EQ(submit[0]->parent_span_id(), Bytes(client.span_id));
  EXPECT_EQ(submit[0]->kind(), opentelemetry::proto::trace::v1::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(Attribute(*submit[0], "rpc.method"), "Submit");
  EXPECT_EQ(Attribute(*submit[0], "rpc.grpc.status_code"), "0");
  EXPECT_EQ(collector_.service_names().front(), "admitd");

  // The batch that served the call links to its span, and its phases are its children.
  std::vector<OtlpSpan> batches;
  ASSERT_TRUE(collector_.WaitFor([&](const std::vector<OtlpSpan>& all) {
    batches.clear();
    for (const OtlpSpan& s : all) {
      if (s.name() != "sequencer.batch") continue;
      for (const auto& link : s.links()) {
        if (link.span_id() == submit[0]->span_id()) batches.push_back(s);
      }
    }
    return !batches.empty();
  }));
  const OtlpSpan& batch = batches.front();
  EXPECT_EQ(batch.parent_span_id(), "");
  const std::vector<OtlpSpan> phases = WaitForTrace(
      batch.trace_id(), {"apply", "schedule", "prepare", "commit", "store.write", "answer"});
  std::map<std::string, const OtlpSpan*> by_name;
  for (const OtlpSpan& s : phases) by_name[s.name()] = &s;
  for (const char* phase : {"apply", "schedule", "prepare", "commit"}) {
    EXPECT_EQ(by_name[phase]->parent_span_id(), batch.span_id()) << phase;
    EXPECT_GE(by_name[phase]->start_time_unix_nano(), batch.start_time_unix_nano()) << phase;
    EXPECT_LE(by_name[phase]->end_time_unix_nano(), batch.end_time_unix_nano()) << phase;
  }
  EXPECT_EQ(by_name["store.write"]->parent_span_id(), by_name["commit"]->span_id());
  EXPECT_EQ(by_name["answer"]->parent_span_id(), by_name["commit"]->span_id());
}

TEST_F(TracingTest, AWatchStreamIsMeasuredAndTraced) {
  const tracing::SpanContext client = SampledClientSpan();
  {
    // A stream the client cancels once it is live.
    grpc::ClientContext ctx;
    ctx.AddMetadata("traceparent", tracing::FormatTraceparent(client));
    v1::WatchRequest req;
    req.set_namespace_("ns");
    auto reader = client_->admission->Watch(&ctx, req);
    v1::WatchEvent ev;
    ASSERT_TRUE(reader->Read(&ev));
    EXPECT_EQ(ev.type(), v1::WatchEvent::SYNCED);
    ctx.TryCancel();
    while (reader->Read(&ev)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  {
    // A stream refused at once.
    grpc::ClientContext ctx;
    v1::WatchRequest req;
    req.set_since_revision(1);
    req.set_from_oldest(true);
    auto reader = client_->admission->Watch(&ctx, req);
    v1::WatchEvent ev;
    while (reader->Read(&ev)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  const std::vector<OtlpSpan> spans =
      WaitForTrace(Bytes(client.trace_id), {"AdmissionService/Watch"});
  const std::vector<const OtlpSpan*> watch = Named(spans, "AdmissionService/Watch");
  ASSERT_EQ(watch.size(), 1u);
  EXPECT_EQ(watch[0]->parent_span_id(), Bytes(client.span_id));
  EXPECT_EQ(watch[0]->kind(), opentelemetry::proto::trace::v1::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(Attribute(*watch[0], "rpc.method"), "Watch");
  EXPECT_EQ(Attribute(*watch[0], "rpc.grpc.status_code"), "1");  // CANCELLED
  std::string text;
  for (int i = 0; i < 200; ++i) {  // the server side of a cancel may end just after the client's
    text = server_->metrics().Render();
    if (text.find("method=\"AdmissionService/Watch\"} 1\n") != std::string::npos &&
        text.find("code=\"CANCELLED\",method=\"AdmissionService/Watch\"") != std::string::npos) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_THAT(text, ::testing::HasSubstr("admitd_grpc_server_handled_total{code=\"CANCELLED\","
                                         "method=\"AdmissionService/Watch\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("admitd_grpc_server_handled_total{code=\"INVALID_ARGUMENT\","
                                         "method=\"AdmissionService/Watch\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "admitd_grpc_server_handling_seconds_count{method=\"AdmissionService/Watch\"} 2\n"));
}

TEST_F(TracingTest, AWorkloadsLifeIsOneTrace) {
  const tracing::SpanContext client = SampledClientSpan();
  const v1::Workload submitted =
      Submit(testing::Workload("ns", "job-a", "lq", 2, {{"cpu", "1"}}), client);
  ASSERT_FALSE(submitted.metadata().uid().empty());
  // Waits for the admission, then the owner reports the job finished.
  ASSERT_TRUE(collector_.WaitFor([&](const std::vector<OtlpSpan>& spans) {
    return !Named(spans, "Admitted").empty();
  }));
  {
    grpc::ClientContext ctx;
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name("job-a");
    req.mutable_finished()->set_reason("Succeeded");
    req.mutable_finished()->set_message("the job succeeded");
    v1::ReleaseQuotaResponse resp;
    ASSERT_TRUE(client_->admission->ReleaseQuota(&ctx, req, &resp).ok());
  }
  const std::string key = "workload/" + submitted.metadata().uid();
  const std::string trace = Bytes(tracing::TraceIdFromKey(key));
  const std::string root_id = Bytes(tracing::SpanIdFromKey(key));
  const std::vector<OtlpSpan> spans =
      WaitForTrace(trace, {"Workload ns/job-a", "Submitted", "Admitted", "event QuotaReserved",
                           "event Admitted", "Finished"});
  const std::vector<const OtlpSpan*> root = Named(spans, "Workload ns/job-a");
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(root[0]->span_id(), root_id);
  EXPECT_EQ(root[0]->parent_span_id(), "");
  EXPECT_EQ(Attribute(*root[0], "admitd.workload.uid"), submitted.metadata().uid());
  EXPECT_EQ(Attribute(*root[0], "admitd.queue_name"), "lq");
  std::vector<std::string> children;
  for (const OtlpSpan& s : spans) {
    if (&s == root[0]) continue;
    EXPECT_EQ(s.parent_span_id(), root_id) << s.name();
    children.push_back(s.name());
    // Each links to the batch that committed it.
    EXPECT_GE(s.links_size(), 1) << s.name();
  }
  EXPECT_THAT(children, IsSupersetOf({"Submitted", "Admitted", "Finished"}));
  const OtlpSpan& admitted = *Named(spans, "Admitted")[0];
  EXPECT_EQ(Attribute(admitted, "admitd.cluster_queue"), "cq");
  EXPECT_EQ(Attribute(admitted, "admitd.flavors"), "main:cpu=default");
  EXPECT_EQ(Attribute(*Named(spans, "Finished")[0], "admitd.state"), "WORKLOAD_STATE_FINISHED");
}

TEST_F(TracingTest, APendingAttemptAndAPreemptionShowInTheTraces) {
  const tracing::SpanContext client = SampledClientSpan();
  v1::ApplyRequest preempting = testing::ClusterQueue("cq", {"default"}, {{"cpu", "4"}});
  preempting.mutable_object()
      ->mutable_cluster_queue()
      ->mutable_spec()
      ->mutable_preemption()
      ->set_within_cluster_queue("LowerPriority");
  Apply(preempting);
  const v1::Workload low =
      Submit(testing::Workload("ns", "low", "lq", 4, {{"cpu", "1"}}, /*priority=*/1), client);
  ASSERT_TRUE(collector_.WaitFor([&](const std::vector<OtlpSpan>& spans) {
    return !Named(spans, "Admitted").empty();
  }));
  const v1::Workload high =
      Submit(testing::Workload("ns", "high", "lq", 4, {{"cpu", "1"}}, /*priority=*/100), client);
  const std::string low_trace = Bytes(tracing::TraceIdFromKey("workload/" + low.metadata().uid()));
  const std::vector<OtlpSpan> spans = WaitForTrace(low_trace, {"event Preempted", "Evicted"});
  const OtlpSpan& preempted = *Named(spans, "event Preempted")[0];
  // The victim's trace links to the preemptor's.
  const std::string high_key = "workload/" + high.metadata().uid();
  bool linked = false;
  for (const auto& link : preempted.links()) {
    linked |= link.trace_id() == Bytes(tracing::TraceIdFromKey(high_key)) &&
              link.span_id() == Bytes(tracing::SpanIdFromKey(high_key));
  }
  EXPECT_TRUE(linked);
  // The preemptor waited: its first attempt is in its trace with the pending reason.
  const std::string high_trace = Bytes(tracing::TraceIdFromKey(high_key));
  const std::vector<OtlpSpan> high_spans = WaitForTrace(high_trace, {"Pending"});
  EXPECT_THAT(Attribute(*Named(high_spans, "Pending")[0], "admitd.message"),
              ::testing::HasSubstr("insufficient"));
  EXPECT_THAT(Attribute(*Named(high_spans, "Pending")[0], "admitd.message"),
              ::testing::Not(::testing::IsEmpty()));
}

TEST_F(TracingTest, TheMetricsCountExportedSpans) {
  const tracing::SpanContext client = SampledClientSpan();
  Submit(testing::Workload("ns", "job-a", "lq", 1, {{"cpu", "1"}}), client);
  ASSERT_TRUE(collector_.WaitFor([](const std::vector<OtlpSpan>& spans) {
    return !Named(spans, "Admitted").empty();
  }));
  const std::string text = server_->metrics().Render();
  EXPECT_THAT(text, ::testing::HasSubstr("admitd_tracing_spans_exported_total "));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "admitd_grpc_server_handled_total{code=\"OK\",method=\"AdmissionService/Submit\"} 1\n"));
}

}  // namespace
}  // namespace admitd
