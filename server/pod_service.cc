#include "server/pod_service.h"

#include <set>

#include "absl/time/clock.h"
#include "common/status.h"
#include "server/access_control.h"
#include "server/grpc_status.h"
#include "server/request_checks.h"
#include "server/metrics.h"

namespace admitd {

grpc::ServerUnaryReactor* PodServiceImpl::ReportPods(grpc::CallbackServerContext* rpc,
                                                     const v1::ReportPodsRequest* req,
                                                     v1::ReportPodsResponse* resp) {
  // The report's cluster, in each namespace it names.
  absl::StatusOr<auth::Identity> caller = CheckCall(
      ctx_->access, *rpc, {auth::Verb::kReport, auth::Resource::kPods, "", req->cluster()});
  if (!caller.ok()) return Refuse(rpc, caller.status());
  if (ctx_->access != nullptr && ctx_->access->enforcing()) {
    std::set<std::string> namespaces;
    for (const v1::PodObservation& pod : req->pods()) namespaces.insert(pod.namespace_());
    for (const v1::PodDeletion& pod : req->deleted()) namespaces.insert(pod.namespace_());
    for (const std::string& ns : namespaces) {
      if (absl::Status s = ctx_->access->Authorize(
              *caller, {auth::Verb::kReport, auth::Resource::kPods, ns, req->cluster()});
          !s.ok()) {
        return Refuse(rpc, s);
      }
    }
  }
  return Dispatch(
      ctx_, rpc, {"PodService/ReportPods"}, resp,
      [req](engine::Engine& e, absl::Time now) { return e.ReportPods(*req, now); },
      [req, metrics = ctx_->metrics](engine::Engine& e, v1::ReportPodsResponse* r) {
        // The directives as they stand after the batch's scheduling cycles: a pod group that
        // became complete with this report is usually admitted, and its pods ungated, already.
        e.AddDirectivesFor(*req, absl::Now(), r);
        if (metrics != nullptr && r->errors_size() > 0) {
          metrics->Add("admitd_pods_rejected_total",
                       "Reported pods refused as Kueue's pod webhook would refuse them, or whose "
                       "group is inconsistent.",
                       {{"cluster", req->cluster()}}, r->errors_size());
        }
      });
}

grpc::ServerUnaryReactor* PodServiceImpl::ListDirectives(grpc::CallbackServerContext* rpc,
                                                         const v1::ListDirectivesRequest* req,
                                                         v1::ListDirectivesResponse* resp) {
  if (absl::Status s = CheckListDirectivesRequest(*req); !s.ok()) return Refuse(rpc, s);
  if (absl::StatusOr<auth::Identity> caller = CheckCall(
          ctx_->access, *rpc, {auth::Verb::kList, auth::Resource::kPods, "", req->cluster()});
      !caller.ok()) {
    return Refuse(rpc, caller.status());
  }
  return Dispatch(ctx_, rpc, {"PodService/ListDirectives", IntakeCall::kRead}, resp,
                  [req](engine::Engine& e, absl::Time now) {
                    return absl::StatusOr<v1::ListDirectivesResponse>(e.ListDirectives(*req, now));
                  });
}

}  // namespace admitd
