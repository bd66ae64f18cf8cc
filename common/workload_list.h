// Every workload of an admitd, page by page (AdmissionService.List), for a client that caches
// them and then watches from the list's revision: the shim's link to its admitd and a MultiKueue
// manager's link to a worker. Pages are read at their own revisions; watching from the first
// page's replays whatever changed after it.
//
//   uint64_t revision = 0;
//   grpc::Status s = ListAllWorkloads(stub, absl::Seconds(10),
//                                     [&](v1::Workload wl) { cache[key(wl)] = std::move(wl); },
//                                     &revision);
//
// Thread safety: a plain function; the stub may be shared.
#ifndef ADMITD_COMMON_WORKLOAD_LIST_H_
#define ADMITD_COMMON_WORKLOAD_LIST_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "admitd/v1/admission_service.grpc.pb.h"

namespace admitd {

struct ListAllOptions {
  absl::Duration call_timeout = absl::Seconds(60);  // per page
  int32_t page_size = 5000;
  // Called with every page call's outcome (a client that tracks reachability).
  std::function<void(const grpc::Status&)> on_call;
  // Checked before each page: true stops the listing (the status is then CANCELLED).
  std::function<bool()> stopped;
};

// Calls `each` with every workload, in pages; sets `*revision` to the first page's revision.
// The first failing page's status, else OK.
grpc::Status ListAllWorkloads(v1::AdmissionService::StubInterface& stub,
                              const std::function<void(v1::Workload)>& each, uint64_t* revision,
                              const ListAllOptions& options = {});

}  // namespace admitd

#endif  // ADMITD_COMMON_WORKLOAD_LIST_H_
