// Recovery: the store's objects parsed and loaded into an engine (see recovery.h).
#include "server/recovery.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/decode_ahead.h"

namespace admitd {

absl::Status RestoreFromStore(const store::Store& store, engine::Engine* engine,
                              uint64_t* objects, const RestoreProgress* progress) {
  uint64_t workloads = 0;
  ADMITD_RETURN_IF_ERROR(store.ForEachObject(
      [&](v1::ObjectKind kind, absl::string_view key, absl::string_view value) -> absl::Status {
        ++*objects;
        if (kind == v1::OBJECT_KIND_WORKLOAD) {
          // Kept encoded: decoded for FinishRestore (DATA_LOSS for one that does not parse),
          // which keeps only the encoding of those nothing reads.
          ADMITD_RETURN_IF_ERROR(engine->RestoreEncoded(key, value));
          ++workloads;
          if (progress != nullptr && progress->every != 0 && workloads % progress->every == 0 &&
              progress->on_workloads) {
            progress->on_workloads(workloads);
          }
          return absl::OkStatus();
        }
        if (kind == v1::OBJECT_KIND_POD) {
          v1::PodObservation pod;
          if (!pod.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
            return absl::DataLossError(absl::StrCat("stored pod ", key, " cannot be parsed"));
          }
          return engine->Restore(pod);
        }
        v1::QueueObject object;
        if (!object.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          return absl::DataLossError(absl::StrCat("stored object ", key, " cannot be parsed"));
        }
        return engine->Restore(object);
      }));
  if (progress != nullptr && progress->on_loaded) progress->on_loaded(*objects);
  DecodeAhead decoder;  // outlives FinishRestore, and stops its thread when it failed
  return engine->FinishRestore(store.revision(), &decoder);
}

}  // namespace admitd
