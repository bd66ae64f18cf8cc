// Small pieces every integration's reconcile uses: reading
// fields of a Kubernetes object (JSON) without throwing on a missing or null one, the state of an
// admitd Workload, the deadline and error of a call to admitd, and what the reconcile asks admitd about
// readiness and flavors.
//
// Thread safety: pure functions.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_RECONCILE_UTIL_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_RECONCILE_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/json_fields.h"
#include "common/trace/trace_context.h"
#include "admitd/v1/objects.pb.h"
#include "nlohmann/json.hpp"

namespace admitd::shim::reconcile {

using shim::Str;  // clients/shim/kube/json_fields.h
// obj["metadata"], or an empty object.
nlohmann::json Meta(const nlohmann::json& obj);
// The object exists and is not being deleted (no metadata.deletionTimestamp).
bool Live(const std::optional<nlohmann::json>& obj);

// The Workload holds a quota reservation (QuotaReserved=True with an admission).
bool Reserved(const v1::Workload& workload);
bool Finished(const v1::Workload& workload);
// Reserved and Admitted=True.
bool Admitted(const v1::Workload& workload);

// Element by element (what Kueue's equivalence compares of a pod set, §1.8).
bool SameContainers(const google::protobuf::RepeatedPtrField<v1::Container>& a,
                    const google::protobuf::RepeatedPtrField<v1::Container>& b);
bool SameTolerations(const v1::PodSpec& a, const v1::PodSpec& b);

// A deadline of 15 s for one call to admitd, and the traceparent of the reconcile running on
// this thread (see ReconcileTrace), when it is traced.
void SetDeadline(grpc::ClientContext* ctx);

// While it lives, the calls SetDeadline prepares on this thread carry `span` as their
// traceparent (admitd's server spans become its children).
class ReconcileTrace {
 public:
  explicit ReconcileTrace(const tracing::SpanContext& span);
  ~ReconcileTrace();
  ReconcileTrace(const ReconcileTrace&) = delete;
  ReconcileTrace& operator=(const ReconcileTrace&) = delete;

 private:
  const tracing::SpanContext* previous_;
};
// OK, or the call's code with "<what>: <message>", keeping the retry delay admitd advised with
// a call it refused without running it (google.rpc.RetryInfo: overloaded, shutting down).
absl::Status FromGrpc(const std::string& what, const grpc::Status& status);
// When to reconcile again after `status`: the delay admitd advised (see FromGrpc) and up to half
// as long again at random, so that the keys it refused together do not return together; nullopt
// when it advised none (then the work queue's backoff applies).
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

// waitForPodsReady: tells admitd whether the job's pods are ready (as the integration counts
// them) when that differs from the Workload's PodsReady condition; only while the Workload is
// admitted and not evicted, and only when admitd tracks readiness (the condition is there).
// OK when there is nothing to say.
absl::Status ReportPodsReady(AdmitdApi& admitd, const v1::Workload& workload, bool ready);
// The link's flavors, NOT_FOUND (retry) while one the admission names is not known yet.
absl::StatusOr<std::map<std::string, v1::ResourceFlavor>> AdmittedFlavors(
    const AdmitdApi& admitd, const v1::Workload& workload);

}  // namespace admitd::shim::reconcile

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_RECONCILE_UTIL_H_
