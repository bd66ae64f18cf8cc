#include "server/queue_service.h"

#include "absl/strings/str_cat.h"
#include "common/manifest/manifest.h"
#include "common/status.h"
#include "server/access_control.h"
#include "server/grpc_status.h"
#include "server/metrics.h"
#include "server/request_checks.h"

namespace admitd {
namespace {

// What the policy and the audit trail say of a queue object: its kind, namespace and name.
struct ObjectRef {
  v1::ObjectKind kind = v1::OBJECT_KIND_UNSPECIFIED;
  const char* kind_name = "";
  std::string namespace_;
  std::string name;
};

ObjectRef RefOf(const v1::QueueObject& o) {
  ObjectRef ref;
  ref.kind = engine::KindOf(o);
  ref.kind_name = engine::KindName(ref.kind);
  ref.namespace_ = engine::Meta(o).namespace_();
  ref.name = engine::Meta(o).name();
  // A namespace is its own namespace to the policy.
  if (ref.kind == v1::OBJECT_KIND_NAMESPACE) ref.namespace_ = ref.name;
  return ref;
}

// The namespace a request about an object of `kind` is in, to the policy.
std::string PolicyNamespace(v1::ObjectKind kind, const std::string& ns, const std::string& name) {
  if (kind == v1::OBJECT_KIND_NAMESPACE) return name;
  return kind == v1::OBJECT_KIND_LOCAL_QUEUE ? ns : "";
}

}  // namespace

grpc::ServerUnaryReactor* QueueServiceImpl::Apply(grpc::CallbackServerContext* rpc,
                                                  const v1::ApplyRequest* req,
                                                  v1::ApplyResponse* resp) {
  if (absl::Status s = CheckApplyRequest(*req); !s.ok()) return Refuse(rpc, s);
  const ObjectRef ref = RefOf(req->object());
  absl::StatusOr<auth::Identity> caller = CheckCall(
      ctx_->access, *rpc, {auth::Verb::kApply, ResourceOf(ref.kind), ref.namespace_, ""});
  if (!caller.ok()) return Refuse(rpc, caller.status());
  return Dispatch(ctx_, rpc, {"QueueService/Apply"}, resp,
                  [req, ref, who = *std::move(caller)](
                      engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::ApplyResponse> {
                    absl::StatusOr<v1::ApplyResponse> out = e.Apply(*req, now);
                    if (out.ok() && !out->unchanged()) {
                      const std::string ns =
                          ref.kind == v1::OBJECT_KIND_LOCAL_QUEUE ? ref.namespace_ : "";
                      e.RecordAudit(AuditEvent(who, "Applied", ref.kind_name, ns, ref.name,
                                               absl::StrCat(out->created() ? "created " : "updated ",
                                                            ref.kind_name, " ", ref.name)),
                                    now);
                    }
                    return out;
                  });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Get(grpc::CallbackServerContext* rpc,
                                                const v1::GetObjectRequest* req,
                                                v1::QueueObject* resp) {
  if (absl::Status s = CheckGetObjectRequest(*req); !s.ok()) return Refuse(rpc, s);
  if (absl::StatusOr<auth::Identity> caller = CheckCall(
          ctx_->access, *rpc,
          {auth::Verb::kGet, ResourceOf(req->kind()),
           PolicyNamespace(req->kind(), req->namespace_(), req->name()), ""});
      !caller.ok()) {
    return Refuse(rpc, caller.status());
  }
  return Dispatch(ctx_, rpc, {"QueueService/Get", IntakeCall::kRead}, resp,
                  [req](engine::Engine& e, absl::Time) { return e.Get(*req); });
}

grpc::ServerUnaryReactor* QueueServiceImpl::List(grpc::CallbackServerContext* rpc,
                                                 const v1::ListObjectsRequest* req,
                                                 v1::ListObjectsResponse* resp) {
  if (absl::Status s = CheckQueueKind(req->kind()); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<auth::Identity> caller =
      CheckCall(ctx_->access, *rpc,
                {auth::Verb::kList, ResourceOf(req->kind()),
                 req->kind() == v1::OBJECT_KIND_LOCAL_QUEUE ? req->namespace_() : "", ""});
  if (!caller.ok()) return Refuse(rpc, caller.status());
  std::shared_ptr<const auth::Scope> scope =
      ctx_->access == nullptr ? nullptr
                              : ctx_->access->ScopeOf(*caller, auth::Verb::kList,
                                                      ResourceOf(req->kind()));
  return Dispatch(ctx_, rpc, {"QueueService/List", IntakeCall::kRead}, resp,
                  [req, scope](engine::Engine& e,
                               absl::Time) -> absl::StatusOr<v1::ListObjectsResponse> {
                    absl::StatusOr<v1::ListObjectsResponse> out = e.List(*req);
                    if (!out.ok() || scope == nullptr || scope->AllowsEverything()) return out;
                    // Only what the caller may read (LocalQueues and Namespaces of its
                    // namespaces).
                    auto* objects = out->mutable_objects();
                    for (int i = objects->size() - 1; i >= 0; --i) {
                      const ObjectRef ref = RefOf(objects->Get(i));
                      if (!scope->Allows(PolicyNamespace(ref.kind, ref.namespace_, ref.name), "")) {
                        objects->DeleteSubrange(i, 1);
                      }
                    }
                    return out;
                  });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Delete(grpc::CallbackServerContext* rpc,
                                                   const v1::DeleteObjectRequest* req,
                                                   v1::DeleteObjectResponse* resp) {
  if (absl::Status s = CheckDeleteObjectRequest(*req); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<auth::Identity> caller = CheckCall(
      ctx_->access, *rpc,
      {auth::Verb::kDelete, ResourceOf(req->kind()),
       PolicyNamespace(req->kind(), req->namespace_(), req->name()), ""});
  if (!caller.ok()) return Refuse(rpc, caller.status());
  return Dispatch(
      ctx_, rpc, {"QueueService/Delete"}, resp,
      [req, who = *std::move(caller)](
          engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::DeleteObjectResponse> {
        ADMITD_RETURN_IF_ERROR(e.Delete(*req, now));
        const char* kind = engine::KindName(req->kind());
        e.RecordAudit(AuditEvent(who, "Deleted", kind,
                                 req->kind() == v1::OBJECT_KIND_LOCAL_QUEUE ? req->namespace_() : "",
                                 req->name(), absl::StrCat("deleted ", kind, " ", req->name())),
                      now);
        return v1::DeleteObjectResponse();
      });
}

grpc::ServerUnaryReactor* QueueServiceImpl::RunSchedulingCycles(
    grpc::CallbackServerContext* rpc, const v1::RunSchedulingCyclesRequest* req,
    v1::RunSchedulingCyclesResponse* resp) {
  if (absl::Status s = CheckRunSchedulingCyclesRequest(*req); !s.ok()) return Refuse(rpc, s);
  if (req->advance_clock_seconds() > 0 && !ctx_->sequencer->manual_clock()) {
    return Refuse(rpc, ErrorWithReason(absl::StatusCode::kFailedPrecondition, "NO_MANUAL_CLOCK",
                                       "advance_clock_seconds needs a server started with "
                                       "--manual-clock"));
  }
  absl::StatusOr<auth::Identity> caller =
      CheckCall(ctx_->access, *rpc, {auth::Verb::kRun, auth::Resource::kScheduler, "", ""});
  if (!caller.ok()) return Refuse(rpc, caller.status());
  const int count = req->count() == 0 ? 1 : req->count();
  Sequencer* sequencer = ctx_->sequencer;
  const absl::Duration advance = absl::Seconds(req->advance_clock_seconds());
  return Dispatch(
      ctx_, rpc, {"QueueService/RunSchedulingCycles"}, resp,
      [count, sequencer, advance, metrics = ctx_->metrics, who = *std::move(caller)](
          engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::RunSchedulingCyclesResponse> {
        v1::RunSchedulingCyclesResponse out;
        if (advance > absl::ZeroDuration()) {
          ADMITD_RETURN_IF_ERROR(sequencer->AdvanceClock(advance));
          now += advance;
          e.RecordAudit(AuditEvent(who, "ClockAdvanced", "Scheduler", "", "",
                                   absl::StrCat("advanced the clock by ",
                                                absl::FormatDuration(advance))),
                        now);
        }
        // Timed work that fell due runs first, as the sequencer does in automatic mode.
        if (e.NextDeadline() <= now) e.Tick(now);
        for (int i = 0; i < count; ++i) {
          const absl::Time started = absl::Now();
          engine::CycleStats stats = e.RunCycle(now);
          // Counted as the sequencer counts the cycles it runs by itself.
          if (metrics != nullptr) metrics->CountCycle(stats, absl::Now() - started);
          out.set_cycles_run(out.cycles_run() + 1);
          out.set_admitted(out.admitted() + stats.admitted);
          out.set_attempted(out.attempted() + stats.heads);
        }
        return out;
      },
      [](engine::Engine& e, v1::RunSchedulingCyclesResponse* out) {
        out->set_revision(e.revision());
      });
}

grpc::ServerUnaryReactor* QueueServiceImpl::Import(grpc::CallbackServerContext* rpc,
                                                   const v1::ImportRequest* req,
                                                   v1::ImportResponse* resp) {
  if (absl::Status s = CheckImportRequest(*req); !s.ok()) return Refuse(rpc, s);
  absl::StatusOr<auth::Identity> caller = CheckCall(
      ctx_->access, *rpc, {auth::Verb::kImport, auth::Resource::kWorkloads, "", req->cluster()});
  if (!caller.ok()) return Refuse(rpc, caller.status());
  if (ctx_->access != nullptr) {
    for (const v1::Workload& wl : req->workloads()) {
      if (absl::Status s = ctx_->access->Authorize(
              *caller, {auth::Verb::kImport, auth::Resource::kWorkloads,
                        wl.metadata().namespace_(), ClusterOf(wl)});
          !s.ok()) {
        return Refuse(rpc, s);
      }
    }
  }
  return Dispatch(ctx_, rpc, {"QueueService/Import"}, resp,
                  [req, who = *std::move(caller)](
                      engine::Engine& e, absl::Time now) -> absl::StatusOr<v1::ImportResponse> {
                    absl::StatusOr<v1::ImportResponse> out = e.Import(*req, now);
                    if (out.ok()) {
                      e.RecordAudit(
                          AuditEvent(who, "Imported", "Workload", "", "",
                                     absl::StrCat("imported ", req->workloads_size(),
                                                  " admitted workloads",
                                                  req->cluster().empty()
                                                      ? ""
                                                      : absl::StrCat(" of cluster ",
                                                                     req->cluster()))),
                          now);
                    }
                    return out;
                  });
}

absl::Status QueueServiceImpl::Authenticated(grpc::CallbackServerContext& rpc) const {
  if (ctx_->access == nullptr) return absl::OkStatus();
  absl::StatusOr<auth::Identity> caller = ctx_->access->Identify(rpc);
  if (!caller.ok()) return caller.status();
  if (ctx_->access->enforcing() && caller->source == auth::Identity::Source::kAnonymous) {
    return absl::UnauthenticatedError(
        "the call carries no credentials: present a client certificate or a bearer token");
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* QueueServiceImpl::Ping(grpc::CallbackServerContext* rpc,
                                                 const v1::PingRequest*, v1::PingResponse*) {
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  // Any authenticated caller may ping.
  reactor->Finish(ToGrpcStatus(Authenticated(*rpc)));
  return reactor;
}

grpc::ServerUnaryReactor* QueueServiceImpl::ParseManifests(grpc::CallbackServerContext* rpc,
                                                           const v1::ParseManifestsRequest* req,
                                                           v1::ParseManifestsResponse* resp) {
  grpc::ServerUnaryReactor* reactor = rpc->DefaultReactor();
  // Any authenticated caller: it reads no state and changes none.
  if (absl::Status s = Authenticated(*rpc); !s.ok()) {
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  constexpr size_t kMaxText = 4 << 20;
  if (req->text().size() > kMaxText) {
    reactor->Finish(ToGrpcStatus(
        InvalidArgument({{"text", absl::StrCat("must be at most ", kMaxText, " bytes")}})));
    return reactor;
  }
  absl::StatusOr<std::vector<manifest::Manifest>> parsed = manifest::ParseManifests(
      req->text(), req->source().empty() ? "manifest" : req->source());
  if (!parsed.ok()) {
    reactor->Finish(ToGrpcStatus(parsed.status()));
    return reactor;
  }
  if (req->apply_order()) manifest::SortForApply(&*parsed);
  for (manifest::Manifest& m : *parsed) {
    v1::ParsedManifest* out = resp->add_manifests();
    out->set_source(m.source);
    out->set_kind(m.kind);
    if (m.is_workload) {
      *out->mutable_workload() = std::move(m.workload);
    } else {
      *out->mutable_queue_object() = std::move(m.object);
    }
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace admitd
