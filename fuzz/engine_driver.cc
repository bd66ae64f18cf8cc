#include "fuzz/engine_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "admitd/v1/admission_service.pb.h"
#include "admitd/v1/pod_service.pb.h"
#include "admitd/v1/queue_service.pb.h"
#include "server/request_checks.h"

namespace admitd::fuzz {
namespace {

// The sequencer's bound on cycles per batch.
constexpr int kMaxCyclesPerBatch = 256;
// RunSchedulingCycles may ask for up to kMaxCyclesPerCall cycles; an input is
// kept cheap by running at most this many (each further cycle only repeats work
// already covered).
constexpr int kMaxCyclesPerFuzzCall = 16;
constexpr int kMaxWatches = 4;

template <typename T>
bool Parse(absl::string_view payload, T* out) {
  return out->ParseFromArray(payload.data(), static_cast<int>(payload.size()));
}

template <typename T>
void Check(const absl::StatusOr<T>& result) {
  if (result.ok()) CheckWireRoundTrip(*result);
}

v1::QueueObject Flavor() {
  v1::QueueObject o;
  o.mutable_resource_flavor()->mutable_metadata()->set_name("default");
  return o;
}

v1::QueueObject ClusterQueue() {
  v1::QueueObject o;
  v1::ClusterQueue* cq = o.mutable_cluster_queue();
  cq->mutable_metadata()->set_name("cq");
  cq->mutable_spec()->mutable_namespace_selector();
  v1::ResourceGroup* g = cq->mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  g->add_covered_resources("memory");
  v1::FlavorQuotas* fq = g->add_flavors();
  fq->set_name("default");
  v1::ResourceQuota* cpu = fq->add_resources();
  cpu->set_name("cpu");
  cpu->set_nominal_quota("4");
  v1::ResourceQuota* memory = fq->add_resources();
  memory->set_name("memory");
  memory->set_nominal_quota("8Gi");
  return o;
}

v1::QueueObject LocalQueue() {
  v1::QueueObject o;
  o.mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
  o.mutable_local_queue()->mutable_metadata()->set_name("lq");
  o.mutable_local_queue()->mutable_spec()->set_cluster_queue("cq");
  return o;
}

}  // namespace

void CheckWireRoundTrip(const google::protobuf::Message& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) {
    fprintf(stderr, "cannot serialize %s\n", message.GetTypeName().c_str());
    abort();
  }
  std::unique_ptr<google::protobuf::Message> back(message.New());
  if (!back->ParseFromString(bytes)) {
    fprintf(stderr, "a client cannot parse this %s:\n%s\n", message.GetTypeName().c_str(),
            message.DebugString().c_str());
    abort();
  }
}

EngineDriver::EngineDriver(engine::EngineOptions options)
    : engine_(std::move(options)), now_(absl::FromUnixSeconds(1700000000)) {
  if (!engine_.FinishRestore(0).ok()) abort();
  for (const v1::QueueObject& o : {Flavor(), ClusterQueue(), LocalQueue()}) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    if (!engine_.Apply(req, now_).ok()) abort();
  }
  engine_.TakeChanges();
}

void EngineDriver::Call(Rpc rpc, absl::string_view payload) {
  now_ += absl::Seconds(1);
  const absl::Time now = now_ + absl::Nanoseconds(clock_offset_ns_);
  switch (rpc) {
    case Rpc::kSubmit: {
      v1::SubmitRequest req;
      if (!Parse(payload, &req) || !CheckSubmitRequest(req).ok()) return;
      absl::StatusOr<v1::SubmitResponse> resp =
          engine_.Submit(std::move(req), now, engine::Engine::Answer::kReference);
      Settle();
      if (resp.ok()) {
        const v1::ObjectMeta& meta = resp->workload().metadata();
        if (auto snapshot = engine_.WorkloadSnapshot(meta.namespace_(), meta.name())) {
          CheckWireRoundTrip(*snapshot);
        }
      }
      return;
    }
    case Rpc::kAdmit: {
      v1::AdmitRequest req;
      if (!Parse(payload, &req) || !CheckAdmitRequest(req).ok()) return;
      Check(engine_.Describe(req, now));
      break;
    }
    case Rpc::kReleaseQuota: {
      v1::ReleaseQuotaRequest req;
      if (!Parse(payload, &req) || !CheckReleaseQuotaRequest(req).ok()) return;
      Check(engine_.ReleaseQuota(req, now));
      break;
    }
    case Rpc::kGetWorkload: {
      v1::GetWorkloadRequest req;
      if (!Parse(payload, &req) || !CheckWorkloadName(req.namespace_(), req.name()).ok()) return;
      Check(engine_.GetWorkload(req));
      return;
    }
    case Rpc::kListWorkloads: {
      v1::ListWorkloadsRequest req;
      if (!Parse(payload, &req)) return;
      Check(engine_.ListWorkloads(req));
      return;
    }
    case Rpc::kDeleteWorkload: {
      v1::DeleteWorkloadRequest req;
      if (!Parse(payload, &req) || !CheckWorkloadName(req.namespace_(), req.name()).ok()) return;
      (void)engine_.DeleteWorkload(req, now);
      break;
    }
    case Rpc::kWatch: {
      v1::WatchRequest req;
      if (!Parse(payload, &req)) return;
      if (watches_.size() < kMaxWatches) watches_.push_back(WatchFilter::From(req));
      return;
    }
    case Rpc::kSetActive: {
      v1::SetActiveRequest req;
      if (!Parse(payload, &req) || !CheckWorkloadName(req.namespace_(), req.name()).ok()) return;
      Check(engine_.SetActive(req, now));
      break;
    }
    case Rpc::kSetAdmissionCheckState: {
      v1::SetAdmissionCheckStateRequest req;
      if (!Parse(payload, &req) || !CheckWorkloadName(req.namespace_(), req.name()).ok()) return;
      Check(engine_.SetAdmissionCheckState(req, now));
      break;
    }
    case Rpc::kResize: {
      v1::ResizeRequest req;
      if (!Parse(payload, &req)) return;
      Check(engine_.Resize(req, now));
      break;
    }
    case Rpc::kApply: {
      v1::ApplyRequest req;
      if (!Parse(payload, &req) || !CheckApplyRequest(req).ok()) return;
      Check(engine_.Apply(req, now));
      break;
    }
    case Rpc::kGetObject: {
      v1::GetObjectRequest req;
      if (!Parse(payload, &req) || !CheckGetObjectRequest(req).ok()) return;
      Check(engine_.Get(req));
      return;
    }
    case Rpc::kListObjects: {
      v1::ListObjectsRequest req;
      if (!Parse(payload, &req) || !CheckQueueKind(req.kind()).ok()) return;
      Check(engine_.List(req));
      return;
    }
    case Rpc::kDeleteObject: {
      v1::DeleteObjectRequest req;
      if (!Parse(payload, &req) || !CheckDeleteObjectRequest(req).ok()) return;
      (void)engine_.Delete(req, now);
      break;
    }
    case Rpc::kRunSchedulingCycles: {
      v1::RunSchedulingCyclesRequest req;
      if (!Parse(payload, &req) || !CheckRunSchedulingCyclesRequest(req).ok()) return;
      // The server's clock offset (a manual clock) in nanoseconds, as the
      // sequencer keeps it; an advance it would refuse (past what the offset can
      // hold) is skipped.
      int64_t offset;
      if (__builtin_add_overflow(
              clock_offset_ns_,
              absl::ToInt64Nanoseconds(absl::Seconds(req.advance_clock_seconds())), &offset) ||
          absl::Seconds(req.advance_clock_seconds()) >
              absl::Nanoseconds(std::numeric_limits<int64_t>::max())) {
        return;
      }
      clock_offset_ns_ = offset;
      const absl::Time at = now_ + absl::Nanoseconds(clock_offset_ns_);
      if (engine_.NextDeadline() <= at) engine_.Tick(at);
      const int count = std::min(req.count() == 0 ? 1 : req.count(), kMaxCyclesPerFuzzCall);
      for (int i = 0; i < count; ++i) engine_.RunCycle(at);
      break;
    }
    case Rpc::kImport: {
      v1::ImportRequest req;
      if (!Parse(payload, &req) || !CheckImportRequest(req).ok()) return;
      Check(engine_.Import(req, now));
      break;
    }
    case Rpc::kReportPods: {
      v1::ReportPodsRequest req;
      if (!Parse(payload, &req)) return;
      absl::StatusOr<v1::ReportPodsResponse> resp = engine_.ReportPods(req, now);
      Settle();
      if (resp.ok()) {
        engine_.AddDirectivesFor(req, now, &*resp);
        CheckWireRoundTrip(*resp);
      }
      return;
    }
    case Rpc::kListDirectives: {
      v1::ListDirectivesRequest req;
      if (!Parse(payload, &req) || !CheckListDirectivesRequest(req).ok()) return;
      CheckWireRoundTrip(engine_.ListDirectives(req, now));
      return;
    }
    case Rpc::kCount:
      return;
  }
  Settle();
}

void EngineDriver::Settle() {
  const absl::Time now = now_ + absl::Nanoseconds(clock_offset_ns_);
  if (engine_.NextDeadline() <= now) engine_.Tick(now);
  for (int i = 0; i < kMaxCyclesPerBatch; ++i) {
    if (!engine_.RunCycle(now).more) break;
  }
  for (const engine::Change& change : engine_.TakeChanges(/*keep_snapshots=*/true)) {
    if (change.pod != nullptr) {
      CheckWireRoundTrip(*change.pod);
      continue;
    }
    v1::WatchEvent event;
    event.set_revision(change.revision);
    event.set_type(change.type);
    event.set_kind(change.kind);
    event.set_reason(change.reason);
    event.set_message(change.message);
    if (change.workload != nullptr) *event.mutable_workload() = *change.workload;
    if (change.queue_object != nullptr) *event.mutable_queue_object() = *change.queue_object;
    Publish(event);
  }
  for (v1::PodDirective& directive : engine_.TakeDirectiveUpdates(now)) {
    v1::WatchEvent event;
    event.set_kind(v1::OBJECT_KIND_POD_DIRECTIVE);
    *event.mutable_directive() = std::move(directive);
    Publish(event);
  }
  engine_.ForgetSnapshots();
}

void EngineDriver::Publish(const v1::WatchEvent& event) {
  CheckWireRoundTrip(event);
  for (const WatchFilter& filter : watches_) (void)filter.Matches(event);
}

}  // namespace admitd::fuzz
