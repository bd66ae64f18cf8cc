#include "common/workload_list.h"

#include <string>
#include <utility>

#include "absl/time/clock.h"

namespace admitd {

grpc::Status ListAllWorkloads(v1::AdmissionService::StubInterface& stub,
                              const std::function<void(v1::Workload)>& each, uint64_t* revision,
                              const ListAllOptions& options) {
  std::string token;
  bool first = true;
  do {
    if (options.stopped && options.stopped()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "stopped");
    }
    v1::ListWorkloadsRequest req;
    req.set_page_size(options.page_size);
    req.set_page_token(token);
    v1::ListWorkloadsResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + options.call_timeout));
    grpc::Status s = stub.List(&ctx, req, &resp);
    if (options.on_call) options.on_call(s);
    if (!s.ok()) return s;
    if (first) *revision = resp.revision();
    first = false;
    for (v1::Workload& wl : *resp.mutable_workloads()) each(std::move(wl));
    token = resp.next_page_token();
  } while (!token.empty());
  return grpc::Status::OK;
}

}  // namespace admitd
