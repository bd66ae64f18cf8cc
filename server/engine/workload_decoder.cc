#include "server/engine/workload_decoder.h"

#include <utility>

#include "server/engine/resources.h"

namespace admitd::engine {

std::vector<PodSetRequest> PodSetRequestsOf(const v1::Workload& workload) {
  return PodSetRequestsOf(workload, {});  // every pod set's requests parsed here
}

std::vector<PodSetRequest> PodSetRequestsOf(const v1::Workload& workload,
                                            const std::vector<ResourceAmounts>& per_pod) {
  std::vector<PodSetRequest> out;
  out.reserve(workload.spec().pod_sets_size());
  for (int i = 0; i < workload.spec().pod_sets_size(); ++i) {
    const v1::PodSet& ps = workload.spec().pod_sets(i);
    PodSetRequest req;
    req.name = ps.name();
    req.count = ps.count();
    if (static_cast<size_t>(i) < per_pod.size()) {
      req.per_pod = NarrowRequests(per_pod[static_cast<size_t>(i)]);
    } else {
      req.per_pod = PodRequests(ps.template_().spec());
    }
    req.pod = &ps.template_().spec();
    out.push_back(std::move(req));
  }
  return out;
}

DecodedWorkload DecodeStoredWorkload(absl::string_view encoded,
                                     std::shared_ptr<v1::Workload> reuse) {
  DecodedWorkload out;
  out.workload = reuse != nullptr ? std::move(reuse) : std::make_shared<v1::Workload>();
  if (!out.workload->ParseFromArray(encoded.data(), static_cast<int>(encoded.size()))) {
    out.workload.reset();
    return out;
  }
  out.pod_sets = PodSetRequestsOf(*out.workload);
  return out;
}

}  // namespace admitd::engine
