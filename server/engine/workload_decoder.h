// Decoding stored workloads for Engine::FinishRestore: DecodeStoredWorkload does the work (pure,
// callable from any thread), and a WorkloadDecoder hands FinishRestore the results in order, so a
// caller may decode ahead of the engine on a thread of its own (the engine has none; see
// server/decode_ahead.h). Without one, FinishRestore decodes each workload itself when it gets
// there.
#ifndef ADMITD_SERVER_ENGINE_WORKLOAD_DECODER_H_
#define ADMITD_SERVER_ENGINE_WORKLOAD_DECODER_H_

#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "admitd/v1/objects.pb.h"
#include "server/engine/flavor_assigner.h"

namespace admitd::engine {

// The per-pod requests of each of `workload`'s pod sets, pointing into it (PodSetRequest::pod).
std::vector<PodSetRequest> PodSetRequestsOf(const v1::Workload& workload);
// The same from per-pod requests already computed (as PodRequestsExact gives them: validation
// computes them), saving the parse; a pod set past the end of `per_pod` is parsed.
std::vector<PodSetRequest> PodSetRequestsOf(const v1::Workload& workload,
                                            const std::vector<ResourceAmounts>& per_pod);

// A stored workload decoded, with what the engine parses off it at once.
struct DecodedWorkload {
  std::shared_ptr<v1::Workload> workload;  // null: the encoding does not parse
  std::vector<PodSetRequest> pod_sets;     // PodSetRequestsOf(*workload)
};

// Decodes `encoded`, into `reuse` when given (a message already used: its allocations are kept).
DecodedWorkload DecodeStoredWorkload(absl::string_view encoded,
                                     std::shared_ptr<v1::Workload> reuse = nullptr);

// Hands FinishRestore the stored workloads decoded, in the order it asks for them.
class WorkloadDecoder {
 public:
  virtual ~WorkloadDecoder() = default;
  // Called once, first: the encodings Next is to decode, in order. They stay valid and unchanged
  // while FinishRestore runs (it writes no workload it has not yet taken from Next) and after it
  // until the engine is next used, so a decoder reading them on another thread stops before that
  // (FinishRestore may return early, with DATA_LOSS).
  virtual void Start(std::vector<absl::string_view> encodings) = 0;
  // DecodeStoredWorkload of the next encoding of Start's list; called at most once per encoding.
  virtual DecodedWorkload Next() = 0;
  // A decoded message FinishRestore no longer needs, for a later decode to reuse.
  virtual void Recycle(std::shared_ptr<v1::Workload> spare) = 0;
};

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_WORKLOAD_DECODER_H_
